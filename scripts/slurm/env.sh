# shellcheck shell=bash
# Variables (and helpers) shared by scripts/slurm/up.sh, net.sh and down.sh.
# Source it (`. scripts/slurm/env.sh`); every value can be overridden from the environment.
export BRIDGE_SLURM_CLUSTER="${BRIDGE_SLURM_CLUSTER:-ci}"
export BRIDGE_SLURM_ACCOUNT="${BRIDGE_SLURM_ACCOUNT:-bridge}"
export BRIDGE_SLURM_PARTITION="${BRIDGE_SLURM_PARTITION:-debug}"
# Where up.sh records what it started and created: <daemon>.pid (slurmd@<node>.pid per node),
# net.list (bridge, namespaces, veths) and nodes (the mode it was brought up in).
export BRIDGE_SLURM_STATE="${BRIDGE_SLURM_STATE:-/run/bridge-slurm}"
# Compute nodes: 1 = the machine itself is the node (quick); N >= 2 = nodes n1..nN, each in its
# own network namespace and UTS namespace (own address, own host name) on a bridge of ours.
export BRIDGE_SLURM_NODES="${BRIDGE_SLURM_NODES:-2}"
# The bridge and its private /24 (first three octets). Used only on that bridge: the bridge gets
# .1, node nK gets .(10+K). up.sh refuses to start if anything else on the machine routes it.
export BRIDGE_SLURM_BRIDGE="${BRIDGE_SLURM_BRIDGE:-bpslurm0}"
export BRIDGE_SLURM_SUBNET="${BRIDGE_SLURM_SUBNET:-10.197.23}"
# Marks the block up.sh adds to /etc/hosts (node names); down.sh removes exactly that block.
BRIDGE_SLURM_HOSTS_BEGIN="# >>> bridge-plugins slurm nodes (scripts/slurm/net.sh) >>>"
BRIDGE_SLURM_HOSTS_END="# <<< bridge-plugins slurm nodes <<<"

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

# The network namespace of node nK (net.sh creates it, up.sh runs the node's slurmd in it).
node_netns() { echo "bpslurm-$1"; }

# Pid files are named <process name>[@<node>].pid: the process name is what pid_alive checks.
pid_file_comm() { local base=${1##*/}; base=${base%.pid}; echo "${base%@*}"; }
