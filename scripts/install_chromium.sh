#!/usr/bin/env bash
# Install Debian's headless-capable `chromium` (used by the HTML report test, tests/analysis/test_report_browser.py).
# Idempotent: does nothing when a chromium binary is already on PATH. Needs root and apt-get;
# prints why and exits 1 otherwise. Installs with scripts/apt_install.sh: only what is missing, no
# recommends, no upgrade of what is installed unless chromium needs it (said first).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's browser binary itself: its /usr/bin/chromium wrapper script prints
# "[: ...: unexpected operator" where findmnt lists /dev/shm twice (its /etc/chromium.d/dev-shm check).
version() {
  if [ -x /usr/lib/chromium/chromium ]; then /usr/lib/chromium/chromium --version; else chromium --version 2>/dev/null; fi
}
if command -v chromium >/dev/null 2>&1; then
  echo "[chromium] already installed: $(version || echo chromium)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "[chromium] cannot install: needs root and apt-get (Debian's 'chromium' package)" >&2
  exit 1
fi
bash scripts/apt_install.sh chromium fonts-dejavu-core
echo "[chromium] installed: $(version)"
