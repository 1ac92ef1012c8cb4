#!/usr/bin/env bash
# Build the docs site into docs/_build/html (opens from the file system, no network needed):
#   bash scripts/docs.sh                 # build; then open docs/_build/html/index.html
#   bash scripts/docs.sh --screenshot    # also save docs/_build/index.png (headless chromium, no network)
# Uses .venv (scripts/setup.sh) and installs the pinned `docs` extra into it when Sphinx is missing.
# Warnings are errors (nitpicky too); tests/docs/ builds the site with this script.
# PYTHON=... picks another interpreter, OUT=... another output directory.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
OUT=${OUT:-docs/_build/html}
if [ ! -x "$PY" ]; then
  echo "[docs] $PY not found: run 'bash scripts/setup.sh' first (or set PYTHON=...)" >&2
  exit 2
fi
if ! "$PY" -c "import sphinx, myst_parser, furo, sphinxarg" 2>/dev/null; then
  echo "[docs] installing the docs extra (Sphinx, MyST, furo, sphinx-argparse)"
  "$PY" -m pip install -q -e ".[docs]"
fi
start=$(date +%s%N)
# this checkout's code, whichever copy the interpreter has installed
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m sphinx -b html -n -W --keep-going -q docs "$OUT"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
OUT=$(cd "$OUT" && pwd)
printf '[docs] built %s in %d.%03d s; open file://%s/index.html\n' "$OUT" $((ms / 1000)) $((ms % 1000)) "$OUT"
if [ "${1:-}" = "--screenshot" ]; then
  chrome=(chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,${HEIGHT:-1400})
  if unshare --net true 2>/dev/null; then chrome=(unshare --net "${chrome[@]}"); fi
  mkdir -p docs/_build
  "${chrome[@]}" --screenshot="$PWD/docs/_build/index.png" "file://$OUT/${PAGE:-index.html}" 2>/dev/null
  echo "[docs] screenshot: docs/_build/index.png"
fi
