#!/usr/bin/env bash
# The network of the multi-node cluster on one machine (used by up.sh and down.sh).
#
#   net.sh up N    a bridge $BRIDGE_SLURM_BRIDGE with $BRIDGE_SLURM_SUBNET.1/24 in the root
#                  namespace; per node nK (K=1..N) a network namespace $(node_netns nK) holding the
#                  inside end (eth0, $BRIDGE_SLURM_SUBNET.(10+K)) of a veth pair whose other end
#                  (bpv-nK) is on the bridge; and a marked block in /etc/hosts mapping nK to it.
#   net.sh down    removes exactly what net.sh up recorded in $BRIDGE_SLURM_STATE/net.list, and
#                  the marked /etc/hosts block. Safe when nothing is there.
#
# Every link or namespace is recorded right after it is created, so a failure half-way is undone
# by `down`. Nothing that this script did not create is touched: `up` refuses to start when the
# bridge name or the subnet is already in use on this machine.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$SCRIPT_DIR/env.sh"

STATE_DIR="$BRIDGE_SLURM_STATE"
NET_LIST="$STATE_DIR/net.list"
BR="$BRIDGE_SLURM_BRIDGE"
SUBNET="$BRIDGE_SLURM_SUBNET"
HOSTS=/etc/hosts

log() { echo "[slurm-net] $*"; }
die() { echo "[slurm-net] ERROR: $*" >&2; exit 1; }

node_ip() { echo "$SUBNET.$((10 + $1))"; }
record() { echo "$1 $2" >>"$NET_LIST"; }

# /etc/hosts without our marked block. Written in place (cat >), not replaced: in containers
# /etc/hosts is often a bind mount that cannot be renamed over.
hosts_without_block() {
    awk -v b="$BRIDGE_SLURM_HOSTS_BEGIN" -v e="$BRIDGE_SLURM_HOSTS_END" \
        '$0 == b { skip = 1; next } $0 == e { skip = 0; next } !skip' "$HOSTS"
}

remove_hosts_block() {
    grep -qxF "$BRIDGE_SLURM_HOSTS_BEGIN" "$HOSTS" || return 0
    local rest
    rest=$(hosts_without_block)
    printf '%s\n' "$rest" >"$HOSTS"
    log "removed the node block from $HOSTS"
}

net_down() {
    if [[ -f $NET_LIST ]]; then
        # Reverse order of creation: veths (deleting one end deletes its pair), namespaces, bridge.
        local kind name
        while read -r kind name; do
            case $kind in
                veth | bridge)
                    if ip link show "$name" >/dev/null 2>&1; then
                        ip link del "$name" && log "deleted $kind $name"
                    fi
                    ;;
                netns)
                    if [[ -e /var/run/netns/$name ]]; then
                        ip netns del "$name" && log "deleted netns $name"
                    fi
                    ;;
                *) log "ignoring unknown record '$kind $name' in $NET_LIST" ;;
            esac
        done < <(tac "$NET_LIST")
        rm -f "$NET_LIST"
    fi
    remove_hosts_block
}

net_up() {
    local n=$1 k ns veth
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 2 && n <= 200)) || die "node count '$n': use 2..200"
    [[ $SUBNET =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || die "BRIDGE_SLURM_SUBNET='$SUBNET': use the first three octets of a 10.x.y.0/24"
    [[ -f $NET_LIST ]] && die "$NET_LIST exists: run '$0 down' first"
    if ip link show "$BR" >/dev/null 2>&1; then
        die "a link named $BR exists but was not created by these scripts; set BRIDGE_SLURM_BRIDGE to another name"
    fi
    local re="^${SUBNET//./\\.}\\."
    if ip -4 route show | awk '{ print $1 }' | grep -q "$re" || ip -4 -o addr show | awk '{ print $4 }' | grep -q "$re"; then
        die "$SUBNET.0/24 is already in use on this machine; set BRIDGE_SLURM_SUBNET to a free 10.x.y"
    fi
    for ((k = 1; k <= n; k++)); do
        ns=$(node_netns "n$k")
        [[ -e /var/run/netns/$ns ]] && die "netns $ns exists but was not recorded by these scripts"
    done
    mkdir -p "$STATE_DIR"
    : >"$NET_LIST"

    ip link add "$BR" type bridge || die "cannot create bridge $BR (no bridge support in this kernel?); use 'up.sh --nodes 1'"
    record bridge "$BR"
    ip addr add "$SUBNET.1/24" dev "$BR"
    ip link set "$BR" up
    for ((k = 1; k <= n; k++)); do
        ns=$(node_netns "n$k") veth="bpv-n$k"
        ip netns add "$ns" || die "cannot create network namespace $ns; use 'up.sh --nodes 1'"
        record netns "$ns"
        ip link add "$veth" type veth peer name eth0 netns "$ns" ||
            die "cannot create veth pair $veth (no veth support in this kernel?); use 'up.sh --nodes 1'"
        record veth "$veth"
        ip link set "$veth" master "$BR" up
        ip -n "$ns" addr add "$(node_ip "$k")/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
    done

    local rest block=$BRIDGE_SLURM_HOSTS_BEGIN
    for ((k = 1; k <= n; k++)); do block+=$'\n'"$(node_ip "$k") n$k"; done
    block+=$'\n'$BRIDGE_SLURM_HOSTS_END
    rest=$(hosts_without_block)
    printf '%s\n%s\n' "$rest" "$block" >"$HOSTS"
    log "bridge $BR $SUBNET.1/24; nodes: $(for ((k = 1; k <= n; k++)); do printf 'n%d=%s ' "$k" "$(node_ip "$k")"; done)"
}

[[ $(id -u) -eq 0 ]] || die "must run as root"
case "${1:-}" in
    up) net_up "${2:-}" ;;
    down) net_down ;;
    *) die "usage: $0 up N | down" ;;
esac
