/* The native chunk reader: one chunk of trace events (a JSON array, as cutting.py cuts it) parsed
 * and collected in C, in two passes. The first parses the whole chunk into C structs and touches no
 * Python state: anything it does not take exactly as msgspec would (an escape in a string it keeps,
 * a type the typed records reject, an odd phase, a number out of int64, invalid UTF-8, deep
 * nesting, bad JSON) makes it give the chunk back, and the Python reader reads it as before. The
 * second mirrors Collector.on_records line for line, calling back into the collector where the
 * Python loop calls a method. Why, and what it must agree with: docs/architecture.md ("The native
 * chunk reader"). */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

typedef struct {
    const char *p;
    Py_ssize_t n;
} span;

enum { V_UNSEEN = -1, V_ABSENT = 0, V_NULL, V_INT, V_STR };

typedef struct {
    int kind;
    int64_t i;
    span s;
} idval; /* a pid or tid: None (absent or null), an int or a string */

typedef struct {
    int x; /* 1: a complete event ("ph": "X"); 0: another phase, nothing of it read */
    int cat_kind; /* V_ABSENT, V_NULL or V_STR */
    span cat, name;
    idval pid, tid;
    double ts, dur, bytes, bw;
    int64_t stream, corr;
} ev;

typedef struct {
    const char *p, *end;
    int depth;
} parser;

/* The scanners every member goes through, inlined where they are called: 13 % off the parse
 * (gcc -O3 left them calls). */
#if defined(__GNUC__)
#define HOT static inline __attribute__((always_inline))
#else
#define HOT static inline
#endif

#define MAX_DEPTH 64
#define FAIL (-1)

static const char PHASES[] = "BEIiCbneSTpFstfPNODMVvRc()"; /* records.py's _PHASES: other than X */

static inline void ws(parser *ps) {
    const char *p = ps->p, *e = ps->end;
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    ps->p = p;
}

static inline int hexval(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at ps->p (its opening quote): its bytes between the quotes in *out; *escaped: 1 when
 * it holds an escape, 2 when a byte past ASCII, 3 both. FAIL on a control character, a bad escape
 * or no closing quote. */
HOT int scan_string(parser *ps, span *out, int *escaped) {
    const unsigned char *p = (const unsigned char *)ps->p + 1, *e = (const unsigned char *)ps->end;
    const unsigned char *start = p;
    int esc = 0, high = 0;
    for (;;) {
#ifdef __SSE2__
        /* 16 bytes at a time to the next quote, backslash or control character */
        const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), top3 = _mm_set1_epi8((char)0xE0);
        while (e - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmpeq_epi8(_mm_and_si128(v, top3), _mm_setzero_si128()));
            int mask = _mm_movemask_epi8(hit), highs = _mm_movemask_epi8(v);
            if (mask) {
                int at = __builtin_ctz((unsigned)mask);
                high |= highs & ((1 << at) - 1);
                p += at;
                break;
            }
            high |= highs;
            p += 16;
        }
#endif
        while (p < e && *p != '"' && *p != '\\' && *p >= 0x20) high |= *p++ & 0x80;
        if (p >= e) return FAIL;
        if (*p == '"') break;
        if (*p < 0x20) return FAIL;
        esc = 1; /* a backslash */
        if (p + 1 >= e) return FAIL;
        switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u':
                if (p + 5 >= e || !hexval(p[2]) || !hexval(p[3]) || !hexval(p[4]) || !hexval(p[5])) return FAIL;
                p += 6;
                break;
            default:
                return FAIL;
        }
    }
    out->p = (const char *)start;
    out->n = (const char *)p - (const char *)start;
    *escaped = esc | (high ? 2 : 0);
    ps->p = (const char *)p + 1;
    return 0;
}

