# shellcheck shell=bash
# Variables describing the local single-node Slurm cluster brought up by scripts/slurm/up.sh.
# Source it (`. scripts/slurm/env.sh`); every value can be overridden from the environment.
export BRIDGE_SLURM_CLUSTER="${BRIDGE_SLURM_CLUSTER:-ci}"
export BRIDGE_SLURM_ACCOUNT="${BRIDGE_SLURM_ACCOUNT:-bridge}"
export BRIDGE_SLURM_PARTITION="${BRIDGE_SLURM_PARTITION:-debug}"
# Where up.sh records the PIDs of the daemons it started (one <name>.pid per daemon).
export BRIDGE_SLURM_STATE="${BRIDGE_SLURM_STATE:-/run/bridge-slurm}"
