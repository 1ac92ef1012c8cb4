#!/usr/bin/env bash
# Install HolisticTraceAnalysis (HTA) into .venv for the tests and benchmarks that cross-check our
# GPU time breakdown against it (tests/analysis/test_hta.py, benchmarks/analysis_scale.py).
# Never a runtime dependency. HTA's metadata pulls in jupyterlab (hundreds of MB) that its code
# never imports, so we install it without dependencies and add only the modules it imports
# (pandas, plotly, networkx, psutil, pyyaml). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if .venv/bin/python -c "import hta.trace_analysis" >/dev/null 2>&1; then
  exit 0
fi
echo "[install_hta] installing HolisticTraceAnalysis==0.5.0 (test-only) and the modules it imports"
# The modules first: installed after HTA, pip's resolver would print an "ERROR:" about HTA's
# jupyterlab and pydot requirements, which we leave out on purpose.
.venv/bin/python -m pip install -q pandas plotly networkx psutil pyyaml
.venv/bin/python -m pip install -q --no-deps "HolisticTraceAnalysis==0.5.0"
.venv/bin/python -c "import hta.trace_analysis; print('[install_hta] ready')"
