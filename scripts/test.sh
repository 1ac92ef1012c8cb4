#!/usr/bin/env bash
# The whole test suite: set up the venv, bring up the local Slurm cluster (2 nodes,
# scripts/slurm/up.sh) when the selected tests include Slurm tests and this machine can (root and
# apt-get available), run pytest, and stop the daemons this script started. With no arguments
# pytest runs twice: the light tests (below) on two workers, then the others one at a time.
# Extra arguments go to one pytest run (e.g. scripts/test.sh -k controller, which starts no daemons).
# Before pytest: scripts/checks.sh (ruff, mypy, lint-imports); a failed check fails the run.
#
# scripts/test.sh --quick [pytest args]: the developer loop. The same checks, then the tests that
# need no Slurm cluster, no real launch (torchrun, NeMo Run), no browser and no HTA and are not
# marked slow or big, on two workers (pytest-xdist); installs neither Chromium nor HTA nor nsys.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
quick=0
if [ "${1:-}" = "--quick" ]; then
  quick=1
  shift
fi
bash scripts/setup.sh
# The light tests: no Slurm cluster, no real launch, not slow or big. They run on two workers, each
# test file on one of them (module fixtures are made once, file order kept); the others one at a
# time (real jobs, clusters and timings that two cores shared with another test would stretch).
heavy_marks="slurm or integration or slow or big"
light=(-m "not ($heavy_marks)" -n 2 --dist loadfile)
heavy=(-m "$heavy_marks")
if [ "$quick" = 1 ]; then
  set -- "${light[@]}" --ignore=tests/analysis/test_hta.py --ignore=tests/analysis/test_report_browser.py "$@"
  export BRIDGE_SKIP_SLURM=1
else
  bash scripts/install_hta.sh  # test-only: HTA for the cross-check in tests/analysis/test_hta.py (~30 s)
  bash scripts/install_tbprofiler.sh  # test-only: torch-tb-profiler for tests/analysis/test_step_breakdown_tb.py (~5 s)
  # test-only: Megatron Bridge 0.6.2's files in .mb/ for tests/plugins/test_mb_real_package.py (~5 s; it fails under CI=true without them)
  bash scripts/install_mb.sh || echo "[test] Megatron Bridge 0.6.2 could not be fetched (see above)"
  # test-only: Debian's chromium for tests/analysis/test_report_browser.py (root + apt-get; that test says why otherwise)
  bash scripts/install_chromium.sh || echo "[test] chromium could not be installed (see above)"
  # test-only: Debian's Nsight Systems 2022.4 (non-free) for the real-nsys tests (root + apt-get; they skip and say why otherwise)
  bash scripts/install_nsys.sh || echo "[test] nsys could not be installed (see above)"
fi

started_slurm=0
stop_slurm() {
  if [ "$started_slurm" = 1 ]; then bash scripts/slurm/down.sh || true; fi
}
trap stop_slurm EXIT
# Which tests pytest would run with these arguments: no Slurm test selected, no cluster.
selected=$(.venv/bin/python scripts/slurm/tests_selected.py "$@" 2>&1 | tail -n 1 || true)
if [ "$selected" = "slurm tests selected: 0" ]; then
  echo "[test] no Slurm tests selected; not bringing Slurm up"
elif [ "${BRIDGE_SKIP_SLURM:-0}" = 1 ]; then
  export BRIDGE_SLURM_UNAVAILABLE="BRIDGE_SKIP_SLURM=1 was set"
elif [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  export BRIDGE_SLURM_UNAVAILABLE="bringing up Slurm needs root and apt-get (scripts/slurm/up.sh)"
else
  s=$(date +%s)
  if out=$(bash scripts/slurm/up.sh 2>&1); then
    echo "$out"
    # a cluster that was already up (started earlier by hand) is left running afterwards
    if ! grep -q "already up" <<<"$out"; then started_slurm=1; fi
    echo "[test] Slurm cluster up in $(( $(date +%s) - s )) s"
  else
    echo "$out"
    started_slurm=1  # stop whatever a failed bring-up left running (down.sh stops only what it recorded)
    export BRIDGE_SLURM_UNAVAILABLE="scripts/slurm/up.sh failed (see its output above)"
  fi
fi
set +e
bash scripts/checks.sh  # ruff, mypy, lint-imports: pytest runs either way, a failed check fails the run
checks=$?
if [ "$quick" = 0 ] && [ $# = 0 ]; then
  # the full lane as CI runs it: the light tests (HTA's and the browser's among them: installed
  # above) on two workers, then the heavy ones; together every test, each once
  .venv/bin/python -m pytest -ra --durations=5 "${light[@]}"
  rc=$?
  if [ "$rc" != 2 ]; then  # 2: interrupted (Ctrl-C), or pytest could not start: not on to the heavy ones
    .venv/bin/python -m pytest -ra --durations=15 "${heavy[@]}"
    heavy_rc=$?
    if [ "$rc" = 0 ]; then rc=$heavy_rc; fi
  fi
else
  .venv/bin/python -m pytest -ra --durations=15 "$@"
  rc=$?
fi
set -e
echo "[test] checks exit code $checks; pytest exit code $rc after $(( $(date +%s) - start )) s in all"
if [ "$rc" = 0 ] && [ "$checks" != 0 ]; then rc=$checks; fi
exit $rc
