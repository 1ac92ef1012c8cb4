# The native chunk reader's signatures (_native.c; docs/architecture.md, "The native chunk reader").
from collections.abc import Callable
from typing import Any

def collect(
    chunk: bytes | bytearray | memoryview,
    collector: Any,
    ids: dict[str, int],
    threads: dict[tuple[Any, Any], int],
    codes: dict[str, int],
    annotation: str,
    annotation_match: Callable[[str], object],
    gpu: tuple[bytearray, ...],
    mem: tuple[bytearray, ...],
    cpu: tuple[bytearray, ...],
    by_thread: dict[tuple[str, int], tuple[bytearray, bytearray, bytearray]],
) -> int: ...
def parses(chunk: bytes | bytearray | memoryview) -> int: ...
