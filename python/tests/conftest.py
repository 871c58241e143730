"""Shared fixtures for the package's own tests: fake upstreams, and the CLI of this repository.

In a project of yours the plugin finds ``node_modules/.bin/toolstorm``; this repository is the
toolstorm package itself, so its tests point ``TOOLSTORM_BIN`` at ``bin/toolstorm.js`` (built
``dist/`` needed: ``npx tsc -p tsconfig.json``).
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TOOLSTORM_BIN", str(ROOT / "bin" / "toolstorm.js"))
# Forward mode intercepts HTTPS with a CA from a folder: the tests' own, not the one in your home.
os.environ.setdefault("TOOLSTORM_CA_DIR", str(ROOT / "node_modules" / ".cache" / "toolstorm-py-ca"))

pytest_plugins = ["pytester", "upstreams"]
