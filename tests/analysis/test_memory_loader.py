"""Loading snapshots never runs code from the file; files that are not snapshots get one clear line."""

from __future__ import annotations

import gzip
import json
import os
import pickle
from pathlib import Path

import pytest

from bridge_plugins.analysis.memory.loader import SnapshotFormatError, load_snapshot
from bridge_plugins.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class _CreatesFile:
    """Unpickling this calls open(target, "w"): the file appears if the loader runs the pickle's code."""

    def __init__(self, target: Path):
        self.target = str(target)

    def __reduce__(self):
        return (open, (self.target, "w"))


def _hostile_snapshot(target: Path, protocol: int) -> bytes:
    """A dict shaped like a snapshot, with the payload hidden inside a segment."""
    return pickle.dumps(
        {"segments": [{"blocks": [], "total_size": 0, "x": _CreatesFile(target)}], "device_traces": []},
        protocol=protocol,
    )


def _run(capsys, *argv):
    rc = main(["memory", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_hostile_payload_really_creates_a_file_with_plain_pickle(tmp_path):
    """Proves the next test can fail: plain pickle.loads runs the payload."""
    target = tmp_path / "pwned_by_plain_pickle"
    pickle.loads(_hostile_snapshot(target, 4))
    assert target.exists()


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_hostile_pickle_is_refused_and_creates_no_file(tmp_path, capsys, protocol):
    target = tmp_path / "pwned"
    snap = tmp_path / "memory_snapshot_0.pickle"
    snap.write_bytes(_hostile_snapshot(target, protocol))
    rc, out, err = _run(capsys, snap)
    assert rc == 2
    assert not target.exists()
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(snap) in err
    if protocol == 0:  # torch never writes protocol 0: refused before unpickling starts
        assert "not a CUDA memory snapshot" in err
    else:
        assert "refusing to load: the pickle references io.open" in err


@pytest.mark.parametrize(
    "name, content, expect",
    [
        ("trace.json", json.dumps({"traceEvents": []}).encode(), "not a CUDA memory snapshot"),
        (
            "trace.json.gz",
            gzip.compress(b'{"traceEvents": []}', mtime=0),
            "not a CUDA memory snapshot",
        ),  # mtime=0: the same test id in every pytest-xdist worker
        ("empty.pickle", b"", "not a CUDA memory snapshot"),
        ("truncated.pickle", (FIXTURES / "memory_schema.pickle").read_bytes()[:1000], "not a readable pickle"),
        ("ints.pickle", pickle.dumps([1, 2, 3]), "segments[0] is an int, not a dict"),
        ("tensor_state.pickle", pickle.dumps({"weight": [0.1, 0.2]}), "without a 'segments' list"),
        ("bad_traces.pickle", pickle.dumps({"segments": [], "device_traces": {"0": []}}), "'device_traces'"),
        (
            "bad_entry.pickle",
            pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "size": "x"}]]}),
            "device_traces[0][0].size is a str, not an int",
        ),
    ],
)
def test_other_formats_get_one_line_naming_the_file(tmp_path, capsys, name, content, expect):
    path = tmp_path / name
    path.write_bytes(content)
    rc, out, err = _run(capsys, path)
    assert (rc, out) == (2, "")
    assert err.startswith(f"bridge-plugins memory: error: {path}: ") and err.count("\n") == 1, err
    assert expect in err


def test_missing_file_and_directory(tmp_path, capsys):
    """One line each, worded as summary's: a missing file, a directory with no snapshot in it."""
    for path, why in (
        (tmp_path / "nope.pickle", "no such file or directory"),
        (tmp_path, "no memory snapshot (.pickle) in this directory"),
    ):
        rc, _, err = _run(capsys, path)
        assert rc == 2 and err == f"bridge-plugins memory: error: {path}: {why}\n"


def test_bad_compare_file_is_named(tmp_path, capsys):
    other = tmp_path / "other.pickle"
    other.write_text("hello")
    rc, _, err = _run(capsys, FIXTURES / "memory_schema.pickle", "--compare", other)
    assert rc == 2 and str(other) in err


