"""What a run.Script job finds in its sys.argv, per executor, from a NeMo Run dry run.

Each executor's command is followed through its real stages: LocalExecutor's Popen argv (torchrun
hands its script the args as they are, so the script's args are the tail), the sbatch script's
srun line run by bash, DockerExecutor's container command split by docker-py and run by bash
(stand-in programs record the argv: tests/support.py). Where the plugin routed the job through
``bridge_plugins/runtime/unquote_argv.py``, that file is run for real, with a recorder in place
of the job's module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nemo_run as run

from tests.launch_support import docker_command, local_argv, sbatch
from tests.support import run_docker_command, run_sbatch_command

MODULE = "recipes.train"


def _tail(argv: list[str]) -> list[str]:
    i = argv.index(MODULE)
    assert argv[i - 1] == "-m", argv
    return argv[i + 1 :]


def _through_unquote_argv(argv: list[str], tmp_path: Path) -> list[str]:
    """Run the real unquote_argv.py on the args torchrun would hand it; the job is a recorder."""
    i = next(i for i, a in enumerate(argv) if a.endswith("unquote_argv.py"))
    recorder = tmp_path / "recorder.py"
    recorder.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    rest = argv[i + 1 :]
    j = rest.index("-m")
    assert rest[j + 1] == MODULE, rest
    proc = subprocess.run(
        [sys.executable, argv[i], *rest[:j], str(recorder), *rest[j + 2 :]], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def job_argv(job, tmp_path: Path) -> list[str]:
    """The args after the script/module name, as the job's sys.argv holds them."""
    ex = job.executor
    if isinstance(ex, run.LocalExecutor):
        argv = local_argv(job)
        if any(a.endswith("unquote_argv.py") for a in argv):
            return _through_unquote_argv(argv, tmp_path)
        return _tail(argv)
    if isinstance(ex, run.SlurmExecutor):
        rec = run_sbatch_command(sbatch(job), tmp_path)
    elif isinstance(ex, run.DockerExecutor):
        rec = run_docker_command(docker_command(job), tmp_path)
    else:
        raise TypeError(type(ex))
    (launcher,) = [name for name in ("ft_launcher", "torchrun", "python") if name in rec][:1]
    return _tail(rec[launcher])
