#!/usr/bin/env bash
# Install Debian's headless-capable `chromium` (used by the HTML report test, tests/analysis/test_report_browser.py).
# Idempotent: does nothing when a chromium binary is already on PATH. Needs root and apt-get;
# prints why and exits 1 otherwise. On a fresh machine the package lists are fetched first.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "[chromium] already installed: $(chromium --version 2>/dev/null || echo chromium)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "[chromium] cannot install: needs root and apt-get (Debian's 'chromium' package)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be missing (fresh container) or stale (unauthenticated): refresh them first.
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "[chromium] installed: $(chromium --version)"
