"""toolstorm effects helper for Python tool servers (one file, standard library only).

Report each commit your tool server makes to the toolstorm proxy's sidecar, so contracts such
as "no duplicate effects" run on what really happened. Copy this file next to your server.

It is fail-open:
- a request without the ``x-toolstorm-call`` header (production traffic) is ignored at once;
- when the sidecar is unreachable it warns once (``ToolstormWarning``), never raises into your
  code, and gives up after a short timeout (1 s by default);
- ``stats()`` counts what was sent, dropped and skipped; ``flush()`` waits for pending reports.

Call ``report_effect`` at the commit point, before you send your response: the effect is then
on record before your response reaches the proxy.

    from toolstorm_effects import report_effect   # or, with the Python package: from toolstorm.effects import report_effect

    @app.post("/shipments")
    def create_shipment():
        shipment = db.create_shipment(request.json)
        report_effect(request.headers, "shipment", request.json["order_id"])
        return shipment, 201

Where reports go: the sidecar URL given to ``ToolstormEffects(sidecar_url=...)``,
``set_sidecar(url)`` or ``configure(sidecar_url=...)``, else TOOLSTORM_SIDECAR (the proxy's admin
URL) as it is when the report is sent, else the newest ``toolstorm.Proxy`` running in this process,
else http://127.0.0.1:8788. The URL can change at any time (a test suite starts a proxy on a new
port per session); TOOLSTORM_ADMIN_TOKEN is read the same way (optional: the call id alone is
enough to report for that call).

An effect that could not be recorded (no sidecar answered, or it refused the report) is a commit
the contracts will not see: every helper in the process counts them, ``undelivered()`` says how
many and why the last one failed, and the pytest plugin fails a test during which one was lost. It
counts as well the claims that were not recorded, and the effects reported for a request with no
call id (``untracked``: a call that did not come through toolstorm).

The agent's side reports claims the same way, ``report_claim(tool, "success" | "failure")``: what
it concluded about a tool call, held against the commits under it (docs/claims.md). Claims need
the admin token (TOOLSTORM_ADMIN_TOKEN) and are sent only when a sidecar is named.
"""

import json
import logging
import os
import sys
import threading
import time
import types
import urllib.error
import urllib.request
import warnings

__all__ = ["ToolstormEffects", "ToolstormWarning", "report_effect", "report_claim", "stats", "flush", "configure", "undelivered", "registry", "CALL_HEADER", "DEFAULT_SIDECAR"]

CALL_HEADER = "x-toolstorm-call"
DEFAULT_SIDECAR = "http://127.0.0.1:8788"
_log = logging.getLogger("toolstorm")
_REGISTRY = "_toolstorm_effects_registry"


def registry():
    """What every copy of this helper in the process shares (this file copied next to a server and
    ``toolstorm.effects`` are two modules): the proxies running here (``toolstorm.Proxy`` adds
    itself to ``sidecars`` while it runs, newest last) and the count of effects not recorded."""
    shared = sys.modules.get(_REGISTRY)
    if shared is None:
        candidate = types.ModuleType(_REGISTRY)
        candidate.lock = threading.Lock()
        candidate.sidecars = []  # (admin URL, token), newest last
        candidate.undelivered = _nothing_lost()
        shared = sys.modules.setdefault(_REGISTRY, candidate)
    return shared


def _nothing_lost():
    return {"effects": 0, "last": None, "claims": 0, "last_claim": None, "untracked": 0, "last_untracked": None}


def _count_lost(kind, message):
    """One more report of ``kind`` (effects, claims, untracked) that no sidecar recorded, and why."""
    shared = registry()
    with shared.lock:
        lost = shared.undelivered
        for name, value in _nothing_lost().items():
            lost.setdefault(name, value)  # a registry an older copy of this file made lacks the newer kinds
        lost[kind] += 1
        lost["last" if kind == "effects" else "last_" + kind.rstrip("s")] = message


def undelivered():
    """Reports made in this process (by any helper) that no sidecar recorded: ``effects`` (and ``last``,
    why the last one failed), ``claims`` (``last_claim``), and ``untracked`` (``last_untracked``):
    effects reported for a request with no call id, which did not come through toolstorm."""
    shared = registry()
    with shared.lock:
        return {**_nothing_lost(), **shared.undelivered}