/* Strict UTF-8 (no overlong forms, no surrogates, at most U+10FFFF): what Python's decoder takes. */
static int utf8_ok(span s) {
    const unsigned char *p = (const unsigned char *)s.p, *e = p + s.n;
    while (p < e) {
        unsigned char c = *p;
        if (c < 0x80) { p++; continue; }
        if (c >= 0xC2 && c <= 0xDF) {
            if (e - p < 2 || (p[1] & 0xC0) != 0x80) return 0;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (e - p < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
            if (c == 0xE0 && p[1] < 0xA0) return 0;
            if (c == 0xED && p[1] > 0x9F) return 0;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (e - p < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
            if (c == 0xF0 && p[1] < 0x90) return 0;
            if (c == 0xF4 && p[1] > 0x8F) return 0;
            p += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* A string kept as it is written: no escape, valid UTF-8. */
HOT int kept_string(parser *ps, span *out) {
    int flags;
    if (*ps->p != '"' || scan_string(ps, out, &flags) || (flags & 1)) return FAIL;
    return (flags & 2) && !utf8_ok(*out) ? FAIL : 0;
}

/* A JSON number at ps->p (grammar checked): its token in *tok, *integer when it has no fraction or
 * exponent. */
HOT int scan_number(parser *ps, span *tok, int *integer) {
    const char *p = ps->p, *e = ps->end, *start = p;
    int in = 1;
    if (p < e && *p == '-') p++;
    if (p >= e) return FAIL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9') p++;
    } else {
        return FAIL;
    }
    if (p < e && *p == '.') {
        in = 0;
        p++;
        if (p >= e || *p < '0' || *p > '9') return FAIL;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        in = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') return FAIL;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    tok->p = start;
    tok->n = p - start;
    *integer = in;
    ps->p = p;
    return 0;
}

/* An integer token as int64; FAIL past its range. */
static int token_int(span tok, int64_t *out) {
    const char *p = tok.p, *e = tok.p + tok.n;
    int neg = 0;
    uint64_t v = 0;
    if (*p == '-') { neg = 1; p++; }
    for (; p < e; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return FAIL;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return FAIL;
        *out = (v == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return FAIL;
        *out = (int64_t)v;
    }
    return 0;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number token as the nearest double, as msgspec reads it into a float field: an integer token
 * through int64 (so "-0" is 0.0), else correctly rounded: the quotient of its digits by a power of
 * ten where both are exact doubles (digits at most 2**53, the power at most 10**22: one correctly
 * rounded division), glibc's strtod otherwise. FAIL when it is not finite. */
static int token_double(span tok, int integer, double *out) {
    if (integer) {
        int64_t i;
        if (token_int(tok, &i)) return FAIL;
        *out = (double)i;
        return 0;
    }
    const char *p = tok.p, *e = tok.p + tok.n;
    int neg = 0, digits = 0, frac = 0, plain = 1;
    uint64_t m = 0;
    if (*p == '-') { neg = 1; p++; }
    for (; p < e; p++) {
        if (*p == '.') { frac = 1; continue; }
        if (*p == 'e' || *p == 'E') { plain = 0; break; }
        if (m || *p != '0') digits++;
        if (digits > 19) { plain = 0; break; } /* past what a uint64 holds for sure */
        m = m * 10 + (uint64_t)(*p - '0');
        if (frac) frac++;
    }
    if (plain && m <= (1ULL << 53)) {
        int k = frac ? frac - 1 : 0;
        if (k <= 22) {
            double v = (double)m / POW10[k];
            *out = neg ? -v : v;
            return 0;
        }
    }
    char buf[64];
    if (tok.n >= (Py_ssize_t)sizeof buf) return FAIL;
    memcpy(buf, tok.p, (size_t)tok.n);
    buf[tok.n] = 0;
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + tok.n || !isfinite(v)) return FAIL;
    *out = v;
    return 0;
}

static int skip_value(parser *ps);

static int skip_container(parser *ps, char close) {
    if (++ps->depth > MAX_DEPTH) return FAIL;
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            span k;
            int esc;
            if (ps->p >= ps->end || *ps->p != '"' || scan_string(ps, &k, &esc)) return FAIL;
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return FAIL;
            ps->p++;
            ws(ps);
        }
        if (skip_value(ps)) return FAIL;
        ws(ps);
        if (ps->p >= ps->end) return FAIL;
        if (*ps->p == ',') {
            ps->p++;
            ws(ps);
            continue;
        }
        if (*ps->p != close) return FAIL;
        ps->p++;
        ps->depth--;
        return 0;
    }
}

static int literal(parser *ps, const char *word, Py_ssize_t n) {
    if (ps->end - ps->p < n || memcmp(ps->p, word, (size_t)n)) return FAIL;
    ps->p += n;
    return 0;
}

static int skip_value(parser *ps) {
    if (ps->p >= ps->end) return FAIL;
    span s;
    int flag;
    switch (*ps->p) {
        case '"': return scan_string(ps, &s, &flag);
        case '{': return skip_container(ps, '}');
        case '[': return skip_container(ps, ']');
        case 't': return literal(ps, "true", 4);
        case 'f': return literal(ps, "false", 5);
        case 'n': return literal(ps, "null", 4);
        default: return scan_number(ps, &s, &flag);
    }
}

static int int_field(parser *ps, int64_t *out) {
    span tok;
    int integer;
    if (ps->p >= ps->end || scan_number(ps, &tok, &integer) || !integer) return FAIL;
    return token_int(tok, out);
}

static int float_field(parser *ps, double *out) {
    span tok;
    int integer;
    if (ps->p >= ps->end || scan_number(ps, &tok, &integer)) return FAIL;
    return token_double(tok, integer, out);
}

static int id_field(parser *ps, idval *out) {
    if (ps->p >= ps->end) return FAIL;
    if (*ps->p == '"') {
        out->kind = V_STR;
        return kept_string(ps, &out->s);
    }
    if (*ps->p == 'n') {
        out->kind = V_NULL;
        return literal(ps, "null", 4);
    }
    out->kind = V_INT;
    return int_field(ps, &out->i);
}

#define KEY_IS(k, lit) ((k).n == (Py_ssize_t)(sizeof(lit) - 1) && !memcmp((k).p, lit, sizeof(lit) - 1))

/* An object's members one by one: the key (no escape) in *key, ps->p at its value. Returns 1 for a
 * member, 0 at the end (past the '}'), FAIL. *first: set before the first call. */
HOT int next_member(parser *ps, span *key, int *first) {
    ws(ps);
    if (ps->p >= ps->end) return FAIL;
    if (*first) {
        *first = 0;
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
    } else {
        if (*ps->p == '}') {
            ps->p++;
            return 0;
        }
        if (*ps->p != ',') return FAIL;
        ps->p++;
        ws(ps);
    }
    int esc;
    if (ps->p >= ps->end || *ps->p != '"' || scan_string(ps, key, &esc) || (esc & 1)) return FAIL;
    ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return FAIL;
    ps->p++;
    ws(ps);
    return 1;
}

static int parse_args(parser *ps, ev *v) {
    if (ps->p >= ps->end || *ps->p != '{') return FAIL;
    if (++ps->depth > MAX_DEPTH) return FAIL;
    ps->p++;
    span k;
    int first = 1, r, seen = 0;
    while ((r = next_member(ps, &k, &first)) == 1) {
        int bit = 0;
        if (KEY_IS(k, "stream")) {
            bit = 1;
            if (int_field(ps, &v->stream)) return FAIL;
        } else if (KEY_IS(k, "correlation")) {
            bit = 2;
            if (int_field(ps, &v->corr)) return FAIL;
        } else if (KEY_IS(k, "bytes")) {
            bit = 4;
            if (float_field(ps, &v->bytes)) return FAIL;
        } else if (KEY_IS(k, "memory bandwidth (GB/s)")) {
            bit = 8;
            if (float_field(ps, &v->bw)) return FAIL;
        } else if (skip_value(ps)) {
            return FAIL;
        }
        if (seen & bit) return FAIL; /* a repeated key: left to msgspec */
        seen |= bit;
    }
    ps->depth--;
    return r;
}

/* One event (an object) into *v. */
static int parse_event(parser *ps, ev *v) {
    if (ps->p >= ps->end || *ps->p != '{') return FAIL;
    if (++ps->depth > MAX_DEPTH) return FAIL;
    ps->p++;
    v->cat_kind = V_ABSENT;
    v->name.p = "";
    v->name.n = 0;
    v->pid.kind = v->tid.kind = V_NULL; /* absent: None, as null */
    v->ts = v->dur = v->bytes = v->bw = NAN;
    v->stream = v->corr = -1;
    span k, ph = {NULL, 0};
    int first = 1, r, seen = 0;
    while ((r = next_member(ps, &k, &first)) == 1) {
        int bit = 0;
        if (KEY_IS(k, "ph")) {
            bit = 1;
            if (kept_string(ps, &ph)) return FAIL;
        } else if (KEY_IS(k, "cat")) {
            bit = 2;
            if (ps->p < ps->end && *ps->p == 'n') {
                v->cat_kind = V_NULL;
                if (literal(ps, "null", 4)) return FAIL;
            } else {
                v->cat_kind = V_STR;
                if (kept_string(ps, &v->cat)) return FAIL;
            }
        } else if (KEY_IS(k, "name")) {
            bit = 4;
            if (kept_string(ps, &v->name)) return FAIL;
        } else if (KEY_IS(k, "pid")) {
            bit = 8;
            if (id_field(ps, &v->pid)) return FAIL;
        } else if (KEY_IS(k, "tid")) {
            bit = 16;
            if (id_field(ps, &v->tid)) return FAIL;
        } else if (KEY_IS(k, "ts")) {
            bit = 32;
            if (float_field(ps, &v->ts)) return FAIL;
        } else if (KEY_IS(k, "dur")) {
            bit = 64;
            if (float_field(ps, &v->dur)) return FAIL;
        } else if (KEY_IS(k, "args")) {
            bit = 128;
            if (parse_args(ps, v)) return FAIL;
        } else if (skip_value(ps)) {
            return FAIL;
        }
        if (seen & bit) return FAIL;
        seen |= bit;
    }
    if (r) return FAIL;
    ps->depth--;
    if (ph.n != 1) return FAIL; /* no phase, or not one of the known ones */
    if (ph.p[0] == 'X') {
        v->x = 1;
    } else if (strchr(PHASES, ph.p[0]) != NULL && ph.p[0] != 0) {
        v->x = 0;
    } else {
        return FAIL;
    }
    return 0;
}

/* The chunk's events into a growing array (*evs, *count). 0, FAIL, or -2 with a Python error. */
static int parse_chunk(const char *buf, Py_ssize_t n, ev **evs, Py_ssize_t *count, Py_ssize_t *cap) {
    parser ps = {buf, buf + n, 0};
    ws(&ps);
    if (ps.p >= ps.end || *ps.p != '[') return FAIL;
    ps.p++;
    ws(&ps);
    if (ps.p < ps.end && *ps.p == ']') {
        ps.p++;
    } else {
        for (;;) {
            if (*count == *cap) {
                Py_ssize_t grow = *cap ? *cap * 2 : 4096;
                ev *more = PyMem_Realloc(*evs, (size_t)grow * sizeof(ev));
                if (more == NULL) {
                    PyErr_NoMemory();
                    return -2;
                }
                *evs = more;
                *cap = grow;
            }
            if (parse_event(&ps, &(*evs)[*count])) return FAIL;
            (*count)++;
            ws(&ps);
            if (ps.p >= ps.end) return FAIL;
            if (*ps.p == ',') {
                ps.p++;
                ws(&ps);
                continue;
            }
            if (*ps.p != ']') return FAIL;
            ps.p++;
            break;
        }
    }
    ws(&ps);
    return ps.p == ps.end ? 0 : FAIL;
}

/* ---- the second pass: Collector.on_records in C ---- */

typedef struct {
    span key;
    Py_hash_t h;
    PyObject *str;  /* the string, made once per chunk */
    long code;      /* a category's code (CAT_*), -1 until looked up */
    int id;         /* a name's id in the collector's names, -1 until found */
} entry;

typedef struct {
    entry *slots;
    Py_ssize_t mask, used;
} strcache;

/* A hash of the length and of up to 24 bytes (the first, middle and last 8): names are long (kernel
 * signatures) and an equal hash is checked with memcmp anyway. */
static Py_hash_t span_hash(span s) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)s.n, w;
    if (s.n < 8) {
        for (Py_ssize_t k = 0; k < s.n; k++) h = (h ^ (unsigned char)s.p[k]) * 1099511628211ULL;
    } else {
        const Py_ssize_t at[3] = {0, (s.n - 8) / 2, s.n - 8};
        for (int k = 0; k < 3; k++) {
            memcpy(&w, s.p + at[k], 8);
            h = (h ^ w) * 1099511628211ULL;
            h ^= h >> 29;
        }
    }
    return (Py_hash_t)(h >> 1);
}

static void cache_free(strcache *c) {
    if (c->slots == NULL) return;
    for (Py_ssize_t k = 0; k <= c->mask; k++) Py_XDECREF(c->slots[k].str);
    PyMem_Free(c->slots);
    c->slots = NULL;
}

static int cache_grow(strcache *c) {
    Py_ssize_t size = c->slots ? (c->mask + 1) * 2 : 1024;
    entry *slots = PyMem_Calloc((size_t)size, sizeof(entry));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (c->slots) {
        for (Py_ssize_t k = 0; k <= c->mask; k++) {
            entry *old = &c->slots[k];
            if (old->str == NULL) continue;
            Py_ssize_t j = old->h & (size - 1);
            while (slots[j].str != NULL) j = (j + 1) & (size - 1);
            slots[j] = *old;
        }
        PyMem_Free(c->slots);
    }
    c->slots = slots;
    c->mask = size - 1;
    return 0;
}

/* The cache's entry for the bytes ``s`` (valid UTF-8, checked in the first pass), made on first use.
 * It may grow the cache: an entry got before is then gone (take what it holds first). */
static entry *cache_get(strcache *c, span s) {
    if (c->slots == NULL || c->used * 2 >= c->mask) {
        if (cache_grow(c)) return NULL;
    }
    Py_hash_t h = span_hash(s);
    Py_ssize_t j = h & c->mask;
    for (;;) {
        entry *en = &c->slots[j];
        if (en->str == NULL) {
            en->str = PyUnicode_DecodeUTF8(s.p, s.n, "strict");
            if (en->str == NULL) return NULL;
            en->key = s;
            en->h = h;
            en->code = -1;
            en->id = -1;
            c->used++;
            return en;
        }
        if (en->h == h && en->key.n == s.n && !memcmp(en->key.p, s.p, (size_t)s.n)) return en;
        j = (j + 1) & c->mask;
    }
}

/* The category codes collect.py passes (its _NATIVE_CODES): the GPU kind in the low two bits. */
#define CAT_GPU_KIND 3
#define CAT_TABLE 4
#define CAT_OLD_OPERATOR 8
#define CAT_TRACE 16
#define CAT_ANNOTATION 32

static int id_equal(const idval *a, const idval *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == V_INT) return a->i == b->i;
    if (a->kind == V_STR) return a->s.n == b->s.n && !memcmp(a->s.p, b->s.p, (size_t)a->s.n);
    return a->kind == V_NULL; /* None == None; V_UNSEEN equals nothing */
}

static PyObject *id_object(const idval *v) {
    if (v->kind == V_INT) return PyLong_FromLongLong(v->i);
    if (v->kind == V_STR) return PyUnicode_DecodeUTF8(v->s.p, v->s.n, "strict");
    Py_RETURN_NONE;
}

/* The columns are bytearrays of the array typecodes' native bytes ('d' double, 'q' int64, 'i' int,
 * 'b' signed char): Collector._flush extends its arrays with them as they are. */
static int put(PyObject *column, const void *value, size_t n) {
    Py_ssize_t len = PyByteArray_GET_SIZE(column);
    if (PyByteArray_Resize(column, len + (Py_ssize_t)n)) return -1;
    memcpy(PyByteArray_AS_STRING(column) + len, value, n);
    return 0;
}

static int put_double(PyObject *column, double v) { return put(column, &v, sizeof v); }
static int put_int64(PyObject *column, int64_t v) { return put(column, &v, sizeof v); }
static int put_int(PyObject *column, int v) { return put(column, &v, sizeof v); }

/* A Python int as a C int (a name or thread id), -1 with OverflowError past its range, as struct.pack('i') raises. */
static int as_int(PyObject *o) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "an id out of the 'i' array's range");
        return -1;
    }
    return (int)v;
}

