"""What ``ProfilingController`` costs a training step that is not profiled.

Run from the repository root::

    .venv/bin/python -m benchmarks.controller_overhead            # micro + macro
    .venv/bin/python -m benchmarks.controller_overhead --quick    # fewer rounds, ~15 s
    .venv/bin/python -m benchmarks.controller_overhead --all --json results.json
    .venv/bin/python -m benchmarks.controller_overhead --import-check   # only the import check

1. micro: ``with controller.step(i): pass`` against a bare ``for i in range(n): pass`` loop,
   interleaved A/B (every round runs every variant once, in a shuffled order), median over rounds
   of the per-round difference to the bare loop of that round. Variants: controller with profiling
   off (inert), on a rank that is not selected, and on a selected rank whose window lies outside
   the measured steps; references: ``with`` on a prebuilt no-op object, ``contextlib.nullcontext()``,
   a ``contextlib.contextmanager`` generator, and ``controller.step(i)`` called without ``with``.
   The garbage collector is off while a timed loop runs (as in ``timeit``).
2. macro: the recipe's training step (TinyGPT, default ModelConfig/TrainingConfig, CPU) without a
   controller, with an unselected-rank controller and with a window-outside controller, plus a
   second bare run as an A/A control that shows the noise floor; interleaved rounds, median step time.
3. import check (``--import-check`` or ``--all``): ``python -X importtime -c "import
   bridge_plugins.runtime"`` and ``sys.modules`` in fresh subprocesses; exits 1 if nemo_run is imported.

Target (issue): under 1 us per unprofiled step.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import gc
import json
import logging
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python benchmarks/controller_overhead.py` puts benchmarks/ first, not the root
    sys.path.insert(0, str(ROOT))

from bridge_plugins.config.profiling import ProfilingConfig  # noqa: E402
from bridge_plugins.runtime import ProfilingController  # noqa: E402

TARGET_US = 1.0
WINDOW_FAR = 10**9  # a window that the measured steps never reach

# --------------------------------------------------------------------------- micro: timed loops
# One function per variant, so the loop body is exactly the statement measured; ns for n iterations.
perf_ns = time.perf_counter_ns


def _loop_bare(n: int, _: Any) -> int:
    t0 = perf_ns()
    for _i in range(n):
        pass
    return perf_ns() - t0


def _loop_with_step(n: int, controller: Any) -> int:
    t0 = perf_ns()
    for i in range(n):
        with controller.step(i):
            pass
    return perf_ns() - t0


def _loop_call_step(n: int, controller: Any) -> int:
    t0 = perf_ns()
    for i in range(n):
        controller.step(i)
    return perf_ns() - t0


def _loop_with_obj(n: int, obj: Any) -> int:
    t0 = perf_ns()
    for _i in range(n):
        with obj:
            pass
    return perf_ns() - t0


def _loop_with_factory(n: int, factory: Callable[[], Any]) -> int:
    t0 = perf_ns()
    for _i in range(n):
        with factory():
            pass
    return perf_ns() - t0


class _PrebuiltNoOp:
    """Same shape as the controller's own no-op (``__slots__ = ()``, trivial enter/exit)."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        return False


@contextlib.contextmanager
def _generator_cm():
    yield


def _make_controllers(tmp: str) -> dict[str, ProfilingController]:
    """(b) inert, (c) unselected rank, (d) selected rank with the window far outside the measured steps,
    (e) on-demand profiling on (rank 0: its poller thread runs, samples a step and rewrites the progress
    file every poll interval), (f) (d) with on-demand on."""
    ctls = {
        "inert": ProfilingController.from_config(ProfilingConfig()),
        "unselected": ProfilingController.from_config(
            ProfilingConfig(use_pytorch_profiler=True, profile_ranks=[1], output_dir=tmp), rank=0, world_size=2
        ),
        "window_outside": ProfilingController.from_config(
            ProfilingConfig(
                use_pytorch_profiler=True,
                profile_ranks=[0],
                output_dir=tmp,
                profile_step_start=WINDOW_FAR,
                profile_step_end=WINDOW_FAR + 1,
            ),
            rank=0,
            world_size=2,
        ),
        "on_demand": ProfilingController.from_config(
            ProfilingConfig(on_demand=True, output_dir=tmp), rank=0, world_size=2
        ),
        "on_demand_window_outside": ProfilingController.from_config(
            ProfilingConfig(
                use_pytorch_profiler=True,
                profile_ranks=[0],
                output_dir=tmp,
                on_demand=True,
                profile_step_start=WINDOW_FAR,
                profile_step_end=WINDOW_FAR + 1,
            ),
            rank=0,
            world_size=2,
        ),
    }
    return ctls


