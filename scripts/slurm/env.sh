# shellcheck shell=bash
# Variables (and one helper) shared by scripts/slurm/up.sh and down.sh.
# Source it (`. scripts/slurm/env.sh`); every value can be overridden from the environment.
export BRIDGE_SLURM_CLUSTER="${BRIDGE_SLURM_CLUSTER:-ci}"
export BRIDGE_SLURM_ACCOUNT="${BRIDGE_SLURM_ACCOUNT:-bridge}"
export BRIDGE_SLURM_PARTITION="${BRIDGE_SLURM_PARTITION:-debug}"
# Where up.sh records the PIDs of the daemons it started (one <name>.pid per daemon).
export BRIDGE_SLURM_STATE="${BRIDGE_SLURM_STATE:-/run/bridge-slurm}"

# pid_alive NAME PID: PID is alive and is a process called NAME, so a recycled PID is never
# taken for one of our daemons (up.sh and down.sh both use it).
pid_alive() {
    local name=$1 pid=$2 comm
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name" ]] || return 1
    # A zombie (exited, not yet reaped) counts as gone.
    local stat
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}
