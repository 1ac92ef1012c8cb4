"""The main job (``python -m recipes``): parse its flags (arguments.py), launch the tiny GPT recipe
with a profiling plugin through NeMo Run (launch.py), wait, then print what the job wrote
(after_job.py). Ctrl-C stops the job and still prints what it captured (exit 130)."""

from __future__ import annotations

import logging
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from recipes.after_job import print_summary
from recipes.arguments import INJECTED, build_parser, check_args, resolve_base_dir
from recipes.job_output import Progress, log_tail
from recipes.launch import (
    launch_text,
    make_executor,
    make_plugins,
    plugin_warnings_as_lines,
    run_header,
)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(args, parser)
    try:
        plugins = make_plugins(args)
    except (TypeError, ValueError) as e:
        parser.error(str(e))
    import nemo_run as run

    from bridge_plugins.plugins.nemo_run_compat import dryrun_request
    from recipes.ctrl_c import STOP_SIGNALS, cancel_on_ctrl_c
    from recipes.tiny_gpt import tiny_gpt_recipe

    base_dir = str(resolve_base_dir(args.base_dir))
    overrides = {"train__train_iters": args.steps}
    if args.memory_history and args.profiler == "nsys":
        # NsysPlugin leaves fields it does not own as the recipe set them
        overrides["profiling__record_memory_history"] = True
    if args.inject:
        overrides.update(INJECTED[args.inject][1](args.start, args.end))
    recipe = tiny_gpt_recipe(**overrides)
    executor = make_executor(args, base_dir)
    print(run_header(args), flush=True)
    # Progress prints the job's log lines while the Experiment waits for the job, which NeMo Run does
    # when its context exits: ``outer`` closes Progress after that wait (no private wait API needed).
    with ExitStack() as outer:
        with run.Experiment(
            args.name, base_dir=base_dir, enable_goodbye_message=False, log_level="WARN", skip_status_at_exit=True
        ) as exp:
            with plugin_warnings_as_lines(args.dryrun):
                exp.add(recipe, executor=executor, plugins=plugins, name="tiny_gpt")
            job = exp.jobs[0]
            if args.dryrun:
                exp.dryrun(log=False)
                print(launch_text(dryrun_request(job)))
                profiling = getattr(getattr(job.task, "config", None), "profiling", None)
                if profiling is not None:
                    print(f"job's profiling config: {dict(profiling.__arguments__)}")
                return 0
            job_dir = Path(job.executor.job_dir)
            print(f"[recipes] job directory: {job_dir}", flush=True)
            t0 = time.monotonic()
            progress = outer.enter_context(Progress(job_dir))
            interrupted = outer.enter_context(cancel_on_ctrl_c(exp, job.id))
            progress.stopping = lambda: bool(interrupted())  # the job's agent then logs our SIGTERM: not news
            exp.run(detach=False, sequential=True)
            if interrupted():  # pressed while launching: the cancel found no job yet
                exp.cancel(job.id)
        state = str(job.state)  # Job.wait set it when the Experiment's exit waited for the job
    print(f"\n[recipes] job finished in {time.monotonic() - t0:.1f} s with state {state}")
    print_summary(args, job_dir, progress.device)
    if interrupted():
        print(
            f"[recipes] stopped by {STOP_SIGNALS[interrupted()]}; the job's logs are under {job_dir}", file=sys.stderr
        )
        return 128 + interrupted()
    ok = "SUCCEEDED" in state
    if not ok:
        tail = "\n".join(f"  {line}" for line in log_tail(job_dir))
        print(
            f"[recipes] the job did not succeed; the end of its log:\n{tail}\nall its logs are under {job_dir}",
            file=sys.stderr,
        )
    return 0 if ok else 1


def run_main(entry=main) -> None:
    """Run ``entry`` and exit with its code. A Ctrl-C before the launch, after the job or a second
    one (outside cancel_on_ctrl_c's first) is one line and exit 130."""
    from bridge_plugins.cli.ctrl_c import caused_by_ctrl_c
    from recipes.ctrl_c import exit_interrupted, exit_on_ctrl_c
    from recipes.python_check import missing_dependency_line

    exit_on_ctrl_c()
    try:
        code = entry()
    except ModuleNotFoundError as e:  # not the venv's Python: one line, not the import's traceback
        line = missing_dependency_line(e, "recipes")
        if line is None:
            raise
        print(line, file=sys.stderr)
        code = 1
    except (KeyboardInterrupt, Exception) as e:
        if not caused_by_ctrl_c(e):
            raise
        logging.shutdown()
        # Not sys.exit: when the KeyboardInterrupt left code run by exec(str) (dataclasses build
        # their methods so), CPython flags it as unhandled and a ``python -m`` program then dies by
        # SIGINT (exit -2) after any sys.exit.
        exit_interrupted()
    sys.exit(code)


if __name__ == "__main__":
    run_main()
