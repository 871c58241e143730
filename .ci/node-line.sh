#!/usr/bin/env bash
# Print the path of a Node binary of the given major line (22, 24, 26, ...), installing the
# registry's `node@<major>` package (it brings the binary) into node_modules/.cache once.
# Usage: .ci/node-line.sh 24
set -euo pipefail
major="${1:?usage: node-line.sh <major>}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/node_modules/.cache/toolstorm-node/$major"
bin="$dir/node_modules/node/bin/node"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || echo '{"name":"toolstorm-node-line","private":true}' >"$dir/package.json"
  (cd "$dir" && npm install "node@$major" --no-audit --no-fund --prefer-offline --loglevel=error >&2)
fi
"$bin" -e "if (process.versions.node.split('.')[0] !== '$major') { console.error('node@$major gave ' + process.version); process.exit(1) }"
echo "$bin"
