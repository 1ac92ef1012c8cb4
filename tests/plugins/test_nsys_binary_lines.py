"""No nsys where a local job would run: the warning at setup and the refusal at ``exp.run()``, by
their whole lines and their classes (the executor's own PATH, an empty directory, has no nsys)."""

from __future__ import annotations

import warnings

import nemo_run as run
import pytest

from bridge_plugins.plugins import NsysNotFoundError, NsysNotFoundWarning
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import assigned, user_nsys_plugin

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)

ADVICE = (
    "; install Nsight Systems (or put nsys on the executor's PATH), or use exp.dryrun() to see the command "
    "without running it"
)
HEAD = "NsysPlugin: there is no 'nsys' binary on the job's PATH, and LocalExecutor runs the job on this machine, "


def _no_nsys_executor(tmp_path):
    (tmp_path / "empty").mkdir()
    return run.LocalExecutor(env_vars={"PATH": str(tmp_path / "empty")})


def test_setup_warns_the_whole_line_as_an_nsys_not_found_warning(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        user_nsys_plugin().setup(tiny_gpt_script(), assigned(_no_nsys_executor(tmp_path), tmp_path))
    assert [(w.category, str(w.message)) for w in caught] == [
        (NsysNotFoundWarning, HEAD + "so exp.run() will refuse to launch it" + ADVICE)
    ]


def test_run_refuses_with_the_whole_line(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NsysNotFoundWarning)
        with run.Experiment("plugtest", log_level="WARN") as exp:
            exp.add(tiny_gpt_script(), executor=_no_nsys_executor(tmp_path), plugins=[user_nsys_plugin()], name="job")
            with pytest.raises(NsysNotFoundError) as raised:
                exp.run(sequential=True)
    assert str(raised.value) == HEAD + "so nothing was launched" + ADVICE
    assert not exp.jobs[0].launched
