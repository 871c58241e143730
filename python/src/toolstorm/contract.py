"""Contracts on a run's evidence, evaluated by the proxy (``POST /contract?run=ID``), so Python and
TypeScript run one implementation: the same check names, details and verdicts (docs/contracts.md).

    toolstorm.contract().require_triggered().no_duplicate_effects().at_most_calls(2).assert_valid()

A check with a bad argument raises ``ValueError`` when it is added. ``assert_valid()`` raises an
``AssertionError`` listing every failing check, each with what it names (the effects committed
twice with their calls, the calls over a budget); an empty contract does not pass.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

Evaluate = Callable[[List[Dict[str, Any]]], Dict[str, Any]]

TOKEN_KINDS = ("input", "output", "total")


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"Failed to add a contract check: {what} must be a nonnegative integer, got {value!r}.")
    return value


class Contract:
    """A chain of checks over one run's report. Build it with ``run.contract()``."""

    def __init__(self, evaluate: Evaluate) -> None:
        self._evaluate = evaluate
        self._checks: List[Dict[str, Any]] = []

    def _add(self, check: Dict[str, Any]) -> "Contract":
        self._checks.append(check)
        return self

    def require_triggered(self, *names: str) -> "Contract":
        """Each named rule (every configured rule when none is named) triggered at least once."""
        return self._add({"type": "requireTriggered", "names": list(names)})

    def no_duplicate_effects(self) -> "Contract":
        """No effect identity (name, key) was committed twice."""
        return self._add({"type": "noDuplicateEffects"})

    def at_most_calls(self, count: int, route: Optional[str] = None) -> "Contract":
        """At most ``count`` calls overall (refusals included), or on ``route``."""
        check: Dict[str, Any] = {"type": "atMostCalls", "count": _count(count, "the call limit")}
        if route is not None:
            check["route"] = route
        return self._add(check)

    def at_most_effects(self, name: str, count: int, key: Optional[str] = None) -> "Contract":
        """At most ``count`` effects named ``name`` (with ``key``, when given). Fails closed on redacted effects."""
        check: Dict[str, Any] = {"type": "atMostEffects", "name": name, "count": _count(count, "the effect limit")}
        if key is not None:
            check["key"] = key
        return self._add(check)

    def at_most_model_calls(self, count: int) -> "Contract":
        """At most ``count`` model calls (OpenAI chat completions / Responses, Anthropic messages)."""
        return self._add({"type": "atMostModelCalls", "count": _count(count, "the model-call limit")})

    def at_most_tokens(self, count: int, kind: str = "total") -> "Contract":
        """At most ``count`` tokens over all model calls (``total``, ``input`` or ``output``). Fails closed without usage."""
        if kind not in TOKEN_KINDS:
            raise ValueError(f"Failed to add a contract check: unknown token kind {kind!r}. Use one of {', '.join(repr(k) for k in TOKEN_KINDS)}.")
        return self._add({"type": "atMostTokens", "count": _count(count, "the token limit"), "kind": kind})

    max_tokens = at_most_tokens

    def max_recovery_tokens(self, count: int) -> "Contract":
        """Recovering from each triggered fault took at most ``count`` tokens. Fails closed without usage."""
        return self._add({"type": "maxRecoveryTokens", "count": _count(count, "the recovery token limit")})

    def retry_after_respected(self) -> "Contract":
        """No route was called again before the Retry-After it was given had passed."""
        return self._add({"type": "retryAfterRespected"})

    def claims_match_effects(self) -> "Contract":
        """The agent's claims about its tool calls agree with the effects: no silent commit, no phantom success."""
        return self._add({"type": "claimsMatchEffects"})

    def effects_require_approval(self, effect: str, route: str) -> "Contract":
        """Every ``effect`` was committed after a 2xx answer from the approval ``route`` in the run."""
        for what, value in (("effect", effect), ("route", route)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"Failed to add a contract check: effects_require_approval needs {what} as a nonempty string.")
        return self._add({"type": "effectsRequireApproval", "effect": effect, "route": route})

    def check(self, name: str, passed: bool, detail: str = "") -> "Contract":
        """A check you decide; ``detail`` is shown as written (keep secrets out of it)."""
        if not isinstance(passed, bool):
            raise ValueError("Failed to add a contract check: the condition must be a bool.")
        return self._add({"type": "check", "name": name, "passed": passed, "detail": detail})

    def result(self) -> Dict[str, Any]:
        """``{"passed": bool, "checks": [{"name", "passed", "detail", "details"?}]}`` on the run as it is now
        (``details``: what a failing check names, one line each, as ``toolstorm check`` prints it)."""
        return self._evaluate(list(self._checks))

    @property
    def passed(self) -> bool:
        return bool(self.result()["passed"])

    @property
    def checks(self) -> List[Dict[str, Any]]:
        return list(self.result()["checks"])

    def assert_valid(self) -> None:
        """Raise ``AssertionError`` listing every failing check (or saying the contract is empty)."""
        result = self.result()
        checks = result["checks"]
        if not checks:
            raise AssertionError("An empty contract cannot establish correctness. Add at least one check.")
        failing = [check for check in checks if not check["passed"]]
        if failing:
            # Each failing check, and under it what it names (the effects committed twice, the calls over a budget), as `toolstorm check` prints it.
            lines = "\n".join(f"{check['name']}: {check['detail']}" + "".join(f"\n    {line}" for line in check.get("details", ())) for check in failing)
            raise AssertionError(f"toolstorm contract failed\n{lines}")
