#!/usr/bin/env bash
# Test-only: the parts of Megatron Bridge 0.6.2 that tests/plugins/test_mb_real_package.py runs
# against ours, in .mb/ (git-ignored; nothing goes into .venv). Idempotent: a second run exits at once.
#
# * megatron-bridge 0.6.2 and megatron-core 0.19.2 (its pin) declare Python >= 3.12 and pull in
#   CUDA-only packages, so their py3.12 wheels are downloaded without dependencies and only the
#   plain-Python files the test needs are unpacked into .mb/src: run_plugins.py, training/config.py
#   (read, not imported: the test lifts ProfilingConfig and FaultToleranceConfig from it),
#   omegaconf_utils.py (the override parser), utils/import_utils.py, and megatron-core's
#   training/config/common_config.py (the base of MB's ProfilingConfig).
# * The parser's own dependencies, as `pip install megatron-bridge==0.6.2` resolves them
#   (hydra-core>=1.3.4,<1.4 caps omegaconf below 2.4), go to .mb/site: hydra-core 1.3.8,
#   omegaconf 2.3.0, antlr4-python3-runtime 4.9.3. Not into .venv: our omegaconf is 2.4, which
#   hydra-core 1.3 does not allow, and the test runs MB's parser in a process of its own.
# On failure the reason is left in .mb/FAILED (the test prints it; under CI=true it fails on it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
DEST=.mb
STAMP=$DEST/READY-megatron-bridge-0.6.2
if [ -f "$STAMP" ]; then
  exit 0
fi
rm -rf "$DEST"
mkdir -p "$DEST/wheels"
log=$DEST/install.log
fail() {
  { echo "[install_mb] $1"; grep -v "is ignored: it is neither" "$log" | tail -n 4; } | tee "$DEST/FAILED" >&2
  exit 1
}
echo "[install_mb] fetching megatron-bridge==0.6.2 (py3.12 wheel, no dependencies; test-only)"
"$PY" -m pip download --no-deps --python-version 3.12 --only-binary=:all: -d "$DEST/wheels" \
  megatron-bridge==0.6.2 megatron-core==0.19.2 >"$log" 2>&1 ||
  fail "pip download megatron-bridge==0.6.2 megatron-core==0.19.2 failed (no index reachable?)"
"$PY" -m pip install --no-deps --target "$DEST/site" \
  hydra-core==1.3.8 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 >>"$log" 2>&1 ||
  fail "pip install --target $DEST/site hydra-core==1.3.8 omegaconf==2.3.0 antlr4-python3-runtime==4.9.3 failed"
"$PY" - "$DEST" >>"$log" 2>&1 <<'PYEOF' || fail "unpacking the wheels failed"
import sys, zipfile
from pathlib import Path

dest = Path(sys.argv[1])
wanted = {
    "megatron_bridge-0.6.2-": [
        "megatron/bridge/recipes/run_plugins.py",
        "megatron/bridge/training/config.py",
        "megatron/bridge/training/utils/omegaconf_utils.py",
        "megatron/bridge/utils/import_utils.py",
    ],
    "megatron_core-0.19.2-": ["megatron/training/config/common_config.py"],
}
for prefix, names in wanted.items():
    (wheel,) = [w for w in (dest / "wheels").iterdir() if w.name.startswith(prefix)]
    with zipfile.ZipFile(wheel) as z:
        for name in names:
            target = dest / "src" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(name))
PYEOF
touch "$STAMP"
echo "[install_mb] ready in $DEST"
