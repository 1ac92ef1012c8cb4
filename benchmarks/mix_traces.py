"""Big synthetic traces built from a real one: its events repeated with shifted timestamps,
correlation ids and ProfilerStep numbers, so each copy is more steps of the same job (the same
"mix" of operators, runtime calls and kernels per step). Several sizes come out of one pass, and
``cached`` keeps them by the fixture's hash, as a 3 GB trace takes minutes to write.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import subprocess
from pathlib import Path

SHARED = Path(os.environ.get("BRIDGE_SHARED") or Path(__file__).resolve().parents[2] / "shared")
GPU_TRACES = SHARED / "fixtures" / "gpu-traces"
_TS, _CORR, _STEP = '"\\ue000ts"', '"\\ue000corr"', '"\\ue000step"'  # placeholders, as json.dumps writes them
BUILD_VERSION = 2
"""Part of the cache key: 2 writes an integer fixture's times as integers (:func:`_period`)."""
_PLACES = re.compile("(" + "|".join(map(re.escape, (_TS, _CORR, _STEP))) + ")")


def mixes() -> dict[str, Path]:
    """Every real GPU fixture, by its name without ``.json.gz``: one mix each."""
    return {p.name.removesuffix(".json.gz"): p for p in sorted(GPU_TRACES.glob("*.json.gz"))}


def _templates(events: list[dict]) -> list[tuple[list[str], float | None, int | None, int | None]]:
    """Each event as its JSON text cut at the values a copy shifts, with those values."""
    out = []
    for e in events:
        e = dict(e)
        ts = corr = step = None
        if "ts" in e:
            ts, e["ts"] = e["ts"], "\ue000ts"
        args = e.get("args")
        if isinstance(args, dict) and "correlation" in args:
            corr, e["args"] = args["correlation"], {**args, "correlation": "\ue000corr"}
        name = e.get("name", "")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            step, e["name"] = int(name[13:]), "\ue000step"
        out.append((_PLACES.split(json.dumps(e)), ts, corr, step))  # text, placeholder, text, ...
    return out


def _period(span: float, integral: bool) -> float:
    """The shift from one copy to the next: the fixture's span and 1 ms. Integral where every ``ts``
    of the fixture is an integer, so that the copies write their times as the fixture does: Python
    writes a float ``1682725898236845.0``, a number JSON readers parse far slower than the
    fixture's ``1682725898236845`` (msgspec: ~0.4 against ~0.05 µs a value), which would measure
    a format no real trace here has (docs/scale.md, "Every trace mix")."""
    return math.ceil(span) + 1000 if integral else span + 1000.0


def build_many(fixture: Path, targets: dict[Path, float]) -> dict[Path, int]:
    """Write, in one pass, a trace of at least ``mb`` MB (uncompressed) at each path of ``targets``;
    returns their sizes in bytes. For job2 (float times), byte for byte what ``analysis_scale.build``
    always wrote."""
    with gzip.open(fixture) as fh:
        trace = json.load(fh)
    events = trace.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed)
    period = _period(span, all(type(e["ts"]) is int for e in timed))
    max_corr = max(e.get("args", {}).get("correlation", 0) for e in events) + 1
    steps = [int(e["name"][13:]) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    steps_per_copy = max(steps) - min(steps) + 1 if steps else 1
    templates = _templates(events)
    header = json.dumps(trace)[:-1] + ', "traceEvents": [\n'
    files = {path: open(path, "w") for path in targets}  # noqa: SIM115 - closed below, each at its size
    try:
        for f in files.values():
            f.write(header)
        copy, open_ = 0, dict(files)
        while open_:
            shift, corr_shift, step_shift = copy * period, copy * max_corr, copy * steps_per_copy
            texts = []
            for pieces, ts, corr, step in templates:
                values = {
                    _TS: repr(ts + shift) if ts is not None else "",
                    _CORR: repr(corr + corr_shift) if corr is not None else "",
                    _STEP: json.dumps(f"ProfilerStep#{step + step_shift}") if step is not None else "",
                }
                texts.append("".join(values.get(p, p) for p in pieces))
            text = ("" if copy == 0 else ",\n") + ",\n".join(texts)
            for path, f in list(open_.items()):
                f.write(text)
                if f.tell() >= targets[path] * 1e6:
                    f.write("\n]}\n")
                    del open_[path]
            copy += 1
    finally:
        for f in files.values():
            f.close()
    return {path: path.stat().st_size for path in targets}


def fixture_hash(fixture: Path) -> str:
    """The first 12 hex digits of the fixture's sha256: a changed fixture gets new traces."""
    return hashlib.sha256(fixture.read_bytes()).hexdigest()[:12]


def cached(fixture: Path, sizes_mb: list[float], work: Path) -> dict[float, Path]:
    """Traces of the fixture's mix of each size (MB of JSON) in ``work``, built (in one pass) only
    where missing; a ``.gz`` (gzip -6) beside each of at most 500 MB, for the ``gzip -dc`` runs."""
    d = work / f"{fixture.name.removesuffix('.json.gz')}-{fixture_hash(fixture)}-v{BUILD_VERSION}"
    d.mkdir(parents=True, exist_ok=True)
    paths = {mb: d / f"{int(mb)}mb" / "rank0.json" for mb in sizes_mb}
    done = d / "done"
    want = {p: mb for mb, p in paths.items() if not (p.exists() and (done / p.parent.name).exists())}
    if want:
        for p in want:
            p.parent.mkdir(exist_ok=True)
        build_many(fixture, want)
        done.mkdir(exist_ok=True)
        for p in want:
            (done / p.parent.name).touch()
    for mb, p in paths.items():
        gz = p.with_name(p.name + ".gz")
        if mb <= 500 and not gz.exists():
            with open(gz.with_suffix(".tmp"), "wb") as f:
                subprocess.run(["gzip", "-c", "-6", str(p)], stdout=f, check=True)
            gz.with_suffix(".tmp").rename(gz)
    return paths