class ToolstormWarning(UserWarning):
    """Emitted once when effects or claims cannot be reported."""


def _call_id(source):
    """The x-toolstorm-call value of a request, a header mapping, a WSGI environ, a string, or an
    MCP tool's ``Context`` (or its ``request_context``): over stdio (``toolstorm mcp``) the id
    travels in the request's ``_meta``, over HTTP in its headers."""
    if source is None:
        return None
    if isinstance(source, str):
        return source or None
    context = source
    try:
        context = getattr(source, "request_context", source)
    except Exception:  # noqa: BLE001 - a Context outside a request raises; it carries no call then
        return None
    if context is not source or hasattr(context, "meta"):
        value = _meta_value(getattr(context, "meta", None))
        if value:
            return value
        request = getattr(context, "request", None)
        if request is None:
            return None
        source = request
    headers = getattr(source, "headers", source)
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    for name in (CALL_HEADER, "X-Toolstorm-Call", "X-TOOLSTORM-CALL", "HTTP_X_TOOLSTORM_CALL"):
        value = getter(name)
        if value:
            return value[0] if isinstance(value, (list, tuple)) else value
    return None


def _refusal(error):
    """The reason a sidecar gave for refusing a report (its JSON error message), or nothing."""
    try:
        message = json.loads(error.read(4096).decode("utf-8"))["error"]["message"]
        return ": " + str(message)[:300]
    except Exception:  # noqa: BLE001 - a reason is a nicety; the status says enough
        return ""


def _meta_value(meta):
    """The call id in a request's ``_meta``: a mapping (mcp 2.x), or a model whose extra fields hold it (mcp 1.x)."""
    if meta is None:
        return None
    if isinstance(meta, dict):
        value = meta.get(CALL_HEADER)
    else:
        extra = getattr(meta, "model_extra", None) or {}
        value = extra.get(CALL_HEADER) if isinstance(extra, dict) else None
    return value if isinstance(value, str) and value else None


