"""A small JSON client for the toolstorm admin API (docs/admin-api.md), standard library only.

One kept-alive connection per client (a test's setup and teardown make a few calls each, and a new
connection per call would cost more than the call). It never goes through ``HTTP_PROXY``: the admin
API is on loopback and a proxy in the environment would loop it back through toolstorm.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any, Dict, Mapping, Optional
from urllib.parse import quote, urlsplit

from .errors import AdminError


class AdminClient:
    def __init__(self, admin_url: str, token: str, timeout: float = 30.0) -> None:
        parts = urlsplit(admin_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"expected an http:// admin URL, got {admin_url!r}")
        self.url = admin_url.rstrip("/")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._token = token
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: Optional[http.client.HTTPConnection] = None

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Optional[str]]] = None, body: Any = None, text: Optional[str] = None, content_type: str = "application/json") -> Any:
        """Send one request; the decoded JSON answer, or ``AdminError`` with the server's code and message."""
        if query:
            pairs = [f"{quote(k)}={quote(v, safe='')}" for k, v in query.items() if v is not None]
            if pairs:
                path = f"{path}?{'&'.join(pairs)}"
        payload: Optional[bytes] = None
        headers: Dict[str, str] = {"authorization": f"Bearer {self._token}", "accept": "application/json"}
        if text is not None:
            payload = text.encode("utf-8")
        elif body is not None:
            payload = json.dumps(body).encode("utf-8")
        if payload is not None:
            headers["content-type"] = content_type
        with self._lock:
            status, data = self._send(method, path, payload, headers)
        try:
            decoded = json.loads(data.decode("utf-8")) if data else None
        except ValueError:
            decoded = None
        if status >= 400:
            error = decoded.get("error") if isinstance(decoded, dict) else None
            message = error.get("message") if isinstance(error, dict) else data.decode("utf-8", "replace")[:500]
            code = error.get("code") if isinstance(error, dict) else None
            raise AdminError(f"{method} {path}: {status} {message}", status=status, code=code, body=decoded)
        return decoded

    def _send(self, method: str, path: str, payload: Optional[bytes], headers: Dict[str, str]) -> "tuple[int, bytes]":
        # The server closes an idle kept-alive connection after a few seconds: one retry on a fresh one.
        for attempt in (1, 2):
            connection = self._connection
            if connection is None:
                connection = self._connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            try:
                connection.request(method, path, body=payload, headers=headers)
                response = connection.getresponse()
                data = response.read()
                if response.will_close:
                    self.close_connection()
                return response.status, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest, http.client.BadStatusLine):
                self.close_connection()
                if attempt == 2:
                    raise
            except Exception:
                self.close_connection()
                raise
        raise AssertionError("unreachable")

    def close_connection(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
