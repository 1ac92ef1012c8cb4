#!/usr/bin/env bash
# Bring up a real Slurm cluster (munge + MariaDB + slurmdbd + slurmctld + one slurmd per node) on
# this machine, for tests that drive NeMo Run's SlurmExecutor. Debian 12, run as root, no systemd.
#
#   up.sh [--nodes N]     N=1: the machine itself is the only node (quickest).
#                         N>=2 (default $BRIDGE_SLURM_NODES, 2): nodes n1..nN, each slurmd in its
#                         own network namespace (own address on a bridge of ours, see net.sh) and
#                         own UTS namespace (`hostname` is the node name).
#
# Idempotent: when the daemons this script started are still alive, in the mode asked for, and
# the cluster answers, it prints one line and exits 0. Otherwise it stops whatever it had started
# before (by recorded PID, see down.sh), then starts everything again. Every PID it starts is
# recorded in $BRIDGE_SLURM_STATE/<name>[@<node>].pid; scripts/slurm/down.sh stops exactly those.
#
# Facts behind the settings: docs/slurm.md (the traps, and why each setting is so).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=env.sh
. "$SCRIPT_DIR/env.sh"

NODES="$BRIDGE_SLURM_NODES"
while (($#)); do
    case $1 in
        --nodes) NODES=${2:-}; shift 2 || { echo "[slurm-up] ERROR: --nodes needs a value" >&2; exit 2; } ;;
        --nodes=*) NODES=${1#--nodes=}; shift ;;
        *) echo "[slurm-up] ERROR: unknown argument '$1' (usage: up.sh [--nodes N])" >&2; exit 2 ;;
    esac
done
if ! [[ $NODES =~ ^[0-9]+$ ]] || ((NODES < 1 || NODES > 200)); then
    echo "[slurm-up] ERROR: --nodes '$NODES': use a whole number from 1 to 200" >&2
    exit 2
fi

CLUSTER="$BRIDGE_SLURM_CLUSTER"
ACCOUNT="$BRIDGE_SLURM_ACCOUNT"
PARTITION="$BRIDGE_SLURM_PARTITION"
STATE_DIR="$BRIDGE_SLURM_STATE"
READY_TIMEOUT="${BRIDGE_SLURM_READY_TIMEOUT:-60}"   # seconds per daemon

SLURM_CONF=/etc/slurm/slurm.conf
SLURMDBD_CONF=/etc/slurm/slurmdbd.conf
LOG_DIR=/var/log/slurm
MUNGE_LOG=/var/log/munge/munged.log
MUNGE_PID=/run/munge/munged.pid
MARIADB_LOG="$LOG_DIR/mariadb.log"
DB_NAME=slurm_acct_db
DB_USER=slurm
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server iproute2 jq)  # iproute2: `ip` for the nodes' network; jq: NeMo Run's Ray cluster script (tests/e2e/test_ray_cluster.py)
HOST=$(hostname -s)
# Node names: the machine's own name in single-node mode, n1..nN otherwise (net.sh maps them).
if ((NODES == 1)); then NODE_NAMES=("$HOST"); else NODE_NAMES=(); for ((k = 1; k <= NODES; k++)); do NODE_NAMES+=("n$k"); done; fi

