"""Shared fixtures for the package's own tests: fake upstreams, and the CLI of this repository.

In a project of yours the plugin finds ``node_modules/.bin/toolstorm``; this repository is the
toolstorm package itself, so its tests point ``TOOLSTORM_BIN`` at ``bin/toolstorm.js`` (built
``dist/`` needed: ``npx tsc -p tsconfig.json``).
"""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TOOLSTORM_BIN", str(ROOT / "bin" / "toolstorm.js"))
# Forward mode intercepts HTTPS with a CA from a folder: the tests' own, not the one in your home.
os.environ.setdefault("TOOLSTORM_CA_DIR", str(ROOT / "node_modules" / ".cache" / "toolstorm-py-ca"))

pytest_plugins = ["pytester", "upstreams"]


@pytest.fixture
def suite(pytester, monkeypatch):
    """A pytester folder with the fake servers importable, as a user's tests folder would have its own.
    Its runs are subprocesses (``runpytest`` is ``runpytest_subprocess`` here): a second in-process
    session would share this one's imported modules. No TOOLSTORM_SIDECAR comes in from this session:
    the suite's plugin must name its own proxies."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])))
    for name in ("TOOLSTORM_SIDECAR", "TOOLSTORM_ADMIN_TOKEN", "TOOLSTORM_RUN"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest('pytest_plugins = ["upstreams"]\n')
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.runpytest = pytester.runpytest_subprocess
    return pytester
