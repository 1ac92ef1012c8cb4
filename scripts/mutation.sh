#!/usr/bin/env bash
# Mutation testing of one core module (mutmut): scripts/mutation.sh MODULE; without MODULE, the list.
# Modules and their test subsets: scripts/mutation_modules.toml. BRIDGE_VENV_BIN: another venv's bin
# (a worktree without its own .venv), as for scripts/checks.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${BRIDGE_VENV_BIN:-.venv/bin}/python" scripts/mutation.py "$@"
