"""After the main job's Ctrl-C, torchrun's agent logs the SIGTERM that stopped it; the terminal
already said "stopping the job", so those lines stay in the log (issue 33, point 10). A SIGTERM the
main job did not send (a Slurm time limit, a kill) is still shown."""

from __future__ import annotations

import pytest

from recipes.job_output import Progress

# as torchrun 2.13 writes them into NeMo Run's combined.log when the cancel's SIGTERM reaches it
AGENT_ON_SIGTERM = [
    "W1204 15:50:00.123000 27060 torch/distributed/elastic/agent/server/api.py:753] Received Signals.SIGTERM "
    "death signal, shutting down workers",
    "Traceback (most recent call last):",
    "torch.distributed.elastic.multiprocessing.api.SignalException: Process 27060 got signal: 15",
]
STEP = "[rank0] INFO recipes.train: step 4 | loss 6.2000 | step time 40.0 ms"


@pytest.mark.parametrize("stopped_by_us", [False, True])
def test_the_agents_sigterm_lines_are_shown_only_when_the_main_job_did_not_send_it(tmp_path, capsys, stopped_by_us):
    (tmp_path / "combined.log").write_text("\n".join([STEP, *AGENT_ON_SIGTERM]) + "\n")
    progress = Progress(tmp_path)
    progress.stopping = lambda: stopped_by_us
    progress._poll()
    out = capsys.readouterr().out
    assert STEP in out
    assert ("got signal: 15" in out) is not stopped_by_us, out
    assert ("Traceback" in out) is not stopped_by_us, out


def test_the_help_says_a_background_main_job_ignores_ctrl_c_and_how_to_stop_it():
    from recipes import arguments

    text = " ".join(arguments.build_parser().format_help().split())
    assert "Started with `&` in a script, it ignores Ctrl-C" in text
    assert "stop it with `kill PID` (SIGTERM" in text
