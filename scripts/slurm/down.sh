#!/usr/bin/env bash
# Stop the Slurm cluster started by scripts/slurm/up.sh: exactly the PIDs it recorded in
# $BRIDGE_SLURM_STATE/<name>[@<node>].pid (the slurmds first, then slurmctld, slurmdbd, mariadbd,
# munged), then remove the network it recorded (net.sh down: veths, namespaces, bridge, the
# /etc/hosts block). Never kills by name. Safe to run when nothing is up. SIGTERM, wait up to
# BRIDGE_SLURM_STOP_TIMEOUT (15) s, then SIGKILL.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$SCRIPT_DIR/env.sh"

STATE_DIR="$BRIDGE_SLURM_STATE"
STOP_TIMEOUT="${BRIDGE_SLURM_STOP_TIMEOUT:-15}"
# Reverse of up.sh's start order (slurmd@<node> for every node, first).
DAEMONS=(slurmctld slurmdbd mariadbd munged)

log() { echo "[slurm-down] $*"; }

if ! compgen -G "$STATE_DIR/*.pid" >/dev/null && [[ ! -f $STATE_DIR/net.list && ! -f $STATE_DIR/nodes ]]; then
    log "nothing recorded in $STATE_DIR; nothing to stop"
    bash "$SCRIPT_DIR/net.sh" down   # only an /etc/hosts block left by an interrupted run, if any
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

stop_recorded() {
    local pidfile=$1 name pid
    name=$(pid_file_comm "$pidfile")
    pid=$(tr -d '[:space:]' <"$pidfile")
    if ! pid_alive "$name" "$pid"; then
        log "$(basename "$pidfile" .pid) (pid ${pid:-?}) not running"
        rm -f "$pidfile"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$(($(date +%s) + STOP_TIMEOUT))
    while pid_alive "$name" "$pid" && (($(date +%s) < deadline)); do
        sleep 0.1
    done
    if pid_alive "$name" "$pid"; then
        log "$(basename "$pidfile" .pid) (pid $pid) still running after ${STOP_TIMEOUT}s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        while pid_alive "$name" "$pid"; do sleep 0.1; done
        log "stopped $(basename "$pidfile" .pid) (pid $pid, killed)"
    else
        log "stopped $(basename "$pidfile" .pid) (pid $pid)"
    fi
    rm -f "$pidfile"
}

for pidfile in "$STATE_DIR"/slurmd@*.pid "$STATE_DIR"/slurmd.pid; do
    if [[ -f $pidfile ]]; then stop_recorded "$pidfile"; fi
done
for name in "${DAEMONS[@]}"; do
    if [[ -f $STATE_DIR/$name.pid ]]; then stop_recorded "$STATE_DIR/$name.pid"; fi
done

bash "$SCRIPT_DIR/net.sh" down
rm -f "$STATE_DIR/nodes"
