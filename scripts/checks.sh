#!/usr/bin/env bash
# The static checks, configured in pyproject.toml: ruff (lint and format), mypy on bridge_plugins/
# and the import contracts (lint-imports; docs/architecture.md). Runs every one and exits 1 if any
# failed, naming them. scripts/test.sh runs this before pytest. BRIDGE_VENV_BIN: another venv's bin.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BRIDGE_VENV_BIN:-.venv/bin}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout's code, whatever the venv installed
failed=()
"$bin/ruff" check . || failed+=("ruff check")
"$bin/ruff" format --check . || failed+=("ruff format")
"$bin/mypy" || failed+=(mypy)
"$bin/lint-imports" || failed+=(lint-imports)
if [ ${#failed[@]} -gt 0 ]; then
  echo "[checks] FAILED: ${failed[*]}"
  exit 1
fi
echo "[checks] ruff, mypy and lint-imports passed"