typedef struct {
    PyObject *collector, *ids, *threads, *codes, *annotation, *annotation_match, *by_thread;
    PyObject *gpu[6], *mem[3], *cpu[5];
    int other; /* collector._shared.get(None), or -1 */
} state;

static int refresh_other(state *st) {
    PyObject *shared = PyObject_GetAttrString(st->collector, "_shared");
    if (shared == NULL) return -1;
    if (!PyDict_Check(shared)) {
        Py_DECREF(shared);
        PyErr_SetString(PyExc_TypeError, "Collector._shared is not a dict");
        return -1;
    }
    PyObject *o = PyDict_GetItemWithError(shared, Py_None);
    st->other = -1;
    if (o != NULL) st->other = as_int(o);
    Py_DECREF(shared);
    return PyErr_Occurred() ? -1 : 0;
}

/* ids_get(name) for the GPU path (``gpu`` 1: on a miss, self._id(name, True)), or ids_get(name,
 * other) for the CPU path (on a miss with no ``other``, self._id(name, False) and ``other`` anew).
 * -1 with a Python error. */
static int name_id(state *st, entry *en, int gpu) {
    if (en->id >= 0) return en->id;
    PyObject *i = PyDict_GetItemWithError(st->ids, en->str);
    if (i != NULL) return en->id = as_int(i); /* a name's id never changes once given */
    if (PyErr_Occurred()) return -1;
    if (!gpu && st->other >= 0) return st->other;
    i = PyObject_CallMethod(st->collector, "_id", "OO", en->str, gpu ? Py_True : Py_False);
    if (i == NULL) return -1;
    int v = as_int(i);
    Py_DECREF(i);
    if (v >= 0 && !gpu && refresh_other(st)) return -1;
    return v;
}