T0=$(date +%s.%N)
log() { echo "[slurm-up] $*"; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
die() { echo "[slurm-up] ERROR: $*" >&2; exit 1; }

# Print the last 40 lines of a daemon's log file and fail.
die_with_log() {
    local name=$1 logfile=$2
    shift 2
    echo "[slurm-up] ERROR: $name: $*" >&2
    if [[ -f $logfile ]]; then
        echo "[slurm-up] ---- last 40 lines of $logfile ----" >&2
        tail -n 40 "$logfile" >&2 || true
        echo "[slurm-up] ---- end of $logfile ----" >&2
    else
        echo "[slurm-up] (no log file $logfile)" >&2
    fi
    exit 1
}


recorded_pid() { cat "$STATE_DIR/$1.pid" 2>/dev/null || true; }
record_pid() { echo "$2" >"$STATE_DIR/$1.pid"; }

# wait_until NAME LOGFILE PID DESCRIPTION CMD...: poll CMD until it succeeds; fail with the log if
# READY_TIMEOUT passes or the daemon (PID, when given) dies first.
wait_until() {
    local name=$1 logfile=$2 pid=$3 what=$4
    shift 4
    local deadline=$(($(date +%s) + READY_TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        if [[ -n $pid ]] && ! pid_alive "${name%@*}" "$pid"; then
            die_with_log "$name" "$logfile" "process $pid exited before $what"
        fi
        if (($(date +%s) >= deadline)); then
            die_with_log "$name" "$logfile" "not ready after ${READY_TIMEOUT}s ($what)"
        fi
        sleep 0.25
    done
}

# start_daemonizing NAME PIDFILE LOGFILE CMD...: run a daemon that forks into the background and
# writes PIDFILE; record the daemonized PID read from PIDFILE (not the launcher's) as NAME.pid.
# NAME is the process name, with @<node> for a slurmd (slurmd@n1): one pid file per node.
start_daemonizing() {
    local name=$1 pidfile=$2 logfile=$3
    shift 3
    rm -f "$pidfile"
    # stdin/stdout/stderr away from the caller's pipes: pytest and .ci/run capture our output.
    if ! "$@" </dev/null >>"$logfile" 2>&1; then
        die_with_log "$name" "$logfile" "launcher '$*' failed"
    fi
    local deadline=$(($(date +%s) + READY_TIMEOUT)) pid=""
    while :; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        pid=${pid//[[:space:]]/}
        if [[ -n $pid ]] && pid_alive "${name%@*}" "$pid"; then break; fi
        if (($(date +%s) >= deadline)); then
            die_with_log "$name" "$logfile" "no live process in $pidfile after ${READY_TIMEOUT}s"
        fi
        sleep 0.2
    done
    record_pid "$name" "$pid"
    STARTED_PID=$pid
}

# ---------------------------------------------------------------------------------------------
# Already up? All recorded PIDs alive, the controller answers and accounting works.
cluster_healthy() {
    local name pidfile
    [[ $(cat "$STATE_DIR/nodes" 2>/dev/null) == "$NODES" ]] || return 1
    for name in slurmdbd slurmctld "${NODE_NAMES[@]/#/slurmd@}"; do
        [[ -f $STATE_DIR/$name.pid ]] || return 1
    done
    for pidfile in "$STATE_DIR"/*.pid; do
        pid_alive "$(pid_file_comm "$pidfile")" "$(cat "$pidfile")" || return 1
    done
    timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
    timeout 10 sacct -n -P -X -o JobID -S now >/dev/null 2>&1 || return 1
    nodes_idle
}

# Every node of ours answers and is IDLE (or busy with a job: MIXED/ALLOCATED), none is DOWN.
nodes_idle() {
    local node state
    for node in "${NODE_NAMES[@]}"; do
        state=$(timeout 10 sinfo -h -n "$node" -N -o %T 2>/dev/null) || return 1
        [[ $state =~ ^(idle|mixed|allocated)$ ]] || return 1
    done
}

if [[ $(id -u) -ne 0 ]]; then
    die "must run as root"
fi

if [[ -d $STATE_DIR ]] && cluster_healthy; then
    log "cluster '$CLUSTER' already up and healthy with $NODES node(s) (state in $STATE_DIR); nothing to do ($(elapsed)s)"
    exit 0
fi

# Something of ours may be half up (a daemon died, an earlier up.sh failed, or another node
# count was asked for): stop what we recorded, by PID and name, so that we start from a known state.
if compgen -G "$STATE_DIR/*.pid" >/dev/null || [[ -f $STATE_DIR/net.list || -f $STATE_DIR/nodes ]]; then
    log "previous cluster state in $STATE_DIR is not what was asked for or not healthy; stopping it"
    bash "$SCRIPT_DIR/down.sh"
fi
mkdir -p "$STATE_DIR"
echo "$NODES" >"$STATE_DIR/nodes"

# ---------------------------------------------------------------------------------------------
# Packages.
missing=()
for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    log "installing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Keep the packages' maintainer scripts from starting munge/mariadb/slurm through init
    # scripts: every daemon is started below, by this script, so that its PID is recorded.
    policy_rc_added=0
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 0755 /usr/sbin/policy-rc.d
        policy_rc_added=1
    fi
    apt_rc=0
    # Only what is missing, no recommends, no upgrade of an installed package unless a new one needs it
    # (said first); another apt-get on the machine (a second setup script) is waited for, not fatal.
    bash "$SCRIPT_DIR/../apt_install.sh" "${missing[@]}" || apt_rc=$?
    if ((policy_rc_added)); then rm -f /usr/sbin/policy-rc.d; fi
    ((apt_rc == 0)) || die "apt-get failed (exit $apt_rc)"
else
    log "packages present: ${PACKAGES[*]}"
fi

# ---------------------------------------------------------------------------------------------
# Hostname: slurmctld checks SlurmctldHost against `hostname -s`, which must resolve.
if ! getent hosts "$HOST" >/dev/null; then
    log "adding '127.0.0.1 $HOST' to /etc/hosts"
    echo "127.0.0.1 $HOST" >>/etc/hosts
fi

mkdir -p "$LOG_DIR" /var/spool/slurmctld /etc/slurm
for node in "${NODE_NAMES[@]}"; do mkdir -p "/var/spool/slurmd/$node"; done

# The nodes' network (namespaces, veths, bridge, /etc/hosts block).
if ((NODES > 1)); then
    bash "$SCRIPT_DIR/net.sh" up "$NODES"
    CTLD_ADDR="$BRIDGE_SLURM_SUBNET.1"
fi

# ---------------------------------------------------------------------------------------------
# munge.
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }
if munge_ok; then
    # A munged we did not start (e.g. one provided by the image) already works: use it.
    log "munged already running (not started by this script); using it"
else
    log "starting munged ..."
    if [[ ! -s /etc/munge/munge.key ]]; then
        install -d -o munge -g munge -m 0700 /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/log/munge
    # --force: start even if a killed munged left its socket behind.
    # Launcher output goes to a file of ours; munged itself logs to $MUNGE_LOG (owned by munge).
    start_daemonizing munged "$MUNGE_PID" "$LOG_DIR/munged-launch.log" \
        runuser -u munge -- /usr/sbin/munged --force
    wait_until munged "$MUNGE_LOG" "$STARTED_PID" "munge -n | unmunge works" munge_ok
    log "munged up (pid $STARTED_PID)"
fi

# ---------------------------------------------------------------------------------------------
# MariaDB (accounting storage for slurmdbd; NeMo Run needs a working sacct).
mysql_ok() { mysqladmin --connect-timeout=2 ping; }
if mysql_ok >/dev/null 2>&1; then
    log "MariaDB already running (not started by this script); using it"
else
    log "starting mariadbd ..."
    install -d -o mysql -g mysql -m 0755 /run/mysqld
    if [[ ! -d /var/lib/mysql/mysql ]]; then
        log "initialising MariaDB data dir"
        mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db \
            </dev/null >>"$MARIADB_LOG" 2>&1 || die_with_log mariadbd "$MARIADB_LOG" "mariadb-install-db failed"
    fi
    # setsid: own session, so signals to the caller's process group (pytest, CI) don't reach it.
    # A non-interactive shell's background child is not a group leader, so setsid execs in place
    # and $! is mariadbd's PID (checked through /proc/PID/comm below).
    setsid /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --skip-networking=0 \
        </dev/null >>"$MARIADB_LOG" 2>&1 &
    MARIADB_PID=$!
    until pid_alive mariadbd "$MARIADB_PID"; do   # until setsid has exec'd mariadbd
        kill -0 "$MARIADB_PID" 2>/dev/null || die_with_log mariadbd "$MARIADB_LOG" "mariadbd exited at once"
        sleep 0.05
    done
    record_pid mariadbd "$MARIADB_PID"
    wait_until mariadbd "$MARIADB_LOG" "$MARIADB_PID" "mysqladmin ping answers" mysql_ok
    log "mariadbd up (pid $MARIADB_PID)"
fi

# Database and user for slurmdbd. A fresh random password each bring-up; it only lives in the
# root-only slurmdbd.conf.
DB_PASS=$(tr -dc 'A-Za-z0-9' </dev/urandom | head -c 24 || true)
mariadb -uroot <<SQL || die_with_log mariadbd "$MARIADB_LOG" "could not create database/user"
CREATE DATABASE IF NOT EXISTS \`$DB_NAME\`;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost';
ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'localhost';
FLUSH PRIVILEGES;
SQL

# slurmctld is started with -c (clean state, see below), which also resets its job-ID counter.
# The accounting DB is kept across restarts, so continue the job IDs after the highest one it
# knows: job IDs stay unique and `sacct -j ID` never mixes this run's job with an older one.
MAX_JOB_ID=$(mariadb -uroot -N -B -e \
    "SELECT COALESCE(MAX(id_job), 0) FROM \`$DB_NAME\`.\`${CLUSTER}_job_table\`" 2>/dev/null || echo 0)
[[ $MAX_JOB_ID =~ ^[0-9]+$ ]] || MAX_JOB_ID=0
FIRST_JOB_ID=$((MAX_JOB_ID + 1))

# ---------------------------------------------------------------------------------------------
# Config files, written before any Slurm daemon starts (slurmd refuses a changed slurm.conf).
NODE_LINE=$(slurmd -C | head -n 1)
[[ $NODE_LINE == NodeName=* ]] || die "unexpected 'slurmd -C' output: $NODE_LINE"
# One line per node: the machine's CPUs/sockets/cores/threads/RealMemory for each (the nodes
# share the machine, so keep jobs small), plus each node's own address and host name.
NODE_LINES=""
if ((NODES == 1)); then
    NODE_LINES="$NODE_LINE State=UNKNOWN"
else
    for ((k = 1; k <= NODES; k++)); do
        NODE_LINES+="$(sed -E "s/^NodeName=[^ ]+/NodeName=n$k NodeAddr=$BRIDGE_SLURM_SUBNET.$((10 + k)) NodeHostname=n$k/" <<<"$NODE_LINE") State=UNKNOWN"$'\n'
    done
fi
log "node(s): ${NODE_NAMES[*]} ($NODE_LINE)"

cat >"$SLURM_CONF.tmp" <<EOF
# Written by scripts/slurm/up.sh; $NODES-node cluster for tests. Rewritten on every bring-up.
ClusterName=$CLUSTER
# The machine's own short name (slurmctld refuses to start under another one), and with several
# nodes the bridge address where the nodes, in their own network namespaces, reach it.
SlurmctldHost=$HOST${CTLD_ADDR:+($CTLD_ADDR)}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
# %n: the node name, so the slurmds of several nodes on one machine keep apart.
SlurmdSpoolDir=/var/spool/slurmd/%n
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd-%n.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd-%n.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
# CR_CPU: the unit of allocation is a CPU (hardware thread), so a node with CPUs=2 always fits
# 2 tasks (ntasks_per_node=2), whatever its cores/threads split. With CR_Core on a machine with
# 1 core x 2 threads only one task would fit. Memory is not a consumable resource, so jobs do not
# reserve memory from each other, but --mem is still checked against the node's RealMemory.
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
MailProg=/bin/true
FirstJobId=$FIRST_JOB_ID
# Node line(s) from 'slurmd -C' (CPUs, sockets/cores/threads and RealMemory, so --mem requests work).
$NODE_LINES
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
chmod 0644 "$SLURM_CONF.tmp"
mv -f "$SLURM_CONF.tmp" "$SLURM_CONF"

(
    umask 077
    cat >"$SLURMDBD_CONF.tmp" <<EOF
# Written by scripts/slurm/up.sh. Must be mode 0600, owned by root (slurmdbd refuses otherwise).
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
PidFile=/run/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=localhost
StoragePort=3306
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
)
chown root:root "$SLURMDBD_CONF.tmp"
chmod 0600 "$SLURMDBD_CONF.tmp"
mv -f "$SLURMDBD_CONF.tmp" "$SLURMDBD_CONF"

# ---------------------------------------------------------------------------------------------
# slurmdbd.
log "starting slurmdbd ..."
start_daemonizing slurmdbd /run/slurmdbd.pid "$LOG_DIR/slurmdbd.log" /usr/sbin/slurmdbd
SLURMDBD_PID=$STARTED_PID
wait_until slurmdbd "$LOG_DIR/slurmdbd.log" "$SLURMDBD_PID" "sacctmgr list cluster answers" \
    timeout 10 sacctmgr -n -P list cluster
log "slurmdbd up (pid $SLURMDBD_PID)"

cluster_listed() { timeout 10 sacctmgr -n -P list cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"; }
if ! cluster_listed; then
    log "registering cluster '$CLUSTER' in accounting"
    timeout 30 sacctmgr -i add cluster "$CLUSTER" >/dev/null
fi

# ---------------------------------------------------------------------------------------------
# slurmctld. Started with -c: it forgets jobs and node states saved by an earlier run (a run that
# was stopped with jobs in flight would otherwise bring them back, and a node marked DOWN would
# stay DOWN). Accounting data lives in MariaDB and is kept; jobs an earlier run left "running"
# there are closed below (runaway jobs), and FirstJobId keeps job IDs unique.
log "starting slurmctld ..."
start_daemonizing slurmctld /run/slurmctld.pid "$LOG_DIR/slurmctld.log" /usr/sbin/slurmctld -c
SLURMCTLD_PID=$STARTED_PID
ctld_ok() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }
wait_until slurmctld "$LOG_DIR/slurmctld.log" "$SLURMCTLD_PID" "scontrol ping says UP" ctld_ok
wait_until slurmctld "$LOG_DIR/slurmctld.log" "$SLURMCTLD_PID" "cluster '$CLUSTER' listed by sacctmgr" cluster_listed
log "slurmctld up (pid $SLURMCTLD_PID)"

# Association for the account the tests pass to SlurmExecutor (without it slurmctld silently runs
# the job under the user's default account).
if [[ -z $(timeout 10 sacctmgr -n -P list account "$ACCOUNT" format=account 2>/dev/null) ]]; then
    log "adding account '$ACCOUNT'"
    timeout 30 sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" \
        Description="bridge-plugins tests" Organization=bridge >/dev/null
fi
if [[ -z $(timeout 10 sacctmgr -n -P list assoc cluster="$CLUSTER" account="$ACCOUNT" user=root format=user 2>/dev/null) ]]; then
    log "adding user root to account '$ACCOUNT'"
    timeout 30 sacctmgr -i add user root Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null
fi
# Jobs the accounting DB still shows as pending/running from an earlier run: mark them ended.
timeout 30 sacctmgr -i list runawayjobs </dev/null >/dev/null 2>&1 || true

# ---------------------------------------------------------------------------------------------
# slurmd, one per node. With several nodes each runs inside its node's network namespace through
# nsenter (NOT `ip netns exec`: that remounts /sys and slurmd then finds no cgroup filesystem),
# in a new UTS namespace whose host name is the node name (NeMo Run's sbatch script looks the
# torchrun head up with `srun -w <node> hostname --ip-address`). The mount namespace is shared:
# munge's socket, /etc/slurm and the job directories are common to all nodes, like a shared FS.
for node in "${NODE_NAMES[@]}"; do
    log "starting slurmd for node $node ..."
    if ((NODES == 1)); then
        start_daemonizing "slurmd@$node" "/run/slurmd-$node.pid" "$LOG_DIR/slurmd-$node.log" /usr/sbin/slurmd
    else
        # node names are n1..nN (checked above), safe inside the sh -c string
        start_daemonizing "slurmd@$node" "/run/slurmd-$node.pid" "$LOG_DIR/slurmd-$node.log" \
            nsenter --net="/var/run/netns/$(node_netns "$node")" unshare --uts \
            sh -c "hostname $node && exec /usr/sbin/slurmd -N $node"
    fi
    log "slurmd@$node pid $STARTED_PID"
done
# start_daemonizing checks the process name through the pid file's name: slurmd@<node> -> slurmd
node_pids=$(for node in "${NODE_NAMES[@]}"; do recorded_pid "slurmd@$node"; done)
wait_until slurmd "$LOG_DIR/slurmd-${NODE_NAMES[0]}.log" "" "node(s) ${NODE_NAMES[*]} IDLE" nodes_idle
log "slurmd up (pids $(echo $node_pids)); node(s) ${NODE_NAMES[*]} IDLE"

# ---------------------------------------------------------------------------------------------
# Smoke test: every node runs a task, and (multi-node) each reports its own host name.
log "smoke test: srun -A $ACCOUNT -p $PARTITION -N$NODES --ntasks-per-node=2 hostname"
if ! out=$(timeout 60 srun -A "$ACCOUNT" -p "$PARTITION" -N"$NODES" --ntasks-per-node=2 -l hostname </dev/null 2>&1); then
    echo "$out" >&2
    die_with_log slurmctld "$LOG_DIR/slurmctld.log" "smoke test srun failed"
fi
echo "$out" | sed 's/^/[slurm-up]   /'
[[ $(echo "$out" | grep -c .) -eq $((2 * NODES)) ]] || die "smoke test: expected $((2 * NODES)) lines of output"
if ((NODES > 1)); then
    seen=$(echo "$out" | awk '{ print $2 }' | sort -u | tr '\n' ' ')
    want=$(printf '%s\n' "${NODE_NAMES[@]}" | sort -u | tr '\n' ' ')
    [[ $seen == "$want" ]] || die "smoke test: host names '$seen', expected '$want'"
fi

log "cluster '$CLUSTER' up in $(elapsed)s: $NODES node(s) ${NODE_NAMES[*]} (account=$ACCOUNT partition=$PARTITION, state in $STATE_DIR)"
