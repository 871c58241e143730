"""``toolstorm.Proxy``: the toolstorm proxy (a Node process) driven from Python, and ``Run``: one
test's share of it (its own ordinals, rules, effects, report and contracts).

    with toolstorm.Proxy() as proxy:                     # forward mode: any upstream
        run = proxy.run()
        run.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}], seed=42)
        requests.post(run.url("http://127.0.0.1:4000") + "/ship", json=order)   # base URL, or:
        requests.post("http://127.0.0.1:4000/ship", json=order, proxies={"http": run.proxy_url})
        run.contract().no_duplicate_effects().at_most_calls(2).assert_valid()

The run travels in the addresses a run hands out (a ``/_run/<id>/`` path prefix, or the user
name of the proxy URL), so clients need no header (docs/proxy.md).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlsplit

from . import effects
from ._admin import AdminClient
from ._cli import CliProcess
from .contract import Contract
from .errors import ToolstormError

RulesInput = Union[None, Sequence[Mapping[str, Any]], Mapping[str, Any], str, os.PathLike]

REPLAY_MODES = ("replay", "update", "passthrough-unmatched")
#: Normalisers by name (docs/cassettes.md#normalisers); ``none`` turns a cassette's off for a replay.
NORMALISERS = ("ids", "timestamps", "uuids")


def normalise_names(value: Union[str, Sequence[str]]) -> List[str]:
    """``"ids,uuids"`` or ``["ids", "uuids"]`` or ``"none"`` as a checked list of names."""
    names = [name.strip() for item in ([value] if isinstance(value, str) else value) for name in str(item).split(",") if name.strip()]
    if names == ["none"]:
        return names
    unknown = [name for name in names if name not in NORMALISERS]
    if unknown or not names:
        raise ValueError(f"normalize: expected {', '.join(NORMALISERS)} (comma-separated) or none alone, got {','.join(names) or 'nothing'!r}")
    return names
_RUN_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~-")


def check_run_id(run_id: str) -> str:
    if not (1 <= len(run_id) <= 128) or not set(run_id) <= _RUN_ID_CHARS:
        raise ValueError(f"{run_id!r} is not a run id: 1-128 letters, digits, '.', '_', '~' or '-'.")
    return run_id


def rules_document(rules: RulesInput, seed: Optional[int] = None, max_calls: Optional[int] = None, routes: Optional[Mapping[str, str]] = None) -> Tuple[str, str]:
    """The body and content type of ``PUT /rules``: a list of rules, a rules-file mapping, or a JSON/YAML file."""
    extra: Dict[str, Any] = {}
    if seed is not None:
        extra["seed"] = seed
    if max_calls is not None:
        extra["maxCalls"] = max_calls
    if routes is not None:
        extra["routes"] = dict(routes)
    if isinstance(rules, (str, os.PathLike)):
        path = Path(rules)
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() in (".yaml", ".yml"):
            if extra:
                raise ValueError(f"Failed to set rules from {path}: seed, max_calls and routes cannot be merged into a YAML file here; set them in the file.")
            return text, "application/yaml"
        document: Dict[str, Any] = json.loads(text)
    elif rules is None:
        document = {"rules": []}
    elif isinstance(rules, Mapping):
        document = dict(rules)
    else:
        document = {"rules": [dict(rule) for rule in rules]}
    document.update(extra)
    return json.dumps(document), "application/json"


def _ca_env(ca: Optional[str]) -> Dict[str, str]:
    if not ca:
        return {}
    # Each replaces its client's bundle: fine while every HTTPS host goes through (and is signed by) the proxy.
    return {"SSL_CERT_FILE": ca, "REQUESTS_CA_BUNDLE": ca, "CURL_CA_BUNDLE": ca, "NODE_EXTRA_CA_CERTS": ca}


class Proxy:
    """A toolstorm proxy process. Forward mode (any upstream) unless ``target``/``targets`` are given.

    ``record``: a cassette file every exchange is recorded into (written when the proxy closes).
    ``replay``: a cassette served with no upstream (``replay_mode``: ``replay``, ``update`` or
    ``passthrough-unmatched``). ``normalize``: normalisers (``"ids,timestamps,uuids"``) a recording
    keeps in its cassette header, or a replay uses instead of the header's (``"none"``: none).
    ``live`` / ``replay_only`` (replay): route globs sent to the network instead of the cassette,
    or the only ones replayed. ``args``: more CLI flags (``["--clock", "virtual"]``).
    """

    def __init__(
        self,
        target: Optional[str] = None,
        *,
        targets: Union[None, Mapping[str, str], Sequence[str]] = None,
        rules: RulesInput = None,
        seed: Optional[int] = None,
        record: Union[None, str, os.PathLike] = None,
        replay: Union[None, str, os.PathLike] = None,
        replay_mode: str = "replay",
        url_form: Optional[str] = None,
        normalize: Union[None, str, Sequence[str]] = None,
        normalize_pattern: Union[None, str, Sequence[str]] = None,
        normalize_path: Union[None, str, Sequence[str]] = None,
        live: Sequence[str] = (),
        replay_only: Sequence[str] = (),
        args: Iterable[str] = (),
        cli: Optional[Sequence[str]] = None,
        cwd: Union[None, str, os.PathLike] = None,
        env: Optional[Mapping[str, str]] = None,
        start_timeout: float = 30.0,
    ) -> None:
        if record is not None and replay is not None:
            raise ValueError("Proxy(record=…, replay=…): choose one (replay_mode='update' records what the cassette lacks).")
        if replay_mode not in REPLAY_MODES:
            raise ValueError(f"replay_mode must be one of {', '.join(REPLAY_MODES)}, got {replay_mode!r}")
        target_args: List[str] = []
        if target is not None:
            target_args += ["--target", target]
        if isinstance(targets, Mapping):
            for name, url in targets.items():
                target_args += ["--target", f"{name}={url}"]
        elif targets is not None:
            for value in targets:
                target_args += ["--target", value]
        if replay is not None:
            command = ["replay", os.fspath(replay), "--mode", replay_mode]
        elif record is not None:
            command = ["record", os.fspath(record)]
        else:
            command = ["proxy"]
        if url_form is not None:
            command += ["--url-form", url_form]
        if normalize is not None:
            # Recording: kept in the cassette header. Replay: instead of the header's (none: no normaliser).
            command += ["--normalize", ",".join(normalise_names(normalize))]
        # Regular expressions and JSON paths the CLI checks (a bad one: it exits 2 naming the flag).
        for flag, values in (("--normalize-pattern", normalize_pattern), ("--normalize-path", normalize_path)):
            for value in [values] if isinstance(values, str) else values or ():
                command += [flag, value]
        if (live or replay_only) and replay is None:
            raise ValueError("Proxy(live=…, replay_only=…): live routes are for a replay (replay=…).")
        for glob in [live] if isinstance(live, str) else live:
            command += ["--live", glob]
        for glob in [replay_only] if isinstance(replay_only, str) else replay_only:
            command += ["--replay-only", glob]
        self._args = [*command, *target_args, "--port", "0", "--admin-port", "0", *args]
        self._cli = cli
        self._cwd = cwd
        self._env = env
        self._start_timeout = start_timeout
        self._initial_rules = (rules, seed) if rules is not None or seed is not None else None
        self._process: Optional[CliProcess] = None
        self._admin: Optional[AdminClient] = None
        self._sidecar: Optional[Tuple[str, str]] = None
        self.exit_code: Optional[int] = None

    # Lifecycle -------------------------------------------------------------------------------

    def start(self) -> "Proxy":
        if self._process is not None:
            return self
        self._process = CliProcess(self._args, cli=self._cli, cwd=self._cwd, env=self._env, timeout=self._start_timeout)
        self._admin = AdminClient(self.info["adminUrl"], self.info["token"])
        # Tool servers in this process report effects here unless told otherwise (TOOLSTORM_SIDECAR, configure()).
        self._sidecar = (self.admin_url, self.token)
        shared = effects.registry()
        with shared.lock:
            shared.sidecars.append(self._sidecar)
        if self._initial_rules is not None:
            try:
                self.set_rules(*self._initial_rules)
            except BaseException:
                self.close()
                raise
        return self

    def close(self) -> Optional[int]:
        """Stop the process (it writes its cassette or report first); its exit code (replay: 1 when the replay diverged)."""
        if self._process is not None and self.exit_code is None:
            shared = effects.registry()
            with shared.lock:
                if self._sidecar in shared.sidecars:
                    shared.sidecars.remove(self._sidecar)
            if self._admin is not None:
                self._admin.close_connection()
            self.exit_code = self._process.stop()
        return self.exit_code

    def __enter__(self) -> "Proxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._process is not None and self.exit_code is None and self._process.process.poll() is None

    def ended(self) -> Optional[str]:
        """When the process ended on its own (it crashed, or was killed) rather than by ``close()``: which
        process and how (``(toolstorm proxy, pid 41) was killed by SIGKILL``); None while it runs, or once closed."""
        if self._process is None or self.exit_code is not None:
            return None
        how = self._process.ended()
        return None if how is None else f"(toolstorm {self._args[0]}, pid {self._process.process.pid}) {how}"

    def last_output(self) -> str:
        """The CLI's last lines of output, as a paragraph to append to a message ("" when it printed none)."""
        lines = self.output.splitlines()[-20:]
        return "\nIts last output:\n" + "\n".join("  " + line for line in lines) if lines else ""

    # Where it listens ------------------------------------------------------------------------

    @property
    def info(self) -> Dict[str, Any]:
        """The CLI's ready line: url, port, adminUrl, adminPort, token, mode, ca, pid, cassette."""
        if self._process is None:
            raise ToolstormError("The proxy is not started: use it as a context manager, or call start().")
        return self._process.info

    @property
    def admin(self) -> AdminClient:
        self.info  # noqa: B018 - raises when not started
        assert self._admin is not None
        return self._admin

    @property
    def url(self) -> str:
        """The data plane: the base URL in reverse mode, the proxy URL in forward mode."""
        return str(self.info["url"])

    @property
    def proxy_url(self) -> str:
        """What ``HTTP_PROXY`` should be (forward mode)."""
        return self.url

    @property
    def admin_url(self) -> str:
        return str(self.info["adminUrl"])

    sidecar_url = admin_url

    @property
    def token(self) -> str:
        return str(self.info["token"])

    @property
    def mode(self) -> str:
        """``forward`` or ``reverse``."""
        return str(self.info["mode"])

    @property
    def ca_path(self) -> Optional[str]:
        """The CA certificate HTTPS clients must trust (forward mode), else None."""
        return self.info.get("ca")

    @property
    def output(self) -> str:
        """What the CLI printed after it was ready (warnings, the cassette line)."""
        return self._process.output if self._process is not None else ""

    @property
    def env(self) -> Dict[str, str]:
        """The environment a subprocess agent needs to go through this proxy (run ``default``, or the active run)."""
        env = {"TOOLSTORM_SIDECAR": self.admin_url, "TOOLSTORM_PROXY_URL": self.url}
        if self.mode == "forward":
            env.update(HTTP_PROXY=self.url, http_proxy=self.url, HTTPS_PROXY=self.url, https_proxy=self.url, NO_PROXY="", no_proxy="")
            env.update(_ca_env(self.ca_path))
        return env

    # The admin API ---------------------------------------------------------------------------

    def set_rules(self, rules: RulesInput = None, seed: Optional[int] = None, *, run: Optional[str] = None, max_calls: Optional[int] = None, routes: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
        """Replace the rules (of every run, or of ``run`` only); the answer lists rules that can never fire as ``warnings``."""
        text, content_type = rules_document(rules, seed, max_calls, routes)
        return self.admin.request("PUT", "/rules", query={"run": run}, text=text, content_type=content_type)

    def reset(self, run: Optional[str] = None) -> None:
        """Forget a run (or every run): ordinals, calls, effects and coverage start again."""
        self.admin.request("POST", "/reset", query={"run": run})

    def report(self, run: Optional[str] = None) -> Dict[str, Any]:
        """The run's report (docs/contracts.md#reports); empty for a run with no calls."""
        return self.admin.request("GET", "/report", query={"run": run})

    def contract(self, run: Optional[str] = None) -> Contract:
        return Contract(lambda checks: self.admin.request("POST", "/contract", query={"run": run}, body={"checks": checks}))

    def activate(self, run: Optional[str]) -> None:
        """Make ``run`` the one requests that name no run go to (None: back to ``default``)."""
        if run is None:
            self.admin.request("DELETE", "/active-run")
        else:
            self.admin.request("PUT", "/active-run", query={"run": run})

    def verdict(self) -> Dict[str, Any]:
        """A replay's verdict so far: passed, code, message, counts, rows and ``table``."""
        return self.admin.request("GET", "/verdict")

    def run(self, run_id: Optional[str] = None) -> "Run":
        """A handle on one run of this proxy (a fresh id by default)."""
        return Run(self, check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12])


