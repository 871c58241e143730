#!/usr/bin/env bash
# The Python test clients (.ci/python-requirements.txt) in a venv under node_modules/.cache, where the
# tests look for them (TOOLSTORM_PYTHON overrides). Bounded in time; idempotent.
# Indexes: .ci/pip-index-args.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=node_modules/.cache/toolstorm-py
limit=${TOOLSTORM_PIP_TIMEOUT:-420}
[ -x "$venv/bin/python" ] || timeout "$limit" python3 -m venv "$venv" || exit 1
source .ci/pip-index-args.sh
timeout "$limit" "$venv/bin/pip" install -q --disable-pip-version-check --retries 2 --timeout 20 \
  "${index_args[@]}" -r .ci/python-requirements.txt 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2
exit "${PIPESTATUS[0]}"