class ToolstormEffects:
    """Reports effects to one sidecar. Thread-safe; never raises from ``report``."""

    def __init__(self, sidecar_url=None, timeout=1.0, token=None):
        # Explicit settings win; otherwise the environment is read at each report, not once: a
        # helper made at import time must follow a sidecar that moved.
        self._sidecar = sidecar_url
        self._timeout = timeout
        self._token = token
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._warned = False
        self._stats = {"sent": 0, "dropped": 0, "skipped": 0, "pending": 0}

    @property
    def sidecar_url(self):
        """The admin URL reports go to now."""
        return self._target()[0] or DEFAULT_SIDECAR

    def _target(self):
        """The sidecar named (passed, else TOOLSTORM_SIDECAR, else the newest proxy running in this
        process; None when none) and the token to send (passed, else TOOLSTORM_ADMIN_TOKEN, else that proxy's)."""
        token = self._token if self._token is not None else os.environ.get("TOOLSTORM_ADMIN_TOKEN")
        named = self._sidecar or os.environ.get("TOOLSTORM_SIDECAR")
        if named:
            return named.rstrip("/"), token
        shared = registry()
        with shared.lock:
            running = shared.sidecars[-1] if shared.sidecars else None
        if running is not None:
            return running[0].rstrip("/"), token if token is not None else running[1]
        return None, token

    def set_sidecar(self, sidecar_url, token=None):
        """Send later reports to ``sidecar_url`` (None: back to TOOLSTORM_SIDECAR); ``token`` likewise."""
        with self._lock:
            self._sidecar = sidecar_url
            self._token = token
            self._warned = False

    def report(self, request, name, key):
        """Report that the request being served committed ``(name, key)``.

        Returns True once it is on record, False when skipped or dropped. Never raises.
        """
        call = _call_id(request)
        if not call:
            with self._lock:
                self._stats["skipped"] += 1
            # Production traffic, or a call that went around toolstorm: a test that made it fails.
            _count_lost("untracked", "toolstorm: effect %r was reported for a request with no %s header" % ((str(name), str(key)), CALL_HEADER))
            return False
        return self._post("/effects", {"name": str(name), "key": str(key), "call": call}, "an effect")

    def claim(self, tool, status, tool_call_id=None, run=None, traceparent=None):
        """Report what the agent concluded about a tool call: ``status`` is "success" or "failure".

        toolstorm holds it against the effects committed under it (docs/claims.md). Needs the
        admin token (``token``, or TOOLSTORM_ADMIN_TOKEN); goes to ``run``, else TOOLSTORM_RUN,
        else the proxy's active run. Skipped when no sidecar is named (no ``sidecar_url``, no
        TOOLSTORM_SIDECAR, no proxy running in this process): an agent in production sends nothing. Returns True once it is on
        record, False when skipped or dropped. Never raises.
        """
        if self._target()[0] is None:
            with self._lock:
                self._stats["skipped"] += 1
            return False
        payload = {"tool": str(tool), "status": str(status)}
        if tool_call_id is not None:
            payload["toolCallId"] = str(tool_call_id)
        run = run if run is not None else os.environ.get("TOOLSTORM_RUN")
        if run:
            payload["run"] = str(run)
        if traceparent is not None:
            payload["traceparent"] = str(traceparent)
        return self._post("/claims", payload, "a claim")

    def _post(self, path, payload, what):
        with self._lock:
            self._stats["pending"] += 1
        ok = False
        problem = None
        sidecar, token = self._target()
        url = (sidecar or DEFAULT_SIDECAR) + path
        try:
            body = json.dumps(payload).encode("utf-8")
            headers = {"content-type": "application/json"}
            if token:
                headers["authorization"] = "Bearer " + token
            req = urllib.request.Request(url, data=body, headers=headers, method="POST")
            # An explicit opener without proxies: the sidecar is local, never reached via HTTP_PROXY.
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(req, timeout=self._timeout) as response:
                ok = response.status == 201
                problem = None if ok else "HTTP %d" % response.status
        except urllib.error.HTTPError as error:
            problem = "HTTP %d%s" % (error.code, _refusal(error))
        except Exception as error:  # noqa: BLE001 - fail-open: nothing may escape into the tool server
            problem = type(error).__name__ + ": " + str(error)
        message = None if ok else "toolstorm: could not report %s to %s (%s)" % (what, url, problem)
        if message is not None:
            _count_lost("effects" if path == "/effects" else "claims", message)
        with self._lock:
            self._stats["pending"] -= 1
            self._stats["sent" if ok else "dropped"] += 1
            warn = problem is not None and not self._warned
            if warn:
                self._warned = True
            self._idle.notify_all()
        if warn:
            message += "; further failures are counted in stats() and undelivered() silently."
            warnings.warn(message, ToolstormWarning, stacklevel=3)
            _log.warning(message)
        return ok

    def stats(self):
        """Counts of reports sent, dropped, skipped (no call header) and pending."""
        with self._lock:
            return dict(self._stats)

    def flush(self, timeout=None):
        """Wait until pending reports (from other threads) settle, at most ``timeout`` seconds."""
        deadline = time.monotonic() + (self._timeout * 2 if timeout is None else timeout)
        with self._lock:
            while self._stats["pending"] > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True


_shared = None
_shared_lock = threading.Lock()


def _default():
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ToolstormEffects()
        return _shared


def configure(sidecar_url=None, token=None):
    """Point the shared helper (``report_effect``) at another sidecar, at any time; None: TOOLSTORM_SIDECAR."""
    _default().set_sidecar(sidecar_url, token)


def report_effect(request, name, key):
    """Report an effect with a shared helper configured from the environment."""
    return _default().report(request, name, key)


def report_claim(tool, status, tool_call_id=None, run=None, traceparent=None):
    """Report a claim (what the agent concluded about a tool call) with the shared helper."""
    return _default().claim(tool, status, tool_call_id=tool_call_id, run=run, traceparent=traceparent)


def stats():
    return _default().stats()


def flush(timeout=None):
    return _default().flush(timeout)
