#!/usr/bin/env bash
# The whole vitest suite on each Node line, one after the other (CI runs it whole on Node 20 only;
# a line's own behaviour, such as Node 24's compile cache or Node 26's deprecations, shows here).
# About 5.5 min per line on 2 cores. Usage: .ci/test-node-lines.sh [major...]   (default: 22 24 26)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(22 24 26)
failed=()
for line in "${lines[@]}"; do
  bin="$(.ci/node-line.sh "$line")" || { failed+=("$line (no binary)"); continue; }
  echo "::: Node $("$bin" --version): vitest run"
  PATH="$(dirname "$bin"):$PATH" node node_modules/vitest/vitest.mjs run || failed+=("$line")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "::: failed on Node ${failed[*]}"
  exit 1
fi
echo "::: passed on every line"