static long cat_code(state *st, entry *en) {
    if (en->code < 0) {
        PyObject *c = PyDict_GetItemWithError(st->codes, en->str);
        if (c == NULL) {
            if (PyErr_Occurred()) return -1;
            en->code = CAT_GPU_KIND; /* GPU_OTHER, no table */
        } else {
            en->code = PyLong_AsLong(c);
            if (en->code < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a category code below 0");
                return -1;
            }
        }
    }
    return en->code;
}

static int step_call(state *st, PyObject *name, int annotation, double ts, double dur) {
    PyObject *r = PyObject_CallMethod(st->collector, "_profiler_step", "OOdd", name,
                                      annotation ? Py_True : Py_False, ts, dur);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* The second pass over the parsed events (see the module comment). 0, or -1 with a Python error. */
static int collect_events(state *st, ev *evs, Py_ssize_t count) {
    strcache cache = {NULL, 0, 0};
    PyObject *ops = PyDict_New();
    PyObject *op_lists[3] = {NULL, NULL, NULL}; /* borrowed from ops' values */
    PyObject *op_cat = NULL;
    int last_thread = -1;
    idval last_pid = {V_UNSEEN, 0, {NULL, 0}}, last_tid = last_pid, op_pid = last_pid, op_tid = last_pid;
    int ok = -1;
    /* The annotation's code, looked up here: a cache_get in the loop could grow the cache and leave
     * the entries in hand (name_en) pointing into the freed slots. */
    long annotation_code = CAT_GPU_KIND;
    if (ops == NULL) return -1;
    PyObject *known_code = PyDict_GetItemWithError(st->codes, st->annotation);
    if (known_code != NULL) {
        annotation_code = PyLong_AsLong(known_code);
        if (annotation_code == -1 && PyErr_Occurred()) goto done;
    } else if (PyErr_Occurred()) {
        goto done;
    }
    if (refresh_other(st)) goto done;
    for (Py_ssize_t k = 0; k < count; k++) {
        ev *e = &evs[k];
        if (!e->x || e->cat_kind != V_STR || e->ts != e->ts || e->dur != e->dur) continue;
        entry *cat_en = cache_get(&cache, e->cat);
        if (cat_en == NULL) goto done;
        long code = cat_code(st, cat_en);
        if (code < 0) goto done;
        if (code & CAT_TRACE) continue;
        PyObject *cat = cat_en->str;
        entry *name_en = cache_get(&cache, e->name);
        if (name_en == NULL) goto done;
        PyObject *name = name_en->str;
        double ts = e->ts, dur = e->dur;
        if (e->corr >= 0) {
            if (e->stream >= 0) {
                int i = name_id(st, name_en, 1);
                if (i < 0 || put_int(st->gpu[0], i) || put_double(st->gpu[1], ts) || put_double(st->gpu[2], dur) ||
                    put_int64(st->gpu[3], e->corr) || put_int64(st->gpu[4], e->stream))
                    goto done;
                signed char kind = (signed char)(code & CAT_GPU_KIND);
                if (put(st->gpu[5], &kind, 1)) goto done;
                if (kind == 1 || kind == 2) {
                    int64_t at = PyByteArray_GET_SIZE(st->gpu[1]) / (Py_ssize_t)sizeof(double) - 1;
                    if (put_int64(st->mem[0], at) || put_double(st->mem[1], e->bytes) || put_double(st->mem[2], e->bw))
                        goto done;
                }
                continue;
            }
            if (KEY_IS(e->name, "Event Sync") || KEY_IS(e->name, "Context Sync")) continue;
            if (!id_equal(&e->tid, &last_tid) || !id_equal(&e->pid, &last_pid)) {
                PyObject *p = id_object(&e->pid), *t = p ? id_object(&e->tid) : NULL;
                PyObject *key = t ? PyTuple_Pack(2, p, t) : NULL;
                Py_XDECREF(p);
                Py_XDECREF(t);
                if (key == NULL) goto done;
                PyObject *known = PyDict_GetItemWithError(st->threads, key);
                if (known != NULL) {
                    last_thread = as_int(known);
                } else if (!PyErr_Occurred()) {
                    known = PyObject_CallMethod(st->collector, "_thread", "(O)", key);
                    last_thread = known == NULL ? -1 : as_int(known);
                    Py_XDECREF(known);
                }
                Py_DECREF(key);
                if (last_thread < 0) goto done;
                last_pid = e->pid;
                last_tid = e->tid;
            }
            int i = name_id(st, name_en, 0);
            if (i < 0 || put_int(st->cpu[3], i) || put_int64(st->cpu[0], e->corr) || put_double(st->cpu[1], ts) ||
                put_double(st->cpu[2], dur) || put_int(st->cpu[4], last_thread))
                goto done;
        }
        int annotation = (code & CAT_ANNOTATION) != 0;
        long table = code & CAT_TABLE;
        if (code & CAT_OLD_OPERATOR) {
            PyObject *m = PyObject_CallOneArg(st->annotation_match, name);
            if (m == NULL) goto done;
            int hit = m != Py_None;
            Py_DECREF(m);
            if (hit) {
                cat = st->annotation; /* the old format's torch record_function span: an annotation */
                annotation = 1;
                table = annotation_code & CAT_TABLE;
            }
        }
        if (name_en->key.n >= 12 && memmem(name_en->key.p, (size_t)name_en->key.n, "ProfilerStep", 12) != NULL) {
            if (step_call(st, name, annotation, ts, dur)) goto done;
        }
        int same = 0;
        if (op_cat != NULL && id_equal(&e->tid, &op_tid)) {
            same = PyObject_RichCompareBool(cat, op_cat, Py_EQ);
            if (same < 0) goto done;
            same = same && id_equal(&e->pid, &op_pid);
        }
        if (!same) {
            if (!table) continue;
            PyObject *p = id_object(&e->pid), *t = p ? id_object(&e->tid) : NULL;
            PyObject *key = t ? PyTuple_Pack(3, cat, p, t) : NULL;
            if (key == NULL) {
                Py_XDECREF(p);
                Py_XDECREF(t);
                goto done;
            }
            PyObject *lists = PyDict_GetItemWithError(ops, key);
            if (lists == NULL && !PyErr_Occurred()) {
                lists = PyObject_CallMethod(st->collector, "_table_lists", "OOOOO", cat, p, t, st->by_thread,
                                            (PyObject *)&PyByteArray_Type);
                if (lists != NULL) {
                    int r = PyDict_SetItem(ops, key, lists);
                    Py_DECREF(lists); /* ops holds it */
                    if (r) lists = NULL;
                }
            }
            Py_DECREF(p);
            Py_DECREF(t);
            Py_DECREF(key);
            if (lists == NULL) goto done;
            if (!PyTuple_Check(lists) || PyTuple_GET_SIZE(lists) != 3) {
                PyErr_SetString(PyExc_TypeError, "Collector._table_lists did not return 3 bytearrays");
                goto done;
            }
            for (int j = 0; j < 3; j++) {
                op_lists[j] = PyTuple_GET_ITEM(lists, j);
                if (!PyByteArray_CheckExact(op_lists[j])) {
                    PyErr_SetString(PyExc_TypeError, "Collector._table_lists did not return 3 bytearrays");
                    goto done;
                }
            }
            Py_INCREF(cat);
            Py_XSETREF(op_cat, cat);
            op_pid = e->pid;
            op_tid = e->tid;
        }
        int i = name_id(st, name_en, 0);
        if (i < 0 || put_double(op_lists[0], ts) || put_double(op_lists[1], dur) || put_int(op_lists[2], i)) goto done;
    }
    ok = 0;
done:
    Py_XDECREF(op_cat);
    Py_DECREF(ops);
    cache_free(&cache);
    return ok;
}

static int list_tuple(PyObject *t, Py_ssize_t n, PyObject **out, const char *what) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n) {
        PyErr_Format(PyExc_TypeError, "%s: a tuple of %zd bytearrays", what, n);
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        out[k] = PyTuple_GET_ITEM(t, k);
        if (!PyByteArray_CheckExact(out[k])) {
            PyErr_Format(PyExc_TypeError, "%s: a tuple of %zd bytearrays", what, n);
            return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(collect_doc,
             "collect(chunk, collector, ids, threads, codes, annotation, annotation_match, gpu, mem, cpu, by_thread)\n"
             "--\n\n"
             "Parse one chunk and collect its events as Collector.on_records does, appending the columns'\n"
             "native bytes to the bytearrays given; the number of events (every phase), or -1, with nothing changed, when the chunk is\n"
             "left to the Python reader.");

static PyObject *collect(PyObject *self, PyObject *args) {
    Py_buffer view;
    state st;
    memset(&st, 0, sizeof st);
    PyObject *gpu, *mem, *cpu;
    if (!PyArg_ParseTuple(args, "y*OO!O!O!UOO!O!O!O!", &view, &st.collector, &PyDict_Type, &st.ids, &PyDict_Type,
                          &st.threads, &PyDict_Type, &st.codes, &st.annotation, &st.annotation_match, &PyTuple_Type,
                          &gpu, &PyTuple_Type, &mem, &PyTuple_Type, &cpu, &PyDict_Type, &st.by_thread))
        return NULL;
    PyObject *result = NULL;
    ev *evs = NULL;
    Py_ssize_t count = 0, cap = 0;
    if (list_tuple(gpu, 6, st.gpu, "gpu") || list_tuple(mem, 3, st.mem, "mem") || list_tuple(cpu, 5, st.cpu, "cpu"))
        goto out;
    int r = parse_chunk((const char *)view.buf, view.len, &evs, &count, &cap);
    if (r == -2) goto out;
    if (r) {
        result = PyLong_FromLong(-1);
        goto out;
    }
    if (collect_events(&st, evs, count)) goto out;
    result = PyLong_FromSsize_t(count);
out:
    PyMem_Free(evs);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(parses_doc,
             "parses(chunk) -> int\n--\n\n"
             "The first pass alone: the chunk's number of events, or -1 where it is left to the Python reader.");

static PyObject *parses(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE)) return NULL;
    ev *evs = NULL;
    Py_ssize_t count = 0, cap = 0;
    int r = parse_chunk((const char *)view.buf, view.len, &evs, &count, &cap);
    PyMem_Free(evs);
    PyBuffer_Release(&view);
    if (r == -2) return NULL;
    return PyLong_FromSsize_t(r ? -1 : count);
}

static PyMethodDef methods[] = {
    {"collect", collect, METH_VARARGS, collect_doc},
    {"parses", parses, METH_O, parses_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "The native chunk reader (see _native.c).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
