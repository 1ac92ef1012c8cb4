#!/usr/bin/env bash
# Install Debian packages with the least change to the machine: only the named packages that are
# not installed yet (an installed one is never upgraded), without their recommends. apt must still
# upgrade an installed package when a new one needs a newer version of it (e.g. a security update of
# libdbi-perl needing a newer perl); the script says which, and why, before it installs.
#   bash scripts/apt_install.sh PKG...        needs root and apt-get; refreshes the package lists first
#   APT_SIMULATE=1 bash scripts/apt_install.sh PKG...   what it would do (apt-get -s): changes nothing
# Used by scripts/install_chromium.sh and scripts/slurm/up.sh.
set -euo pipefail
say() { echo "[apt] $*"; }
missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  say "already installed: $*"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
options=(-y -q --no-install-recommends --no-upgrade)
if [ "${APT_SIMULATE:-0}" = 1 ]; then
  options+=(-s)
else
  # Package lists may be missing (fresh container) or stale (their files gone from the mirror).
  apt update -qq
fi
upgrades=$(apt-get -s install "${options[@]}" "${missing[@]}" 2>/dev/null | sed -n 's/^Inst \([^ ]*\) \[.*/\1/p' | tr '\n' ' ')
if [ -n "$upgrades" ]; then
  say "installing ${missing[*]} also upgrades, because the new packages need newer versions of them: ${upgrades% }"
fi
say "installing ${missing[*]} (not their recommends)"
if [ "${APT_SIMULATE:-0}" = 1 ]; then
  apt install "${options[@]}" "${missing[@]}"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! apt install "${options[@]}" "${missing[@]}" >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  say "apt-get install failed (the end of its output is above)" >&2
  exit 1
fi
say "installed: ${missing[*]}"
