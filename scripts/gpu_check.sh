#!/usr/bin/env bash
# One prepared GPU check (run on a machine with CUDA, from the repo root): the GPU-only tests,
# the recipe's real GPU trace and CUDA memory snapshot copied to $OUT/fixtures (to commit),
# benchmarks/gpu_window_costs.py (first window step, memory history before the window), and the
# per-op NVTX cost benchmark bare and, if an nsys binary exists, under nsys with a whole-process
# capture (every variant pays the attached tool). Writes logs to ${OUT:-/tmp/gpu_check}.
# Runs in the project's venv (.venv, created by scripts/setup.sh, which installs the CUDA build of
# torch where nvidia-smi works), whatever python is first on PATH. PYTHON=/path/to/python uses that
# interpreter instead (an offline GPU machine whose own python already has torch and this package's
# dependencies).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
if [ -z "${PYTHON:-}" ]; then
  bash scripts/setup.sh || { echo "scripts/setup.sh failed: no project venv to run the GPU check in"; exit 1; }
  PYTHON=$PWD/.venv/bin/python
fi
PY=$PYTHON
export PATH="$(dirname "$PY"):$PATH"  # its torchrun, and python for anything the checks start
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
nvidia-smi -L 2>&1 | tee "$OUT/gpu.txt"
$PY -c "import torch; print('torch', torch.__version__, torch.cuda.is_available())" | tee -a "$OUT/gpu.txt"
echo "== GPU tests"
timeout 240 $PY -m pytest -p no:cacheprovider -q -rs tests/runtime/test_gpu.py 2>&1 | tee "$OUT/gpu_tests.log"
echo "== the recipe under torchrun on the GPU: PyTorch profiler + memory history, window 3-5"
rm -rf /tmp/gpu_check_job
timeout 180 "$PY" -m torch.distributed.run --standalone --nproc-per-node 1 -m recipes.train profiling.use_pytorch_profiler=true \
  profiling.record_memory_history=true profiling.profile_step_start=3 profiling.profile_step_end=6 \
  train.train_iters=8 profiling.output_dir=/tmp/gpu_check_job 2>&1 | tee "$OUT/recipe_gpu.log"
$PY -c "from bridge_plugins.analysis.job import report; print(report('/tmp/gpu_check_job')[0])" 2>&1 | tee -a "$OUT/recipe_gpu.log"
# real CUDA artifacts of the recipe, to commit as test fixtures (tests/fixtures/gpu/)
mkdir -p "$OUT/fixtures"
cp /tmp/gpu_check_job/torch_profile/rank0_steps3-5.pt.trace.json.gz "$OUT/fixtures/recipe_gpu_rank0_steps3-5.pt.trace.json.gz"
cp /tmp/gpu_check_job/memory_snapshot_0.pickle "$OUT/fixtures/recipe_gpu_memory_snapshot_0.pickle"
ls -la "$OUT/fixtures" | tee -a "$OUT/recipe_gpu.log"
echo "== first window step vs the others; memory history's per-step cost before the window (ratios)"
timeout 300 $PY -m benchmarks.gpu_window_costs --rounds 5 --json "$OUT/gpu_window_costs.json" 2>&1 \
  | grep -v '^USDT:' | tee "$OUT/gpu_window_costs.log"
if [ "${GPU_CHECK_SKIP_BENCH:-0}" = 1 ]; then exit 0; fi
echo "== per-op NVTX cost, no tool attached"
timeout 120 $PY benchmarks/nvtx_gpu.py --rounds 5 --steps 20 --json "$OUT/nvtx_bare.json" 2>&1 | tee "$OUT/nvtx_bare.log"
NSYS=$(command -v nsys || ls /opt/nvidia/*/host/target-linux-x64/nsys /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
if [ -n "$NSYS" ]; then
  echo "== under $NSYS"
  timeout 180 "$NSYS" profile -s none -t cuda,nvtx \
    --force-overwrite=true -o /tmp/gpu_check_nsys $PY benchmarks/nvtx_gpu.py --rounds 3 --steps 10 \
    --json "$OUT/nvtx_nsys.json" 2>&1 | tail -30 | tee "$OUT/nvtx_nsys.log"
  ls -la /tmp/gpu_check_nsys* 2>&1 | tee -a "$OUT/nvtx_nsys.log"
else
  echo "no nsys binary found" | tee "$OUT/nvtx_nsys.log"
fi
