#!/usr/bin/env bash
# ctest's explorer.browser_clicks: writes a small explorer page (Post-LN and Pre-LN without warmup, and
# one intervention so the run menu and the tour have a third run), then drives it with real clicks
# (explorer_clicks.mjs). Exit 77 (skipped) when node is missing; the .mjs skips without
# playwright-core or Chromium.
#   tests/browser/explorer_clicks.sh EXPLORER_BINARY NODE
set -euo pipefail
explorer=$1 node=${2:-}
if [ -z "$node" ] || ! command -v "$node" > /dev/null 2>&1; then
  echo "SKIPPED: node is missing (apt-get install nodejs npm; scripts/install-deps does)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/gradscope_browser_clicks.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$explorer" --runs post:0,pre:0,post:0:ln-undo-gain --steps 20 --layers 2 --d-model 16 --d-ff 32 \
  --snapshot-steps 0,1,3,8,20 --jobs 1 --html "$dir/page.html" > "$dir/explorer.log" 2>&1 \
  || { cat "$dir/explorer.log"; exit 1; }
"$node" "$(dirname "$0")/explorer_clicks.mjs" "$dir/page.html"
