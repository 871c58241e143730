"""Errors the toolstorm package raises (besides ``AssertionError`` for failed contracts)."""

from __future__ import annotations

from typing import Any, Optional


class ToolstormError(Exception):
    """Base of the errors this package raises on purpose."""


class CliNotFoundError(ToolstormError):
    """The toolstorm CLI (or Node.js) could not be found; the message says how to install it."""


class ProxyStartError(ToolstormError):
    """The CLI started but did not announce that it listens (its output is in the message)."""


class AdminError(ToolstormError):
    """The admin API refused a request: ``status``, the stable ``code`` (docs/errors.md) and its message."""

    def __init__(self, message: str, *, status: int, code: Optional[str] = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.body = body