def _check_controllers(ctls: dict[str, ProfilingController]) -> None:
    assert ctls["inert"].config is not None and not ctls["inert"].config.enabled
    assert ctls["unselected"].selected is False, "unselected variant: rank 0 should not be selected"
    assert ctls["window_outside"].selected is True, "window_outside variant: rank 0 should be selected"
    for name, c in ctls.items():  # every measured step must take the fast path (the shared no-op)
        assert c.step(0) is c.step(123456) and not hasattr(c.step(0), "ctl"), f"{name}: step() is not the no-op"


def run_micro(rounds: int, iters: int, seed: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bp-bench-")
    ctls = _make_controllers(tmp)
    # (name, description, loop function, argument, is a controller variant)
    variants: list[tuple[str, str, Callable[[int, Any], int], Any, bool]] = [
        ("bare", "(a) for i in range(n): pass", _loop_bare, None, False),
        ("inert", "(b) with ctl.step(i): ProfilingConfig() (profiling off)", _loop_with_step, ctls["inert"], True),
        (
            "unselected",
            "(c) with ctl.step(i): rank 0 of 2, profile_ranks=[1]",
            _loop_with_step,
            ctls["unselected"],
            True,
        ),
        (
            "window_outside",
            "(d) with ctl.step(i): rank 0 selected, window 10**9..10**9+1",
            _loop_with_step,
            ctls["window_outside"],
            True,
        ),
        (
            "on_demand",
            "(e) with ctl.step(i): on_demand=True only, rank 0, poller on",
            _loop_with_step,
            ctls["on_demand"],
            True,
        ),
        (
            "on_demand_window_outside",
            "(f) as (d), plus on_demand=True, poller on",
            _loop_with_step,
            ctls["on_demand_window_outside"],
            True,
        ),
        ("ref_with_prebuilt", "ref: with <prebuilt no-op object>", _loop_with_obj, _PrebuiltNoOp(), False),
        ("ref_nullcontext", "ref: with contextlib.nullcontext()", _loop_with_factory, contextlib.nullcontext, False),
        (
            "ref_contextmanager",
            "ref: with <@contextlib.contextmanager gen>()",
            _loop_with_factory,
            _generator_cm,
            False,
        ),
        ("ref_call_only", "ref: ctl.step(i) without with (inert)", _loop_call_step, ctls["inert"], False),
    ]
    bp_log = logging.getLogger("bridge_plugins")
    old_level = bp_log.level
    bp_log.setLevel(logging.ERROR)  # the window-outside controller warns at exit that its window was never reached
    per_iter: dict[str, list[float]] = {v[0]: [] for v in variants}
    rng = random.Random(seed)
    gc_was_enabled = gc.isenabled()
    try:
        with contextlib.ExitStack() as stack:
            for c in ctls.values():
                stack.enter_context(c)
            _check_controllers(ctls)
            order = list(variants)
            gc.disable()
            try:
                for v in order:  # warm-up round, not recorded
                    v[2](min(iters, 20_000), v[3])
                for _ in range(rounds):
                    rng.shuffle(order)
                    for name, _desc, fn, arg, _is_ctl in order:
                        per_iter[name].append(fn(iters, arg) / iters)
            finally:
                if gc_was_enabled:
                    gc.enable()
    finally:
        bp_log.setLevel(old_level)
        shutil.rmtree(tmp, ignore_errors=True)

    bare = per_iter["bare"]
    noop = per_iter["ref_with_prebuilt"]
    rows = []
    for name, desc, _fn, _arg, is_ctl in variants:
        vals = per_iter[name]
        over_bare = [v - b for v, b in zip(vals, bare, strict=False)]  # paired: same round
        over_noop = [v - b for v, b in zip(vals, noop, strict=False)]
        rows.append(
            {
                "name": name,
                "description": desc,
                "controller_variant": is_ctl,
                "median_ns_per_iter": statistics.median(vals),
                "min_ns_per_iter": min(vals),
                "max_ns_per_iter": max(vals),
                "overhead_vs_bare_us": statistics.median(over_bare) / 1000,
                "overhead_vs_bare_us_min_round": min(over_bare) / 1000,
                "overhead_vs_bare_us_max_round": max(over_bare) / 1000,
                "overhead_vs_with_prebuilt_us": statistics.median(over_noop) / 1000,
                "ns_per_iter_by_round": vals,
            }
        )
    worst = max(r["overhead_vs_bare_us"] for r in rows if r["controller_variant"])
    # on-demand on vs off, paired per round: (e) vs the inert (b), (f) vs (d)
    on_demand = {
        f"{on}_vs_{off}": statistics.median(a / b for a, b in zip(per_iter[on], per_iter[off], strict=False))
        for on, off in (("on_demand", "inert"), ("on_demand_window_outside", "window_outside"))
    }
    return {
        "on_demand_ratio": on_demand,
        "rounds": rounds,
        "iters_per_round": iters,
        "seed": seed,
        "gc_disabled_during_loops": True,
        "variants": rows,
        "worst_controller_overhead_us": worst,
        "target_us": TARGET_US,
        "meets_target": worst < TARGET_US,
    }


def print_micro(res: dict[str, Any]) -> None:
    print("\n== micro: per-step cost of `with controller.step(i):` around an empty body ==")
    print(
        f"{res['rounds']} rounds x {res['iters_per_round']:,} iterations per variant, variants in a shuffled order "
        f"each round, gc off while timing; overhead = median over rounds of (variant - bare loop of the same round)"
    )
    print(
        f"{'variant':<62} {'median':>9} {'min':>9} {'overhead vs bare':>17} {'(round range)':>19} {'vs prebuilt with':>17}"
    )
    print(f"{'':<62} {'ns/iter':>9} {'ns/iter':>9} {'us/step':>17} {'us':>19} {'us':>17}")
    for r in res["variants"]:
        rng_s = f"{r['overhead_vs_bare_us_min_round']:+.3f}..{r['overhead_vs_bare_us_max_round']:+.3f}"
        print(
            f"{r['description']:<62} {r['median_ns_per_iter']:>9.1f} {r['min_ns_per_iter']:>9.1f} "
            f"{r['overhead_vs_bare_us']:>+17.3f} {rng_s:>19} {r['overhead_vs_with_prebuilt_us']:>+17.3f}"
        )
    for pair, ratio in res["on_demand_ratio"].items():
        print(f"on-demand on/off, {pair.replace('_vs_', ' vs ')}: x{ratio:.3f} (median of per-round ratios)")
    verdict = "PASS" if res["meets_target"] else "FAIL"
    print(
        f"worst controller fast path: {res['worst_controller_overhead_us']:.3f} us/step "
        f"(target < {res['target_us']:.0f} us): {verdict}"
    )


# --------------------------------------------------------------------------- macro: real training step
def run_macro(rounds: int, steps: int, warmup: int, threads: int, seed: int) -> dict[str, Any]:
    import torch

    from recipes.config import ConfigContainer
    from recipes.model import build_training
    from recipes.model import train_step as recipe_train_step

    if threads > 0:
        torch.set_num_threads(threads)
    cfg = ConfigContainer()
    mc, tc, oc = cfg.model, cfg.train, cfg.optimizer
    torch.manual_seed(tc.seed)
    device = torch.device("cpu")
    model, opt, data = build_training(mc, tc.seq_length, tc.micro_batch_size, device, tc.seed, oc.lr, oc.weight_decay)

    def train_step() -> Any:  # the body of recipes.train.pretrain's loop
        return recipe_train_step(model, opt, data)

    pc = time.perf_counter

    def run_bare(first: int, k: int, _: Any) -> list[float]:
        out = []
        for _step in range(first, first + k):
            t0 = pc()
            train_step()
            out.append(pc() - t0)
        return out

    def run_ctl(first: int, k: int, controller: Any) -> list[float]:
        out = []
        for step in range(first, first + k):
            t0 = pc()
            with controller.step(step):
                train_step()
            out.append(pc() - t0)
        return out

    tmp = tempfile.mkdtemp(prefix="bp-bench-")
    ctls = _make_controllers(tmp)
    variants = [
        ("bare", "no controller", run_bare, None),
        ("bare_again", "no controller, again (A/A noise control)", run_bare, None),
        ("unselected", "controller, unselected rank (profile_ranks=[1], rank 0)", run_ctl, ctls["unselected"]),
        ("window_outside", "controller, selected rank, window 10**9..10**9+1", run_ctl, ctls["window_outside"]),
        ("on_demand", "controller, on_demand=True only (poller on)", run_ctl, ctls["on_demand"]),
    ]
    bp_log = logging.getLogger("bridge_plugins")
    old_level = bp_log.level
    bp_log.setLevel(logging.ERROR)
    times: dict[str, list[float]] = {v[0]: [] for v in variants}
    round_medians: dict[str, list[float]] = {v[0]: [] for v in variants}
    rng = random.Random(seed)
    step = 0
    t_start = pc()
    try:
        with contextlib.ExitStack() as stack:
            for c in ctls.values():
                stack.enter_context(c)
            _check_controllers(ctls)
            for _name, _d, fn, arg in variants:  # warm-up, not recorded
                fn(step, warmup, arg)
                step += warmup
            order = list(variants)
            for _ in range(rounds):
                rng.shuffle(order)
                for name, _d, fn, arg in order:
                    t = fn(step, steps, arg)
                    step += steps
                    times[name].extend(t)
                    round_medians[name].append(statistics.median(t))
    finally:
        bp_log.setLevel(old_level)
        shutil.rmtree(tmp, ignore_errors=True)
    elapsed = pc() - t_start

    base = statistics.median(times["bare"])
    rows = []
    for name, desc, _fn, _arg in variants:
        med = statistics.median(times[name])
        ratios = [m / b for m, b in zip(round_medians[name], round_medians["bare"], strict=False)]
        rows.append(
            {
                "name": name,
                "description": desc,
                "median_step_ms": med * 1000,
                "ratio_to_bare": med / base,
                "overhead_pct": (med / base - 1) * 100,
                "per_round_ratio_min": min(ratios),
                "per_round_ratio_max": max(ratios),
                "round_median_ms": [m * 1000 for m in round_medians[name]],
            }
        )
    return {
        "rounds": rounds,
        "steps_per_round": steps,
        "warmup_steps_per_variant": warmup,
        "torch_threads": torch.get_num_threads(),
        "device": "cpu",
        "elapsed_s": elapsed,
        "model": vars(mc),
        "micro_batch_size": tc.micro_batch_size,
        "seq_length": tc.seq_length,
        "variants": rows,
    }


def print_macro(res: dict[str, Any], micro: dict[str, Any] | None) -> None:
    print(
        f"\n== macro: recipe training step (TinyGPT {res['model']}, batch {res['micro_batch_size']}x"
        f"{res['seq_length']}, CPU, torch threads {res['torch_threads']}) =="
    )
    print(
        f"{res['rounds']} rounds x {res['steps_per_round']} steps per variant after {res['warmup_steps_per_variant']} "
        f"warm-up steps each, variants shuffled per round; median over all timed steps ({res['elapsed_s']:.1f} s)"
    )
    print(f"{'variant':<58} {'median ms':>10} {'ratio':>9} {'overhead':>9} {'per-round ratio range':>23}")
    for r in res["variants"]:
        rr = f"{r['per_round_ratio_min']:.4f}..{r['per_round_ratio_max']:.4f}"
        print(
            f"{r['description']:<58} {r['median_step_ms']:>10.3f} {r['ratio_to_bare']:>8.4f}x "
            f"{r['overhead_pct']:>+8.2f}% {rr:>23}"
        )
    aa = next(r for r in res["variants"] if r["name"] == "bare_again")
    print(
        f"noise floor: the A/A control (the same bare loop twice) differs by {aa['overhead_pct']:+.2f}%; "
        f"differences of that size are noise, not controller cost"
    )
    if micro is not None:
        base_ms = res["variants"][0]["median_step_ms"]
        us = micro["worst_controller_overhead_us"]
        print(
            f"expected from the micro-benchmark: {us:.3f} us / {base_ms:.3f} ms = {us / (base_ms * 1000) * 100:.5f}% per step"
        )


# --------------------------------------------------------------------------- import check
def _parse_importtime(stderr: str) -> list[dict[str, Any]]:
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header line
        raw = parts[2].rstrip()
        name = raw.strip()
        depth = (len(raw) - len(raw.lstrip()) - 1) // 2
        rows.append({"self_us": int(parts[0]), "cumulative_us": int(parts[1]), "module": name, "depth": depth})
    return rows


def _is_nemo_run(mod: str) -> bool:
    return mod == "nemo_run" or mod.startswith("nemo_run.")


def run_import_check(top: int = 12) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"):
        env.pop(k, None)
    stmt = "import bridge_plugins.runtime"
    it_cmd = [sys.executable, "-X", "importtime", "-c", stmt]
    p = subprocess.run(it_cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{shlex.join(it_cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    rows = _parse_importtime(p.stderr)
    by_name = {r["module"]: r for r in rows}
    parser_ok = "bridge_plugins.runtime.controller" in by_name  # the parser sees nested modules
    nemo_importtime = sorted({r["module"] for r in rows if _is_nemo_run(r["module"])})

    probe = (
        "import sys, time, json, importlib.util\n"
        "t = time.perf_counter()\n"
        f"{stmt}\n"
        "dt = time.perf_counter() - t\n"
        "spec = importlib.util.find_spec('nemo_run')\n"
        "print(json.dumps({'import_s': dt, 'modules': len(sys.modules),\n"
        "  'nemo_run_modules': sorted(m for m in sys.modules if m == 'nemo_run' or m.startswith('nemo_run.')),\n"
        "  'torch_imported': 'torch' in sys.modules,\n"
        "  'nemo_run_installed_at': spec.origin if spec else None}))\n"
    )
    q = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if q.returncode != 0:
        raise RuntimeError(f"sys.modules probe failed ({q.returncode}):\n{q.stderr[-3000:]}")
    mods = json.loads(q.stdout.strip().splitlines()[-1])

    def cum(name: str) -> int | None:
        return by_name[name]["cumulative_us"] if name in by_name else None

    return {
        "command": shlex.join(it_cmd),
        "parser_ok": parser_ok,
        "nemo_run_in_importtime": nemo_importtime,
        "nemo_run_in_sys_modules": mods["nemo_run_modules"],
        "nemo_run_installed_at": mods["nemo_run_installed_at"],
        "torch_imported": mods["torch_imported"],
        "modules_after_import": mods["modules"],
        "wall_import_s": mods["import_s"],
        "cumulative_us": {
            n: cum(n)
            for n in (
                "bridge_plugins",
                "bridge_plugins.config.profiling",
                "bridge_plugins.runtime",
                "bridge_plugins.runtime.controller",
            )
        },
        "top": sorted(rows, key=lambda r: -r["cumulative_us"])[:top],
        "ok": parser_ok and not nemo_importtime and not mods["nemo_run_modules"],
    }


def print_import_check(res: dict[str, Any]) -> None:
    print("\n== import check: `import bridge_plugins.runtime` in a fresh interpreter ==")
    print(f"$ {res['command']}")
    c = res["cumulative_us"]
    fmt = lambda v: "n/a" if v is None else f"{v / 1000:.1f} ms"  # noqa: E731
    print(
        f"cumulative import time of bridge_plugins.runtime: {fmt(c['bridge_plugins.runtime'])}, which includes "
        f"the parent package bridge_plugins {fmt(c['bridge_plugins'])} (bridge_plugins.config.profiling "
        f"{fmt(c['bridge_plugins.config.profiling'])}) and bridge_plugins.runtime.controller "
        f"{fmt(c['bridge_plugins.runtime.controller'])}"
    )
    print(f"wall time of the import statement without -X importtime: {res['wall_import_s'] * 1000:.1f} ms")
    print(f"modules loaded after the import: {res['modules_after_import']}; torch imported: {res['torch_imported']}")
    print(f"top {len(res['top'])} by cumulative time (us):")
    print(f"  {'self':>8} {'cumul':>8}  module")
    for r in res["top"]:
        print(f"  {r['self_us']:>8} {r['cumulative_us']:>8}  {'  ' * r['depth']}{r['module']}")
    inst = res["nemo_run_installed_at"] or "NOT installed (the check proves less)"
    print(f"nemo_run is installed: {inst}")
    print(
        f"nemo_run in -X importtime output: {res['nemo_run_in_importtime'] or 'none'}; "
        f"in sys.modules: {res['nemo_run_in_sys_modules'] or 'none'}"
    )
    if not res["parser_ok"]:
        print("FAIL: the importtime parser did not find bridge_plugins.runtime.controller; check the parser")
    print("import check:", "PASS (nemo_run not imported)" if res["ok"] else "FAIL")


# --------------------------------------------------------------------------- main
def _header() -> dict[str, Any]:
    import torch

    cmd = shlex.join(getattr(sys, "orig_argv", [sys.executable] + sys.argv))
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    return {
        "command": cmd,
        "cwd": os.getcwd(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "python_impl": platform.python_implementation(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpus_usable": cpus,
        "loadavg_at_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="fewer rounds (micro 7x50k, macro 3x10 steps)")
    ap.add_argument("--import-check", action="store_true", help="run only the import check")
    ap.add_argument("--all", action="store_true", help="micro + macro + import check")
    ap.add_argument("--skip-macro", action="store_true", help="skip the training-step benchmark")
    ap.add_argument("--rounds", type=int, help="micro rounds (default 30, quick 7)")
    ap.add_argument("--iters", type=int, help="micro iterations per variant per round (default 200000, quick 50000)")
    ap.add_argument("--macro-rounds", type=int, help="macro rounds (default 5, quick 3)")
    ap.add_argument("--macro-steps", type=int, help="macro steps per variant per round (default 30, quick 10)")
    ap.add_argument("--warmup", type=int, help="macro warm-up steps per variant (default 10, quick 3)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for the macro run (0: leave default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the variant order shuffle")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    a = ap.parse_args(argv)

    q = a.quick
    rounds = a.rounds or (7 if q else 30)
    iters = a.iters or (50_000 if q else 200_000)
    m_rounds = a.macro_rounds or (3 if q else 5)
    m_steps = a.macro_steps or (10 if q else 30)
    warmup = a.warmup if a.warmup is not None else (3 if q else 10)
    do_micro = not a.import_check
    do_macro = not a.import_check and not a.skip_macro
    do_import = a.import_check or a.all

    head = _header()
    print(f"command: {head['command']}")
    print(f"cwd: {head['cwd']}")
    print(f"date: {head['date']}")
    print(
        f"python {head['python']} ({head['python_impl']}), torch {head['torch']}, {head['platform']}, "
        f"{head['cpus_usable']} usable CPU(s), load average at start {head['loadavg_at_start']}"
    )
    results: dict[str, Any] = {"meta": head}
    rc = 0
    if do_micro:
        results["micro"] = run_micro(rounds, iters, a.seed)
        print_micro(results["micro"])
    if do_macro:
        results["macro"] = run_macro(m_rounds, m_steps, warmup, a.threads, a.seed)
        print_macro(results["macro"], results.get("micro"))
    if do_import:
        results["import_check"] = run_import_check()
        print_import_check(results["import_check"])
        if not results["import_check"]["ok"]:
            rc = 1
    results["meta"]["loadavg_at_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
        print(f"\nJSON written to {a.json}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
