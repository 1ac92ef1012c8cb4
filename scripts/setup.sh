#!/usr/bin/env bash
# Create .venv (if missing), install the torch build that fits this machine, then this project with
# its test tools (editable). Says which torch it chose and why.
#
# Which torch (torch==$TORCH_VERSION):
#   - an NVIDIA driver answers (nvidia-smi -L works): the CUDA build from pip's configured index
#     (PyPI: ~2.7 GB of wheels, torch itself ~530 MB plus the nvidia-* CUDA libraries and triton);
#   - otherwise the CPU build from PyTorch's CPU wheel index ($TORCH_CPU_INDEX, ~190 MB);
#   - when that index cannot be reached: whatever pip's configuration offers (a local wheel
#     directory, a mirror). On plain PyPI that is the CUDA build, and the script says so first.
# BRIDGE_TORCH=cpu|cuda overrides the detection. --plan prints the choice and installs nothing.
# Idempotent and fast: with torch==$TORCH_VERSION present and pyproject.toml unchanged since the last
# successful run, nothing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.13.0
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
PY=${PYTHON:-python3}
STAMP=.venv/.bridge_setup_stamp
PLAN=0
[ "${1:-}" = "--plan" ] && PLAN=1

say() { echo "[setup] $*"; }

# Succeeds when the index answers within a few seconds (pip itself would retry for minutes).
index_reachable() {
  "$PY" - "$1" <<'EOF' >/dev/null 2>&1
import os, ssl, sys, urllib.request
cafile = os.environ.get("PIP_CERT") or os.environ.get("REQUESTS_CA_BUNDLE") or None
context = ssl.create_default_context(cafile=cafile) if sys.argv[1].startswith("https:") else None
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=5, context=context)
EOF
}

# What pip's own configuration would install for torch==$TORCH_VERSION: "<version> <url>" (metadata only).
configured_torch() {
  local report
  report=$(mktemp)
  if "$PY" -m pip install --dry-run --ignore-installed --no-deps --quiet --report "$report" "torch==$TORCH_VERSION" >/dev/null 2>&1; then
    "$PY" -c "import json,sys; i=json.load(open(sys.argv[1]))['install'][0]; print(i['metadata']['version'], i['download_info']['url'])" "$report"
  fi
  rm -f "$report"
}

# Sets PIP_TORCH (pip arguments) and prints which build and why.
choose_torch() {
  local want=${BRIDGE_TORCH:-auto} gpu
  if [ "$want" = auto ] && gpu=$(nvidia-smi -L 2>/dev/null | head -1) && [ -n "$gpu" ]; then
    want=cuda
    say "NVIDIA driver found (nvidia-smi: $gpu): the CUDA build of torch==$TORCH_VERSION from pip's index (PyPI: ~2.7 GB with its nvidia-* libraries)"
  elif [ "$want" = cuda ]; then
    say "BRIDGE_TORCH=cuda: the CUDA build of torch==$TORCH_VERSION from pip's index (PyPI: ~2.7 GB with its nvidia-* libraries)"
  elif [ "$want" = auto ] || [ "$want" = cpu ]; then
    local why="no NVIDIA driver (nvidia-smi missing or failing)"
    [ "$want" = cpu ] && why="BRIDGE_TORCH=cpu"
    if index_reachable "$TORCH_CPU_INDEX"; then
      say "$why: the CPU build of torch==$TORCH_VERSION from PyTorch's CPU wheel index $TORCH_CPU_INDEX (~190 MB)"
      PIP_TORCH=(--index-url "$TORCH_CPU_INDEX" "torch==$TORCH_VERSION")
      return
    fi
    local offered
    offered=$(configured_torch)
    case "$offered" in
      *+cpu*) say "$why, and $TORCH_CPU_INDEX is unreachable: pip's configuration offers a CPU build (${offered%% *} from ${offered#* }), installing that" ;;
      "") say "$why, and $TORCH_CPU_INDEX is unreachable: trying pip's configuration (it found no torch==$TORCH_VERSION in a dry run)" ;;
      *) say "$why, and $TORCH_CPU_INDEX is unreachable: pip's configuration offers torch ${offered%% *} from ${offered#* }." \
           "On Linux x86_64 that is the CUDA build, ~2.7 GB with its nvidia-* libraries. To avoid it, make the CPU index" \
           "reachable (TORCH_CPU_INDEX=<mirror>) or put a torch-$TORCH_VERSION+cpu wheel in a pip find-links directory." ;;
    esac
  else
    say "BRIDGE_TORCH=$want: use cpu or cuda (or leave it unset to detect)"
    exit 2
  fi
  PIP_TORCH=("torch==$TORCH_VERSION")
}

# This checkout, editable, quietly: pip (>= 24) shows the build backend's warnings, and setuptools'
# "Editable installation" box (mind folders named like the package) is nothing a user acts on.
install_checkout() {
  PYTHONWARNINGS="ignore:Editable installation" "$PY" -m pip install -q "$@"
}

# Installed versions from package metadata: importing nemo_run alone takes seconds.
installed() {
  .venv/bin/python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$1" 2>/dev/null
}

if [ "$PLAN" = 1 ]; then
  [ -x .venv/bin/python ] && PY=.venv/bin/python
  choose_torch
  echo "pip install ${PIP_TORCH[*]}"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
PY=.venv/bin/python
torch_now=$(installed torch || true)
if [ "${torch_now%%+*}" != "$TORCH_VERSION" ]; then
  choose_torch
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q "${PIP_TORCH[@]}"
fi
# The native chunk reader (setup.py) is C: where no compiler is found, Debian's gcc when this is root
# with apt-get (pip builds it with the compiler Python was built with, "cc" on Linux); else the
# install goes on without it, and says so below.
if ! command -v cc >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "no C compiler: installing Debian's gcc for the native chunk reader"
  bash scripts/apt_install.sh gcc libc6-dev
fi
NATIVE=bridge_plugins/analysis/trace/_native.c
want_stamp=$(cat pyproject.toml setup.py "$NATIVE" | cksum)
native_built() { "$PY" -c "from bridge_plugins.analysis.trace import _native" 2>/dev/null; }
if [ "$(cat "$STAMP" 2>/dev/null)" != "$want_stamp" ] || ! installed bridge-plugins >/dev/null ||
  { ! native_built && command -v cc >/dev/null 2>&1; }; then
  say "installing bridge-plugins[test,docs] (editable, building the native chunk reader; docs: the Sphinx tools tests/docs/ builds the site with)"
  install_checkout -e ".[test,docs]"
  echo "$want_stamp" >"$STAMP"
fi
if ! native_built; then
  say "note: the native chunk reader ($NATIVE) did not build: traces are read by msgspec and the Python" \
    "loop, ~1.5-2x slower on big traces (a C compiler and Python's headers build it: bash scripts/setup.sh)"
fi
"$PY" -c "
import importlib.metadata as m, torch
build = f'CUDA {torch.version.cuda} build' if torch.version.cuda else 'CPU build'
print(f'[setup] ready: torch {torch.__version__} ({build}), nemo_run {m.version(\"nemo_run\")}')"
if nvidia-smi -L >/dev/null 2>&1 && ! "$PY" -c "import sys, torch; sys.exit(torch.version.cuda is None)" 2>/dev/null; then
  say "note: this machine has an NVIDIA driver but .venv holds a CPU build of torch (installed earlier);" \
    "for the GPU: .venv/bin/python -m pip uninstall -y torch && bash scripts/setup.sh"
fi
