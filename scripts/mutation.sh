#!/usr/bin/env bash
# Mutation testing of one core module (mutmut): scripts/mutation.sh MODULE; without MODULE, the list.
# Modules and their test subsets: scripts/mutation_modules.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/mutation.py "$@"
