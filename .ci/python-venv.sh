#!/usr/bin/env bash
# The Python test clients (.ci/python-requirements.txt) in a venv under node_modules/.cache, where the
# tests look for them (TOOLSTORM_PYTHON overrides). Bounded in time; idempotent.
# pip's default index (PyPI) is out of reach on these machines and its retries cost minutes, so when
# pip is configured with other indexes (extra-index-url), those are used directly.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=node_modules/.cache/toolstorm-py
limit=${TOOLSTORM_PIP_TIMEOUT:-420}
[ -x "$venv/bin/python" ] || timeout "$limit" python3 -m venv "$venv" || exit 1
index_args=()
read -r -a extra <<<"$(pip config get global.extra-index-url 2>/dev/null | tr '\n' ' ')"
if [ ${#extra[@]} -gt 0 ]; then
  index_args+=(--index-url "${extra[0]}")
  for url in "${extra[@]:1}"; do index_args+=(--extra-index-url "$url"); done
fi
timeout "$limit" "$venv/bin/pip" install -q --disable-pip-version-check --retries 2 --timeout 20 \
  "${index_args[@]}" -r .ci/python-requirements.txt 2>&1 | grep -v "is ignored: it is neither a file nor a directory" >&2
exit "${PIPESTATUS[0]}"
