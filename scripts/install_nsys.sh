#!/usr/bin/env bash
# Install the real Nsight Systems CLI (Debian non-free: nsight-systems-target = nsys 2022.4.2,
# nsight-systems = the host side with QdstrmImporter), used by the nsys tests (test-only, never a
# runtime dependency). See docs/plugins.md "Nsight Systems" and ../shared/notes/nsys-real.md.
# Idempotent: with nsys on PATH and its importer reachable it only says so. Needs root and apt-get;
# prints why and exits 1 otherwise. Steps, each skipped when already done:
#   1. /etc/apt/sources.list.d/debian-nonfree.sources: the URIs/Suites/Signed-By of each stanza of
#      debian.sources, with "Components: contrib non-free";
#   2. scripts/apt_install.sh nsight-systems-target nsight-systems (no recommends, no upgrades);
#   3. a symlink QdstrmImporter beside the nsys binary, pointing at Debian's host-side importer
#      (without it a capture ends as a .qdstrm only: "The importer binary ... were not found").
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "[nsys] $*"; }
target_dir=/usr/lib/x86_64-linux-gnu/nsight-systems/target-linux-x64
importer=/usr/lib/nsight-systems/host-linux-x64/QdstrmImporter
version() { nsys --version 2>/dev/null | head -n 1; }
ready() {
  command -v nsys >/dev/null 2>&1 || return 1
  local dir
  dir=$(dirname "$(readlink -f "$(command -v nsys)")")
  [ -x "$dir/QdstrmImporter" ]
}
if ready; then
  say "already installed: $(version)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install: needs root and apt-get (Debian's non-free 'nsight-systems' packages)" >&2
  exit 1
fi
base=/etc/apt/sources.list.d/debian.sources
extra=/etc/apt/sources.list.d/debian-nonfree.sources
if [ ! -f "$extra" ]; then
  if [ ! -f "$base" ]; then
    say "cannot add Debian's non-free component: $base is missing" >&2
    exit 1
  fi
  # one stanza per stanza of debian.sources: Types/URIs/Suites/Signed-By kept, Components replaced
  awk '
    /^(Types|URIs|Suites|Signed-By):/ { print; next }
    /^Components:/ { print "Components: contrib non-free"; next }
    /^[[:space:]]*$/ { print; next }
  ' "$base" >"$extra.tmp"
  mv "$extra.tmp" "$extra"
  say "added $extra (contrib non-free beside $base)"
fi
if ! command -v nsys >/dev/null 2>&1; then
  bash scripts/apt_install.sh nsight-systems-target nsight-systems
fi
if [ ! -x "$importer" ]; then
  say "installed, but Debian's importer $importer is missing (package nsight-systems)" >&2
  exit 1
fi
dir=$(dirname "$(readlink -f "$(command -v nsys)")")
[ -d "$dir" ] || dir=$target_dir
if [ ! -e "$dir/QdstrmImporter" ]; then
  ln -s "$importer" "$dir/QdstrmImporter"
  say "linked $dir/QdstrmImporter -> $importer"
fi
say "installed: $(version)"
