"""The native chunk reader against msgspec and the Python loop, side by side in one process: a
trace's chunks (cut as the reader cuts them, held in memory) decoded and collected both ways, best
of ``--rounds`` each, alternated; and the bare scans (the native parse alone, msgspec decoding into
nothing but raw spans). No inflating, no analyses: docs/scale.md ("Session 24") quotes it.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python -m benchmarks.native_reader TRACE.json.gz [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from bridge_plugins.analysis.trace import chunked, native
from bridge_plugins.analysis.trace.collect import Collector, Record
from bridge_plugins.analysis.trace.cutting import blocks, chunks
from bridge_plugins.analysis.trace.header import header


def trace_chunks(path: Path) -> list[bytes]:
    """The trace's chunks as the fast reader cuts them (each a JSON array of whole events)."""
    out: list[bytes] = []
    with open(path, "rb") as raw, chunked.open_stream(raw, path.name.endswith(".gz"), threads=0) as fh:
        _, rest, offset = header(blocks(fh))
        pieces = chunks(rest, offset, fh)
        extend = None
        typed = chunked.typed_decoder(Record)
        while True:
            try:
                chunk, at, last = pieces.send(extend)
            except StopIteration:
                return out
            try:
                chunked.decode_chunk(chunk, typed, at, last)  # a cut inside a string is cut again, as the reader does
            except chunked.Truncated:
                extend = True
                continue
            extend = None
            out.append(bytes(chunk))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    if native._native is None:
        raise SystemExit("the native reader is not built (bash scripts/setup.sh)")
    parts = trace_chunks(args.trace)
    print(f"# {args.trace}: {len(parts)} chunks, {sum(map(len, parts)) / 1e6:.0f} MB of JSON")
    typed = chunked.typed_decoder(Record)
    raw = msgspec.json.Decoder(list[msgspec.Raw])

    def python() -> None:
        c = Collector()
        for part in parts:
            c.on_records(typed.decode(part))

    def in_c() -> None:
        c = Collector()
        for part in parts:
            if not c.on_chunk(part):
                c.on_records(typed.decode(part))

    ways: dict[str, Callable[[], object]] = {
        "msgspec + the Python loop": python,
        "the native reader": in_c,
        "msgspec's bare scan (Raw)": lambda: [raw.decode(part) for part in parts],
        "the native parse alone": lambda: [native._native.parses(part) for part in parts],
    }
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(args.rounds):
        for name, fn in ways.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    for name, s in best.items():
        print(f"  {name:<28} best {s:.3f} s")
    print(f"  native / Python: {best['the native reader'] / best['msgspec + the Python loop']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
