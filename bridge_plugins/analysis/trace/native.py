"""The native chunk reader's Python side: whether it is here, the category codes it reads, and one
chunk through it into fresh columns (docs/architecture.md, "The native chunk reader")."""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any

from bridge_plugins.analysis.trace import categories as cats

try:  # built where the package is installed with a C compiler (setup.py)
    from bridge_plugins.analysis.trace import _native
except ImportError:  # pragma: no cover - an install without a compiler: the Python loop reads every chunk
    _native = None  # type: ignore[assignment]
if os.environ.get("BRIDGE_PLUGINS_NATIVE") == "0":
    _native = None  # type: ignore[assignment]

ANNOTATION = cats.ANNOTATION[0]
"""What the collector reads the old format's torch record_function spans as."""


def codes(gpu_kind: dict[str, int], other_kind: int, tables: dict[str, str]) -> dict[str, int]:
    """Each category the collector's loop tells apart, as the native reader's code (_native.c,
    CAT_*): its GPU kind (``gpu_kind``, else ``other_kind``) in the low two bits, 4 a table's
    (``tables``), 8 the old format's operator, 16 ``Trace``, 32 the annotation; a category not here
    is ``other_kind`` and nothing else."""
    return {
        c: gpu_kind.get(c, other_kind)
        | (4 if c in tables else 0)
        | (8 if c in cats.OLD_OPERATOR else 0)
        | (16 if c == "Trace" else 0)
        | (32 if c == ANNOTATION else 0)
        for c in {*gpu_kind, *tables, *cats.OLD_OPERATOR, "Trace", ANNOTATION}
    }


Columns = tuple[int, tuple[bytearray, ...], tuple[bytearray, ...], tuple[bytearray, ...], dict]


def collect_chunk(
    chunk: bytes | bytearray | memoryview,
    collector: Any,
    ids: dict[str, int],
    threads: dict[tuple[Hashable, Hashable], int],
    category_codes: dict[str, int],
) -> Columns | None:
    """The chunk parsed and collected in C: (its number of events, and the gpu, mem, cpu and
    per-thread table columns as the collector's loop makes them, in native bytes); None, with
    nothing changed, where the reader is not built or leaves the chunk to the Python path."""
    if _native is None:
        return None
    gpu = (bytearray(), bytearray(), bytearray(), bytearray(), bytearray(), bytearray())
    mem = (bytearray(), bytearray(), bytearray())
    cpu = (bytearray(), bytearray(), bytearray(), bytearray(), bytearray())
    by_thread: dict[tuple[str, int], tuple[bytearray, bytearray, bytearray]] = {}
    n = _native.collect(
        chunk,
        collector,
        ids,
        threads,
        category_codes,
        ANNOTATION,
        cats.TORCH_ANNOTATION_RE.match,
        gpu,
        mem,
        cpu,
        by_thread,
    )
    return None if n < 0 else (n, gpu, mem, cpu, by_thread)
