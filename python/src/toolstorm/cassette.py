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
the cassette it had. Bodies over 64 KiB live in a folder beside the cassette (``chat.jsonl`` keeps
them in ``chat.bodies/``, see docs/cassettes.md): it is copied, moved and pruned with the cassette.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple, Union

from .proxy import Proxy, Run

RECORD_MODES = ("none", "once", "new_episodes", "all")


def bodies_folder(cassette: Path) -> Path:
    """The folder of a cassette's body files, as toolstorm names it: the name without ``.jsonl``, plus ``.bodies``."""
    name = cassette.name[: -len(".jsonl")] if cassette.name.lower().endswith(".jsonl") else cassette.name
    return cassette.with_name(name + ".bodies")


def _is_body_file(name: str) -> bool:
    return name.startswith("sha256-") or (name.startswith(".toolstorm-") and name.endswith(".tmp"))


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
        #: Routes a replay sends to the network (``live``), or the only ones it replays (``replay_only``).
        self.live: Tuple[str, ...] = ()
        self.replay_only: Tuple[str, ...] = ()

    @property
    def replaying(self) -> bool:
        return self.action in ("replay", "update")

    def start(self, *, args: Iterable[str] = (), normalize: Union[None, str, Sequence[str]] = None, live: Sequence[str] = (), replay_only: Sequence[str] = (), **proxy_options: Any) -> Proxy:
        """Start the process. ``normalize``: normalisers a recording keeps in the header, or a replay
        uses instead (``"none"``); ``normalize_pattern`` / ``normalize_path`` (in ``proxy_options``):
        the user's regular expressions and JSON paths, the same way. ``live`` / ``replay_only``: route
        globs a replay (or an update) sends to the network instead of the cassette, under the test's
        rules; a recording ignores them."""
        if normalize is not None:
            proxy_options["normalize"] = normalize
        self.live = (live,) if isinstance(live, str) else tuple(live)
        self.replay_only = (replay_only,) if isinstance(replay_only, str) else tuple(replay_only)
        if self.action != "record":
            proxy_options.update(live=self.live, replay_only=self.replay_only)
        if self.action == "replay":
            proxy = Proxy(replay=self.path, args=args, **proxy_options)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Written next to the cassette and moved over it at the end: a failed test never leaves a half-recording.
            self._work = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.recording")
            if self.action == "update":
                shutil.copyfile(self.path, self._work)
                if bodies_folder(self.path).is_dir():
                    shutil.copytree(bodies_folder(self.path), bodies_folder(self._work))
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
        # Replayed faults replay as recorded: the test's rules would inject them a second time. With
        # live routes they apply: the live calls run under them (scope them to the live routes).
        run = Run(self.proxy, run_id, own_process=True, apply_rules=not self.replaying or bool(self.live or self.replay_only))
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
        """Stop the process; keep a recording only when the test passed and toolstorm wrote all of it.
        What happened, in one line; raises CassetteError when the recording could not be written."""
        code = self.proxy.close() if self.proxy is not None else None
        if self._work is None:
            return f"replayed {self.path}"
        if code:
            # It could not write every exchange (a full disk): what it wrote must not replace the cassette.
            output = self.proxy.output if self.proxy is not None else ""
            said = "\n".join(line for line in output.splitlines() if line.startswith("[toolstorm] Failed") or line.strip().startswith("(ERR_"))
            self._discard()
            action = "update" if self.action == "update" else "recording"
            raise CassetteError(f"toolstorm: the {action} of {self.path} failed (toolstorm exited {code}), so {self.path} is unchanged." + (f"\n{said}" if said else ""))
        if passed and self._work.exists():
            self._replace_cassette()
            return f"{'updated' if self.action == 'update' else 'recorded'} {self.path}"
        self._discard()
        return f"not {'updated' if self.action == 'update' else 'recorded'}: the test failed ({self.path} is unchanged)"

    def _replace_cassette(self) -> None:
        """The recording becomes the cassette, with its body files: new files first (content-addressed,
        so an existing name holds the same bytes), then the cassette, then the files it no longer needs
        go, as toolstorm itself rewrites a cassette: a crash leaves the old or the new one loadable."""
        assert self._work is not None
        work_bodies, bodies = bodies_folder(self._work), bodies_folder(self.path)
        kept = set()
        if work_bodies.is_dir():
            bodies.mkdir(exist_ok=True)
            for file in work_bodies.iterdir():
                os.replace(file, bodies / file.name)
                kept.add(file.name)
            work_bodies.rmdir()
        os.replace(self._work, self.path)
        if bodies.is_dir():
            for file in bodies.iterdir():
                if _is_body_file(file.name) and file.name not in kept:
                    file.unlink()
            if not any(bodies.iterdir()):
                bodies.rmdir()

    def _discard(self) -> None:
        if self._work is not None:
            try:
                self._work.unlink()
            except FileNotFoundError:
                pass
            shutil.rmtree(bodies_folder(self._work), ignore_errors=True)
