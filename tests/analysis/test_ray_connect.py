"""Connecting to a Ray cluster (``ray_map._connect``): which failures are tried again, and what the
one-line error says. ``ray.init`` and ``ray.shutdown`` are replaced by stand-ins that fail the way
Ray's client does (the real connection runs in tests/e2e/test_ray_cluster.py, on a 2-node
cluster); a failure of the cluster's client server cannot be caused on demand there."""

from __future__ import annotations

import pytest

ray_map = pytest.importorskip("bridge_plugins.analysis.ray_map")
from bridge_plugins.analysis.parallel import ClusterUnavailable  # noqa: E402

ADDRESS = "ray://10.0.0.1:10001"
# what Ray's client raises when the server side fails to start a session (ray/util/client/worker.py)
SERVER_FAILED = ConnectionAbortedError(
    "Initialization failure from server:\nTraceback (most recent call last):\n"
    '  File "proxier.py", line 772, in Datapath\n'
    "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err`\n"
)


class StandInRay:
    """``ray.init``/``ray.shutdown`` that raise the given errors in turn, then succeed."""

    def __init__(self, errors: list[Exception]) -> None:
        self.errors, self.inits, self.shutdowns = list(errors), 0, 0

    def init(self, **kwargs) -> None:
        self.inits += 1
        assert kwargs["address"] == ADDRESS and kwargs["runtime_env"]["py_modules"]
        if self.errors:
            raise self.errors.pop(0)

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture
def stand_in(monkeypatch):
    def make(errors: list[Exception]) -> StandInRay:
        ray = StandInRay(errors)
        monkeypatch.setattr(ray_map.ray, "init", ray.init)
        monkeypatch.setattr(ray_map.ray, "shutdown", ray.shutdown)
        return ray

    return make


def test_a_session_the_server_failed_to_start_is_asked_for_again(stand_in, capsys):
    ray = stand_in([SERVER_FAILED, SERVER_FAILED])
    ray_map._connect(ADDRESS)
    assert (ray.inits, ray.shutdowns) == (3, 2)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith(ray_map.RETRY_PREFIX) for line in lines)
    assert lines[0].endswith(
        "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err`); trying again (2 of 3)"
    )
    assert lines[1].endswith("trying again (3 of 3)")


def test_after_the_last_try_the_error_says_what_the_server_said(stand_in):
    ray = stand_in([SERVER_FAILED] * ray_map.CONNECT_TRIES)
    with pytest.raises(ClusterUnavailable) as e:
        ray_map._connect(ADDRESS)
    assert ray.inits == ray_map.CONNECT_TRIES == 3
    assert str(e.value) == (
        f"cannot connect to the Ray cluster at {ADDRESS!r}: Initialization failure from server: "
        "RuntimeError: Proxy failed to Connect to backend! Check `ray_client_server.err` (3 tries)"
    )
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("ray client connection timeout"),
        ConnectionAbortedError("the connection was aborted\nby the peer"),  # not the server-side failure
        ValueError("bad address"),
    ],
)
def test_other_failures_are_not_tried_again(stand_in, capsys, error):
    ray = stand_in([error, error])
    with pytest.raises(ClusterUnavailable) as e:
        ray_map._connect(ADDRESS)
    assert ray.inits == 1 and capsys.readouterr().err == ""
    assert "tries" not in str(e.value) and "\n" not in str(e.value)


def test_an_error_with_no_text_is_named_by_its_type():
    assert ray_map._why(TimeoutError()) == "TimeoutError"
    assert ray_map._why(ValueError("one line")) == "one line"