#: What a toolstorm command gives the command it runs next to its proxy, naming one run of it
#: (``toolstorm explore -- python -m pytest …``: docs/cassettes.md#the-commands-environment).
ATTACH_VARIABLES = ("TOOLSTORM_RUN", "TOOLSTORM_PROXY_URL", "TOOLSTORM_SIDECAR", "TOOLSTORM_ADMIN_TOKEN")


class AttachedProxy(Proxy):
    """The proxy of the toolstorm command this process runs under (``toolstorm explore -- pytest …``),
    known from the environment that command gave it (``ATTACH_VARIABLES``): not started here, not
    stopped here, and its run (``run_id``) is the one the command named. Rules are that command's:
    ``Run.rules()`` on it is refused rather than replacing them."""

    def __init__(self, environ: Mapping[str, str]) -> None:  # noqa: D107 - no process: the base's arguments do not apply
        self.run_id = check_run_id(environ["TOOLSTORM_RUN"])
        base = environ["TOOLSTORM_PROXY_URL"].rstrip("/")
        suffix = f"/_run/{self.run_id}"
        mode = environ.get("TOOLSTORM_PROXY_MODE", "forward")
        self._info: Dict[str, Any] = {
            "url": base[: -len(suffix)] if base.endswith(suffix) else base,
            "adminUrl": environ["TOOLSTORM_SIDECAR"],
            "token": environ["TOOLSTORM_ADMIN_TOKEN"],
            "mode": mode if mode in ("forward", "reverse") else "forward",
            "ca": environ.get("TOOLSTORM_CA") or None,
        }
        self._process = None
        self._admin = AdminClient(self._info["adminUrl"], self._info["token"])
        self._sidecar = None
        self.exit_code = None

    @classmethod
    def from_environment(cls, environ: Optional[Mapping[str, str]] = None) -> Optional["AttachedProxy"]:
        """The proxy this process runs next to, when a toolstorm command named one of its runs; else None."""
        env = os.environ if environ is None else environ
        return cls(env) if all(env.get(name) for name in ATTACH_VARIABLES) else None

    def start(self) -> "Proxy":
        return self

    def close(self) -> Optional[int]:
        if self._admin is not None:
            self._admin.close_connection()
        return None

    @property
    def running(self) -> bool:
        return True

    @property
    def info(self) -> Dict[str, Any]:
        return self._info

    def activate(self, run: Optional[str]) -> None:
        """Nothing: the command's runs name themselves in their addresses, several at once (``--jobs``)."""

    def set_rules(self, rules: RulesInput = None, seed: Optional[int] = None, *, run: Optional[str] = None, max_calls: Optional[int] = None, routes: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
        raise ToolstormError(EXPLORED_RULES)


#: Why a run of a proxy this process is attached to refuses rules.
EXPLORED_RULES = (
    "toolstorm: this run belongs to the toolstorm command this test runs under (toolstorm explore, or the plugin's "
    "--toolstorm-explore / explore=True), which sets its rules: one fault per run. A test that sets its own rules "
    "already tests one fault: mark it @pytest.mark.toolstorm(explore=False), or explore the test without them."
)


class Run:
    """One run of a proxy: the addresses that name it, its rules, report and contracts."""

    def __init__(self, proxy: Proxy, run_id: str, *, own_process: bool = False, apply_rules: bool = True) -> None:
        self.proxy = proxy
        self.id = check_run_id(run_id)
        # A proxy started for this run alone (a cassette test): its rules are the proxy's, so a recorded cassette lists them.
        self._own_process = own_process
        # Replaying a cassette: the recorded faults replay as recorded, rules would inject them twice.
        self._apply_rules = apply_rules
        self.require_triggered: Optional[bool] = None
        #: Why the last ``rules()`` call failed (None: it set them): the run went on without those rules.
        self.rules_error: Optional[str] = None
        #: The ``CassetteSession`` of a cassette test (``.path``, ``.action``, ``.replaying``), else None.
        self.cassette: Any = None

    def __repr__(self) -> str:
        return f"<toolstorm run {self.id} on {self.proxy.url}>"

    @property
    def proxy_url(self) -> str:
        """The proxy URL with the run in its credentials (``http://<run>:toolstorm@127.0.0.1:port``)."""
        parts = urlsplit(self.proxy.url)
        return f"{parts.scheme}://{quote(self.id, safe='')}:toolstorm@{parts.netloc}"

    def url(self, target: Optional[str] = None) -> str:
        """A base URL for ``target`` whose path names this run: give it to an SDK as ``base_url``.

        Forward mode: ``target`` is the upstream (``http://127.0.0.1:4000/v1``). Reverse mode: none
        (the proxy's target) or the name of a mounted target.
        """
        base = f"{self.proxy.url}/_run/{self.id}"
        if self.proxy.mode == "reverse":
            return base if not target else f"{base}/{target.strip('/')}"
        if not target:
            raise ValueError("run.url(target): in forward mode, name the upstream, as in url('http://127.0.0.1:4000/v1').")
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"run.url({target!r}): expected an http:// or https:// URL.")
        if "@" in parts.netloc:
            raise ValueError(f"run.url({target!r}): put credentials in headers, not in the URL.")
        path = parts.path.rstrip("/")
        return f"{base}/{parts.scheme}/{parts.netloc}{path}" + (f"?{parts.query}" if parts.query else "")

    @property
    def admin_url(self) -> str:
        return self.proxy.admin_url

    sidecar_url = admin_url

    @property
    def ca_path(self) -> Optional[str]:
        return self.proxy.ca_path

    @property
    def env(self) -> Dict[str, str]:
        """What a subprocess agent needs for its traffic to be this run's: the proxy (``HTTP(S)_PROXY``
        with the run in its credentials, ``NO_PROXY`` emptied so loopback servers go through too),
        the CA bundle variables for HTTPS, and ``TOOLSTORM_SIDECAR`` for the effects helper."""
        env = {"TOOLSTORM_SIDECAR": self.admin_url, "TOOLSTORM_RUN": self.id}
        token = getattr(self.proxy, "token", None)
        if token:
            # report_claim() needs it (claims are admin API calls; effects are not).
            env["TOOLSTORM_ADMIN_TOKEN"] = str(token)
        if self.proxy.mode == "forward":
            url = self.proxy_url
            env.update(TOOLSTORM_PROXY_URL=url, HTTP_PROXY=url, http_proxy=url, HTTPS_PROXY=url, https_proxy=url, NO_PROXY="", no_proxy="")
            env.update(_ca_env(self.ca_path))
        else:
            env["TOOLSTORM_PROXY_URL"] = self.url()
        return env

    def rules(self, rules: RulesInput = None, seed: Optional[int] = None, *, require_triggered: bool = True, max_calls: Optional[int] = None, routes: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
        """This run's rules (replacing any it had): a list of rules, a rules-file mapping, or a JSON/YAML file.

        ``require_triggered``: under pytest, the test fails at its end when one never triggered.
        """
        try:
            if isinstance(self.proxy, AttachedProxy):
                raise ToolstormError(EXPLORED_RULES)
            text, content_type = rules_document(rules, seed, max_calls, routes)
            self.require_triggered = require_triggered
            answer = {"ok": True, "run": self.id, "applied": False, "warnings": []}
            if self._apply_rules:
                answer = self.proxy.admin.request("PUT", "/rules", query={"run": None if self._own_process else self.id}, text=text, content_type=content_type)
        except Exception as error:
            # Under pytest the test fails at its end even when it caught this: it ran without those rules.
            self.rules_error = f"{type(error).__name__}: {error}"
            raise
        self.rules_error = None
        return answer

    def report(self) -> Dict[str, Any]:
        """This run's report: calls, effects, coverage, rules (docs/contracts.md#reports)."""
        return self.proxy.report(self.id)

    def contract(self) -> Contract:
        """Checks on this run's evidence, evaluated by the proxy."""
        return self.proxy.contract(self.id)

    def reset(self) -> None:
        """Start the run again: ordinals, calls, effects and coverage (its rules stay)."""
        self.proxy.reset(self.id)
