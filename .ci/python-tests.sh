#!/usr/bin/env bash
# The Python package's tests, as CI runs them: build the wheel from python/ (hatchling, from pip's
# configured indexes), install it into the test venv (.ci/python-venv.sh made it), then pytest
# python/tests with xdist (-n 2) and a JUnit report (pytest-report.xml) that .ci/run counts.
# The CLI the plugin drives is this checkout's (bin/toolstorm.js, dist/ built). Bounded in time.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=node_modules/.cache/toolstorm-py
source .ci/pip-index-args.sh
rm -rf python/dist pytest-report.xml
timeout 300 "$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --retries 2 --timeout 20 "${index_args[@]}" -w python/dist ./python || exit 1
wheel=$(ls python/dist/toolstorm-*.whl) || exit 1
timeout 120 "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --force-reinstall "$wheel" || exit 1
echo "::: Python package: $(basename "$wheel")"
TOOLSTORM_BIN="$PWD/bin/toolstorm.js" timeout "${TOOLSTORM_PYTEST_TIMEOUT:-900}" "$venv/bin/python" -m pytest python/tests -n 2 -p no:cacheprovider \
  --junitxml=pytest-report.xml -o junit_family=xunit2 -q
