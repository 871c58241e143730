"""Cassettes for one test, with pytest-recording's record modes:

| mode | the cassette exists | it does not |
|---|---|---|
| ``none`` | replay strictly | the test fails |
| ``once`` (default) | replay strictly | record |
| ``new_episodes`` | replay, and record what it lacks (``toolstorm replay --mode update``) | record |
| ``all`` | record anew | record |

Each cassette test gets a proxy process of its own (``toolstorm record`` or ``toolstorm replay``).
Recordings store paths, not hosts (``--url-form origin``), so a fake server on another port replays.
A recording (or an update) replaces the cassette only when the test passed: a failed test keeps
the cassette it had.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

from .proxy import Proxy, Run

RECORD_MODES = ("none", "once", "new_episodes", "all")


class CassetteError(AssertionError):
    """A cassette test cannot run as asked (``none`` with no cassette), or its replay diverged."""


class CassetteSession:
    """One test's cassette: which action its record mode means, the process serving it, and the file at the end."""

    def __init__(self, path: Path, record_mode: str) -> None:
        if record_mode not in RECORD_MODES:
            raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}, got {record_mode!r}")
        self.path = path
        self.record_mode = record_mode
        exists = path.is_file()
        if record_mode == "none" and not exists:
            raise CassetteError(f"toolstorm: the cassette {path} does not exist and the record mode is 'none'. Record it once with --toolstorm-record-mode=once.")
        #: ``replay``, ``update`` or ``record``.
        self.action = "record" if record_mode == "all" or not exists else ("update" if record_mode == "new_episodes" else "replay")
        self._work: Optional[Path] = None
        self.proxy: Optional[Proxy] = None

    @property
    def replaying(self) -> bool:
        return self.action in ("replay", "update")

    def start(self, *, args: Iterable[str] = (), **proxy_options: Any) -> Proxy:
        if self.action == "replay":
            proxy = Proxy(replay=self.path, args=args, **proxy_options)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Written next to the cassette and moved over it at the end: a failed test never leaves a half-recording.
            self._work = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.recording")
            if self.action == "update":
                shutil.copyfile(self.path, self._work)
                proxy = Proxy(replay=self._work, replay_mode="update", args=args, **proxy_options)
            else:
                proxy = Proxy(record=self._work, url_form="origin", args=args, **proxy_options)
        try:
            proxy.start()
        except BaseException:
            self._discard()
            raise
        self.proxy = proxy
        return proxy

    def run(self, run_id: str) -> Run:
        assert self.proxy is not None
        # Replayed faults replay as recorded: the test's rules would inject them a second time.
        run = Run(self.proxy, run_id, own_process=True, apply_rules=not self.replaying)
        run.cassette = self
        return run

    def verdict(self) -> Optional[Dict[str, Any]]:
        """The replay's verdict so far (None when recording)."""
        if not self.replaying or self.proxy is None:
            return None
        return self.proxy.verdict()

    def report(self) -> Optional[Dict[str, Any]]:
        """The replay report: the verdict, the table, and the effects the replayed exchanges had when recorded (None when recording)."""
        if not self.replaying or self.proxy is None:
            return None
        return self.proxy.admin.request("GET", "/report")

    def failure(self) -> Optional[str]:
        """The message that fails the test when the replay diverged (extra, mismatched or unused calls), else None."""
        verdict = self.verdict()
        if verdict is None or verdict.get("passed"):
            return None
        table = "\n".join("  " + line for line in str(verdict.get("table", "")).splitlines())
        return f"toolstorm: the replay of {self.path} failed: {verdict.get('message')}\n{table}\n  ({verdict.get('code')})"

    def finish(self, passed: bool) -> str:
        """Stop the process; keep a recording only when the test passed. What happened, in one line."""
        if self.proxy is not None:
            self.proxy.close()
        if self._work is None:
            return f"replayed {self.path}"
        if passed and self._work.exists():
            os.replace(self._work, self.path)
            return f"{'updated' if self.action == 'update' else 'recorded'} {self.path}"
        self._discard()
        return f"not {'updated' if self.action == 'update' else 'recorded'}: the test failed ({self.path} is unchanged)"

    def _discard(self) -> None:
        if self._work is not None:
            try:
                self._work.unlink()
            except FileNotFoundError:
                pass
