#!/usr/bin/env bash
# Remake docs/report.png: the HTML report of two ranks of the real 128-rank GPU job
# (../shared/fixtures/gpu-traces) with the schema memory snapshot (tests/fixtures), rendered by
# headless Chromium with the network off. Needs .venv (scripts/setup.sh) and chromium
# (scripts/install_chromium.sh); ImageMagick's convert, when present, trims the empty bottom. The PNG
# carries the report's section names (scripts/report_png.py), which tests/docs/test_report_png.py checks.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${BRIDGE_SHARED:-../shared}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$PWD
mkdir -p "$tmp/job128/torch_profile" docs
for r in 0 1; do
  cp "$shared/fixtures/gpu-traces/job128_rank$r.json.gz" "$tmp/job128/torch_profile/rank${r}_steps551-552.pt.trace.json.gz"
done
cp tests/fixtures/memory_schema.pickle "$tmp/job128/memory_snapshot_0.pickle"
(cd "$tmp" && "$repo/.venv/bin/python" -m bridge_plugins report job128 -o report.html)
unshare --net chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,${HEIGHT:-3720} \
  --screenshot="$tmp/report.png" "file://$tmp/report.html" 2>/dev/null
if convert -version 2>/dev/null | grep -q ImageMagick; then
  convert "$tmp/report.png" -bordercolor '#f6f7f9' -border 1 -trim +repage "$tmp/report.png"
fi
# the sections it shows, so that tests/docs/test_report_png.py tells when the report has changed since
"$repo/.venv/bin/python" scripts/report_png.py "$tmp/report.html" "$tmp/report.png"
cp "$tmp/report.png" docs/report.png
echo "docs/report.png: $(wc -c < docs/report.png) bytes"
