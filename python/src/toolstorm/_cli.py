"""Finding and starting the toolstorm CLI (a Node program) and reading its ready line.

The CLI is found in this order: ``TOOLSTORM_BIN``, then ``node_modules/.bin/toolstorm`` in the
current directory or a parent, then ``toolstorm`` on ``PATH``. A JavaScript entry point is run with
``node`` directly (``TOOLSTORM_NODE``, else ``node`` on ``PATH``), never through ``npx`` or an npm
shim: signals must reach the process that holds the ports and writes the files.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence

from .errors import CliNotFoundError, ProxyStartError

#: How to install the CLI while toolstorm is not on the npm registry: build its package from the
#: repository (npm runs the prepack build of a packed tarball, not of a git dependency), then install
#: the file. The same lines as README.md ("Install in your project") and docs/python.md; the
#: packaging test (test/packaging/install-tarball.test.ts) holds the three to each other.
INSTALL_STEPS = (
    "git clone https://github.com/toolstorm/toolstorm.git ../toolstorm",
    "(cd ../toolstorm && npm ci && npm pack)",
    "npm i -D ../toolstorm/toolstorm-*.tgz",
)
INSTALL_HINT = "\n".join(INSTALL_STEPS)
_JS_SUFFIXES = (".js", ".mjs", ".cjs")


def _is_node_script(path: Path) -> bool:
    if path.suffix in _JS_SUFFIXES:
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first


def _node() -> str:
    node = os.environ.get("TOOLSTORM_NODE") or shutil.which("node")
    if not node:
        raise CliNotFoundError(
            "Failed to start toolstorm: Node.js (node) is not on PATH. Install Node.js 20.19 or later, or set TOOLSTORM_NODE to the node binary."
        )
    return node


def _command_for(path: Path) -> List[str]:
    """The argv that runs the CLI at ``path``: node and the real script behind any symlink."""
    real = path.resolve()
    if _is_node_script(real):
        return [_node(), str(real)]
    # An npm shim that is not a symlink (Windows .cmd, or a copied shell script): run the package's own script.
    package_script = path.parent.parent / "toolstorm" / "bin" / "toolstorm.js"
    if path.parent.name == ".bin" and package_script.is_file():
        return [_node(), str(package_script.resolve())]
    return [str(real)]


def find_cli(cwd: Optional[os.PathLike] = None, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The argv prefix that runs the toolstorm CLI, or ``CliNotFoundError`` saying how to install it."""
    env = os.environ if environ is None else environ
    explicit = env.get("TOOLSTORM_BIN")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise CliNotFoundError(f"Failed to start toolstorm: TOOLSTORM_BIN is {explicit!r}, which is not a file. Point it at the toolstorm CLI (node_modules/.bin/toolstorm), or unset it.")
        return _command_for(path)
    here = Path(cwd if cwd is not None else os.getcwd()).resolve()
    for folder in (here, *here.parents):
        for name in ("toolstorm", "toolstorm.cmd"):
            shim = folder / "node_modules" / ".bin" / name
            if shim.exists():
                return _command_for(shim)
    on_path = shutil.which("toolstorm", path=env.get("PATH"))
    if on_path:
        return _command_for(Path(on_path))
    steps = "".join(f"\n    {step}" for step in INSTALL_STEPS)
    raise CliNotFoundError(
        "Failed to start toolstorm: the toolstorm CLI was not found (TOOLSTORM_BIN, node_modules/.bin/toolstorm in "
        f"{here} or a parent, toolstorm on PATH). toolstorm is not on the npm registry yet: from your project's "
        f"folder, build its package from the repository and install it:\n{steps}\n\n"
        "or set TOOLSTORM_BIN to the CLI (bin/toolstorm.js of a clone)."
    )


class CliProcess:
    """A running ``toolstorm proxy|record|replay … --ready-json``: its ready line, its output, its end."""

    def __init__(self, args: Sequence[str], *, cli: Optional[Sequence[str]] = None, cwd: Optional[os.PathLike] = None, env: Optional[Mapping[str, str]] = None, timeout: float = 30.0) -> None:
        command = [*(cli if cli is not None else find_cli(cwd)), *args, "--ready-json"]
        self.command = command
        # The last lines of output, for error messages (the CLI prints little once it is ready).
        self._output: Deque[str] = collections.deque(maxlen=200)
        self._ready_line: Optional[str] = None
        self._ready = threading.Event()
        self.process = subprocess.Popen(
            command,
            cwd=None if cwd is None else str(cwd),
            env=None if env is None else dict(env),
            # A pipe held open for the process's life: it reaches end-of-file when this process ends,
            # however it ends, for a CLI that watches it (and a CLI that reads nothing is not blocked).
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, name="toolstorm-stdout", daemon=True),
            threading.Thread(target=self._drain, args=(self.process.stderr,), name="toolstorm-stderr", daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.info = self._wait_ready(timeout)

    def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        first = stream.readline()
        self._ready_line = first.decode("utf-8", "replace")
        self._ready.set()
        self._drain(stream)

    def _drain(self, stream: Any) -> None:
        for line in iter(stream.readline, b""):
            self._output.append(line.decode("utf-8", "replace").rstrip("\n"))
        stream.close()

    def _wait_ready(self, timeout: float) -> Dict[str, Any]:
        if not self._ready.wait(timeout):
            self.kill()
            raise ProxyStartError(f"Failed to start toolstorm: no ready line within {timeout:g} s from {' '.join(self.command)}.{self._tail()}")
        line = self._ready_line or ""
        try:
            info = json.loads(line)
        except ValueError:
            info = None
        if not isinstance(info, dict) or info.get("ready") is not True:
            code = self.process.wait(timeout=10) if not line else self.process.poll()
            self.kill()
            for reader in self._readers:  # what it printed before it ended, for the message
                reader.join(2)
            what = f"it exited with code {code}" if not line else f"its first line was not the ready JSON: {line.strip()[:200]!r}"
            raise ProxyStartError(f"Failed to start toolstorm ({' '.join(self.command)}): {what}.{self._tail()}")
        return info

    def ended(self) -> Optional[str]:
        """How the process ended (``exited with code 1``, ``was killed by SIGKILL``), or None while it runs."""
        code = self.process.poll()
        if code is None:
            return None
        if code < 0:
            try:
                return f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def _tail(self) -> str:
        lines = list(self._output)[-20:]
        return ("\n" + "\n".join(lines)) if lines else ""

    @property
    def output(self) -> str:
        """What the CLI printed after its ready line (stderr included), the last 200 lines."""
        return "\n".join(self._output)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM (the CLI writes its files, then exits), then the exit code; killed if it does not end in ``timeout``."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.poll() is None:
            try:
                if sys.platform == "win32":
                    self.process.terminate()
                else:
                    self.process.send_signal(signal.SIGTERM)
            except OSError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.wait()

    def kill(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
