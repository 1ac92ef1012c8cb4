#!/usr/bin/env bash
# Install torch-tb-profiler 0.4.3 (the TensorBoard profiler plugin) into .venv for the test that
# checks our per-step breakdown against its overview (tests/analysis/test_step_breakdown_tb.py).
# Never a runtime dependency. Its metadata pulls in tensorboard, which the parser we call
# (torch_tb_profiler.profiler.data.RunProfileData) never imports, so we install it without
# dependencies and add only what that parser imports (pandas). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if .venv/bin/python -c "import torch_tb_profiler.profiler.data" >/dev/null 2>&1; then
  exit 0
fi
echo "[install_tbprofiler] installing torch-tb-profiler==0.4.3 (test-only) and pandas"
.venv/bin/python -m pip install -q pandas
.venv/bin/python -m pip install -q --no-deps "torch-tb-profiler==0.4.3"
.venv/bin/python -c "import torch_tb_profiler.profiler.data; print('[install_tbprofiler] ready')"
