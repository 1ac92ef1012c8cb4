#!/usr/bin/env bash
# The whole suite under CPU load: scripts/loaded_runs.sh [N] runs scripts/test.sh N times in a row
# (default 3) with `stress-ng --cpu 2` beside it (two busy loops where stress-ng is missing), and
# stops at the first run that fails. One line per run: its exit code, seconds and pytest's summary.
# Extra load is ours alone: started here, stopped here by PID (also on Ctrl-C).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1-3}
if ! [[ "$runs" =~ ^[1-9][0-9]{0,2}$ ]]; then
  echo "usage: scripts/loaded_runs.sh [N]: N, the number of runs, is a whole number from 1 to 999 (got '$runs')" >&2
  exit 2
fi
log_dir=${LOADED_RUNS_LOGS:-$(mktemp -d /tmp/loaded-runs.XXXXXX)}
mkdir -p "$log_dir"
load_pids=()
stop_load() {
  for pid in "${load_pids[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
}
trap stop_load EXIT
trap 'exit 130' INT TERM
if command -v stress-ng >/dev/null; then
  stress-ng --cpu 2 --timeout 0 --quiet &
  load_pids+=($!)
  load="stress-ng --cpu 2"
else
  for _ in 1 2; do (while :; do :; done) & load_pids+=($!); done
  load="two busy loops"
fi
echo "[loaded] $runs runs of scripts/test.sh beside $load (pids ${load_pids[*]}); logs in $log_dir"
for k in $(seq 1 "$runs"); do
  s=$(date +%s)
  bash scripts/test.sh > "$log_dir/run$k.log" 2>&1 < /dev/null
  rc=$?
  summary=$(grep -E "^=+ .*(passed|failed|error).* in [0-9.]+s" "$log_dir/run$k.log" | tail -n 1)
  echo "[loaded] run $k: exit $rc after $(( $(date +%s) - s )) s; $summary"
  if [ "$rc" != 0 ]; then
    grep -E "^(FAILED|ERROR) " "$log_dir/run$k.log" | head -n 20
    exit "$rc"
  fi
done
echo "[loaded] $runs of $runs runs passed in a row"
