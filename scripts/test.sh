#!/usr/bin/env bash
# The whole test suite: set up the venv, bring up the local Slurm cluster (2 nodes,
# scripts/slurm/up.sh) when the selected tests include Slurm tests and this machine can (root and
# apt-get available), run pytest, and stop the daemons this script started.
# Extra arguments go to pytest (e.g. scripts/test.sh -k controller, which starts no daemons).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/setup.sh
bash scripts/install_hta.sh  # test-only: HTA for the cross-check in tests/analysis/test_hta.py (~30 s)
# test-only: Debian's chromium for tests/analysis/test_report_browser.py (root + apt-get; that test says why otherwise)
bash scripts/install_chromium.sh || echo "[test] chromium could not be installed (see above)"

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
# lint and format (ruff, configured in pyproject.toml): a failure fails the run after pytest
.venv/bin/ruff check . && .venv/bin/ruff format --check .
lint=$?
.venv/bin/python -m pytest -ra --durations=15 "$@"
rc=$?
set -e
echo "[test] ruff exit code $lint; pytest exit code $rc after $(( $(date +%s) - start )) s in all"
if [ "$rc" = 0 ] && [ "$lint" != 0 ]; then rc=$lint; fi
exit $rc
