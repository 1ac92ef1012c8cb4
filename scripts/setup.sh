#!/usr/bin/env bash
# Create .venv (if missing) and install the project with its test tools.
# torch is installed first and pinned (torch==2.13.0): on CPU machines an unpinned torch makes
# pip download a CUDA build of several GB. Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[setup] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import torch, nemo_run, omegaconf, pytest, bridge_plugins" >/dev/null 2>&1; then
  echo "[setup] installing torch==2.13.0, then bridge-plugins[test] (editable)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q "torch==2.13.0"
  .venv/bin/python -m pip install -q -e ".[test]"
fi
.venv/bin/python -c "import torch, nemo_run; print(f'[setup] ready: torch {torch.__version__}, nemo_run {nemo_run.__version__}')"
