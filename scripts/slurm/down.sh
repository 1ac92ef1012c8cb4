#!/usr/bin/env bash
# Stop the single-node Slurm cluster started by scripts/slurm/up.sh: exactly the PIDs it recorded
# in $BRIDGE_SLURM_STATE/<name>.pid, in reverse start order. Never kills by name. Safe to run when
# nothing is up. SIGTERM, wait up to BRIDGE_SLURM_STOP_TIMEOUT (15) s, then SIGKILL.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$SCRIPT_DIR/env.sh"

STATE_DIR="$BRIDGE_SLURM_STATE"
STOP_TIMEOUT="${BRIDGE_SLURM_STOP_TIMEOUT:-15}"
# Reverse of up.sh's start order. The name is also the process name (/proc/PID/comm).
DAEMONS=(slurmd slurmctld slurmdbd mariadbd munged)

log() { echo "[slurm-down] $*"; }


if ! compgen -G "$STATE_DIR/*.pid" >/dev/null; then
    log "nothing recorded in $STATE_DIR; nothing to stop"
    exit 0
fi

# Cancel jobs still in the cluster while the controller is ours and up, so that no job steps
# (slurmstepd and the job's processes) outlive slurmd.
ctld_pid=$(cat "$STATE_DIR/slurmctld.pid" 2>/dev/null || true)
if pid_alive slurmctld "$ctld_pid" && command -v squeue >/dev/null; then
    jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n $jobs ]]; then
        log "cancelling jobs: $(echo $jobs)"
        # shellcheck disable=SC2086
        timeout 10 scancel $jobs 2>/dev/null || true
        deadline=$(($(date +%s) + STOP_TIMEOUT))
        while [[ -n $(timeout 10 squeue -h -o %i 2>/dev/null || true) ]] && (($(date +%s) < deadline)); do
            sleep 0.25
        done
    fi
fi

for name in "${DAEMONS[@]}"; do
    pidfile="$STATE_DIR/$name.pid"
    [[ -f $pidfile ]] || continue
    pid=$(tr -d '[:space:]' <"$pidfile")
    if ! pid_alive "$name" "$pid"; then
        log "$name (pid ${pid:-?}) not running"
        rm -f "$pidfile"
        continue
    fi
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$(($(date +%s) + STOP_TIMEOUT))
    while pid_alive "$name" "$pid" && (($(date +%s) < deadline)); do
        sleep 0.1
    done
    if pid_alive "$name" "$pid"; then
        log "$name (pid $pid) still running after ${STOP_TIMEOUT}s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        while pid_alive "$name" "$pid"; do sleep 0.1; done
        log "stopped $name (pid $pid, killed)"
    else
        log "stopped $name (pid $pid)"
    fi
    rm -f "$pidfile"
done