class _Calls:
    """Unpickling this calls ``fn(*args)``: pickled as a reference to ``fn`` (a builtins name)."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("fn", [exec, eval, getattr, __import__, compile])
def test_no_builtin_callable_beyond_the_container_types_is_loaded(tmp_path, capsys, fn, protocol):
    """Widening the allow-list to all of ``builtins`` would let an ``exec`` pickle run."""
    target = tmp_path / "ran"
    args = {
        exec: (f"open({str(target)!r}, 'w')",),
        eval: (f"open({str(target)!r}, 'w')",),
        getattr: (tmp_path, "mkdir"),
        __import__: ("os",),
        compile: ("1", "f", "eval"),
    }[fn]
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps({"segments": [_Calls(fn, *args)], "device_traces": []}, protocol=protocol))
    rc, out, err = _run(capsys, path)
    module = "__builtin__" if protocol < 3 else "builtins"  # protocol 2 writes Python 2's name
    assert rc == 2 and f"references {module}.{fn.__name__}," in err
    assert not target.exists()


@pytest.mark.parametrize("protocol", [2, 3])
def test_older_protocols_rebuild_sets_and_bytearrays(tmp_path, capsys, protocol):
    """Protocols 2 and 3 rebuild these through a global lookup (protocol 2 by Python 2's module name,
    ``__builtin__``): the allow-list must let exactly these through."""
    data = {"segments": [], "device_traces": [], "s": {1, 2}, "f": frozenset({3})}
    if protocol == 3:  # protocol 2 writes a bytearray through _codecs.encode, which stays refused
        data["b"] = bytearray(b"ab")
    path = tmp_path / "old.pickle"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    from bridge_plugins.analysis.memory.loader import load_snapshot

    assert load_snapshot(path) == data


def _refusal(path: Path, content: bytes) -> str:
    """The message load_snapshot refuses ``content`` with, written at ``path``."""
    path.write_bytes(content)
    with pytest.raises(SnapshotFormatError) as e:
        load_snapshot(path)
    return str(e.value)


def test_the_refusal_names_the_global_and_says_why_in_full(tmp_path):
    path = tmp_path / "snap.pickle"
    content = pickle.dumps({"segments": [_Calls(exec, "1")], "device_traces": []}, protocol=4)
    assert _refusal(path, content) == (
        f"{path}: refusing to load: the pickle references builtins.exec, which a CUDA memory snapshot never "
        "holds (loading it could run code)"
    )


def test_a_persistent_id_is_refused_in_full(tmp_path):
    """A pickle that asks its loader for an outside object (PERSID/BINPERSID), as torch.save does."""
    path = tmp_path / "snap.pickle"
    content = pickle.PROTO + b"\x02" + pickle.NONE + pickle.BINPERSID + pickle.STOP
    assert _refusal(path, content) == f"{path}: refusing to load: the pickle uses persistent ids (not a snapshot)"


def test_the_oldest_format_a_bare_list_of_segments_becomes_the_dict(tmp_path):
    """As torch's _memory_viz reads it: the list is the segments, and there are no traces."""
    path = tmp_path / "old.pickle"
    path.write_bytes(pickle.dumps([], protocol=4))
    assert load_snapshot(path) == {"segments": [], "device_traces": []}
    path.write_bytes(pickle.dumps({"segments": []}, protocol=4))  # no device_traces at all: none recorded
    assert load_snapshot(path) == {"segments": [], "device_traces": []}


def test_what_is_not_a_snapshot_is_named_by_its_type_in_full(tmp_path):
    path = tmp_path / "n.pickle"
    assert _refusal(path, pickle.dumps(7, protocol=4)) == (
        f"{path}: not a CUDA memory snapshot (a pickled int without a 'segments' list; expected the dict that "
        "torch.cuda.memory._dump_snapshot writes)"
    )


def test_a_file_that_is_not_there_says_the_os_reason(tmp_path):
    with pytest.raises(SnapshotFormatError) as e:
        load_snapshot(tmp_path / "nope.pickle")
    assert str(e.value) == f"{tmp_path / 'nope.pickle'}: cannot read: No such file or directory"


def test_a_truncated_pickle_names_what_the_unpickler_raised(tmp_path):
    path = tmp_path / "cut.pickle"
    message = _refusal(path, pickle.dumps({"segments": [1, 2, 3]}, protocol=4)[:-5])
    assert message.startswith(f"{path}: not a readable pickle (UnpicklingError: ")


def test_only_the_first_bytes_are_read_to_recognise_a_pickle(tmp_path, monkeypatch):
    """The check before unpickling reads the 8-byte head, not the whole (possibly huge) file."""
    from bridge_plugins.analysis.memory import loader

    sizes: list[int | None] = []
    real_open = loader.open_regular

    class Spy:
        def __init__(self, fh):
            self._fh = fh

        def read(self, n=-1):
            sizes.append(n)
            return self._fh.read(n)

        def __getattr__(self, name):
            return getattr(self._fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._fh.close()

    monkeypatch.setattr(loader, "open_regular", lambda path: Spy(real_open(path)))
    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": []}, protocol=4))
    assert load_snapshot(path)["segments"] == []
    assert sizes[:1] == [8], sizes


def test_a_fifo_named_as_a_snapshot_is_refused_with_its_path_and_why(tmp_path):
    fifo = tmp_path / "s.pickle"
    os.mkfifo(fifo)
    with pytest.raises(SnapshotFormatError) as e:
        load_snapshot(fifo)
    assert str(e.value) == f"{fifo}: cannot read: not a regular file (a FIFO, device or socket would never be read)"
