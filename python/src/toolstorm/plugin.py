"""The pytest plugin (registered through the ``pytest11`` entry point): a ``toolstorm`` fixture.

One proxy per session (per xdist worker), started the first time a test asks for it, in forward
mode so any upstream a test starts can sit behind it. Each test is a run of its own: its addresses
(``toolstorm.url(target)``, ``toolstorm.proxy_url``, ``toolstorm.env``) name its run, it is the
proxy's active run while it runs (requests that name no run are its), and its rules are its own.

A test fails (a failure, not an error) when a rule it configured never triggered, naming the rule,
its route and the closest route seen; ``require_triggered=False`` opts out. Cassette tests
(``@pytest.mark.toolstorm_cassette``) get a proxy of their own that records or strictly replays.
Explored tests (``--toolstorm-explore``, ``explore=True``) become one case per variation
(``_explore.py``). Under a toolstorm command that names a run (``toolstorm explore -- pytest``), the
session attaches to that command's proxy and run instead of starting its own (``AttachedProxy``).
With ``--toolstorm-incidents DIR`` the session's proxy keeps the tests that went wrong as incident
cassettes (``--incidents DIR``): a failed test's run is marked, and each run is decided as its test ends.

    def test_recovers_from_a_lost_ack(toolstorm, shipping_server):
        toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}], seed=42)
        agent = Agent(base_url=toolstorm.url(shipping_server.url))
        agent.ship("order-1729")
        toolstorm.contract().no_duplicate_effects().assert_valid()
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import re
import shlex
import threading
from pathlib import Path
from typing import Any, Dict, Generator, List, Mapping, Optional

import pytest

from . import effects
from ._explore import ExploreCase, explore_problems, explored_cases
from ._markers import MARKER_KEYWORDS, merged_marker
from .cassette import RECORD_MODES, CassetteError, CassetteSession
from .errors import AdminError
from .proxy import AttachedProxy, Proxy, Run

_counter = itertools.count(1)


class _TestState:
    """What the plugin keeps for one test between its phases."""

    def __init__(self, run: Run, cassette: Optional[CassetteSession]) -> None:
        self.run = run
        self.cassette = cassette
        #: The environment variables the test ran with, as they were before (None: unset).
        self.saved_env: Dict[str, Optional[str]] = {}
        #: The end-of-test checks ran (and said what failed, if anything).
        self.checked = False


STATE = pytest.StashKey[_TestState]()
CALL_PASSED = pytest.StashKey[bool]()
#: Why the test failed (its setup or call), for the incident it becomes (``--toolstorm-incidents``).
FAILED = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolstorm", "toolstorm: faults at the network boundary")
    group.addoption("--toolstorm-report-dir", metavar="DIR", default=None, help="write each toolstorm test's report (JSON) into DIR")
    group.addoption("--toolstorm-record-mode", choices=RECORD_MODES, default=None, help="cassettes: none, once (default: record when missing, else replay strictly), new_episodes, all")
    group.addoption("--toolstorm-normalize", metavar="NAMES", default=None, help="cassettes: normalisers (ids,timestamps,uuids) a recording keeps in its header, or a replay uses instead of the header's (none: no normaliser); wins over a marker's normalize=")
    group.addoption("--toolstorm-live", metavar="ROUTE", action="append", default=[], help="cassettes: a route glob (POST /ship) a replay sends to the network instead of the cassette, under the test's rules (repeatable; adds to a marker's live=)")
    group.addoption("--toolstorm-replay-only", metavar="ROUTE", action="append", default=[], help="cassettes: a route glob a replay answers from the cassette; every other route goes to the network (repeatable; adds to a marker's replay_only=)")
    group.addoption("--toolstorm-proxy-args", metavar="ARGS", default=None, help="more flags for the toolstorm proxy processes, as one string (--upstream-ca ca.pem --clock virtual); adds to the ini option toolstorm_proxy_args")
    group.addoption("--toolstorm-explore", action="store_true", default=False, help="explore every test that uses the toolstorm fixture and sets no rules: run it once per call site x fault, each variation a case of its own (docs/python.md#explore)")
    group.addoption("--toolstorm-explore-args", metavar="ARGS", default=None, help="more flags for toolstorm explore, as one string (--faults timeout,response_lost --max-runs 50); adds to the ini option toolstorm_explore_args")
    group.addoption("--toolstorm-explore-out", metavar="DIR", default=None, help="where explored tests' counterexamples go, a folder per test (default: the pytest cache, .pytest_cache/d/toolstorm-explore)")
    group.addoption("--toolstorm-incidents", metavar="DIR", default=None, help="keep the runs (tests) that went wrong as incident cassettes in DIR, each with its report and a line in DIR/index.jsonl: the session's proxy runs with --incidents DIR, a failed test is marked as an incident, and each test's run is decided as it ends; bounds (--max-incidents, --max-bytes, --window-exchanges, ...) go in --toolstorm-proxy-args (docs/incidents.md#in-a-test-suite); wins over the ini option toolstorm_incidents")
    parser.addini("toolstorm_incidents", default="", help="the folder --toolstorm-incidents keeps incidents in (relative to the ini file)")
    parser.addini("toolstorm_proxy_args", type="args", default=[], help="more flags for the toolstorm proxy processes (toolstorm proxy, record, replay)")
    parser.addini("toolstorm_explore_args", type="args", default=[], help="more flags for toolstorm explore (explored tests)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "toolstorm(rules=None, seed=None, require_triggered=True, max_calls=None, routes=None, explore=None): the test's toolstorm rules, as toolstorm.rules(...) would set them (the test must use the toolstorm fixture; an unknown keyword fails it); explore=True (or a mapping: faults, routes, max_ordinal, depth, jobs, max_runs, ...): run it once per call site x fault instead, each variation a case")
    config.addinivalue_line("markers", "toolstorm_cassette(path=None, record_mode=None, normalize=None, normalize_pattern=None, normalize_path=None, live=(), replay_only=()): record the test's traffic into a cassette, or replay it strictly (path relative to the test file; default cassettes/<module>/<test>.jsonl); normalize: ids,timestamps,uuids or none; normalize_pattern / normalize_path: regular expressions (SHP-\\d+) and JSON paths ($.messages[*].content) whose values compare equal; live / replay_only: route globs a replay sends to the network, or the only ones it replays")


def _proxy_args(config: pytest.Config) -> List[str]:
    return [*config.getini("toolstorm_proxy_args"), *shlex.split(config.getoption("--toolstorm-proxy-args") or "")]


def _incidents_dir(config: pytest.Config) -> Optional[Path]:
    """The folder of ``--toolstorm-incidents`` (relative to where pytest was started), else of the ini
    option ``toolstorm_incidents`` (relative to the ini file), else None."""
    given = config.getoption("--toolstorm-incidents")
    if given:
        return Path(config.invocation_params.dir, given)
    ini = config.getini("toolstorm_incidents")
    if ini:
        return Path(config.inipath.parent if config.inipath else config.rootpath, ini)
    return None


def _session_args(config: pytest.Config) -> List[str]:
    """The session proxy's flags: the proxy arguments, and the flight recorder when incidents are asked for.
    Cassette tests' own proxies (record, replay) have no flight recorder: they keep a cassette already."""
    folder = _incidents_dir(config)
    return [*_proxy_args(config), *(["--incidents", os.fspath(folder)] if folder is not None else [])]


class _EarlyStart:
    """The session's proxy, started in a thread as soon as the first test that needs it is collected:
    node starts while pytest still imports the other test modules, and the first test waits less."""

    def __init__(self, config: pytest.Config) -> None:
        self.proxy = Proxy(cwd=config.invocation_params.dir, args=_session_args(config))
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._start, name="toolstorm-start", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self.proxy.start()
        except BaseException as error:  # noqa: BLE001 - raised again where the fixture is used
            self.error = error

    def wait(self) -> Proxy:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.proxy

    def close(self) -> None:
        self._thread.join()
        self.proxy.close()


EARLY = pytest.StashKey[_EarlyStart]()


def _attached(config: pytest.Config) -> Optional[AttachedProxy]:
    """The proxy of the toolstorm command this session runs under (``toolstorm explore -- pytest``):
    its tests' runs are that command's, and no proxy of the session's own is started."""
    if ATTACHED not in config.stash:
        config.stash[ATTACHED] = AttachedProxy.from_environment()
    return config.stash[ATTACHED]


ATTACHED = pytest.StashKey[Optional[AttachedProxy]]()


def pytest_itemcollected(item: pytest.Item) -> None:
    config = item.config
    if EARLY in config.stash or config.option.collectonly or _attached(config) is not None:
        return
    names = getattr(item, "fixturenames", ())
    uses = "toolstorm_proxy" in names or ("toolstorm" in names and item.get_closest_marker("toolstorm_cassette") is None)
    if uses:
        config.stash[EARLY] = _EarlyStart(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    # A proxy started for tests that were then deselected (-k) was never used: stop it.
    early = config.stash.get(EARLY, None)
    if early is not None:
        early.close()


@pytest.fixture(scope="session")
def toolstorm_proxy(request: pytest.FixtureRequest) -> Generator[Proxy, None, None]:
    """The session's (this xdist worker's) proxy, in forward mode. Most tests want ``toolstorm``.

    While it runs, ``TOOLSTORM_SIDECAR`` and ``TOOLSTORM_ADMIN_TOKEN`` name it: tool servers in this
    process, and those it starts, report the effects of its runs (``toolstorm_proxy.run()``) here.
    """
    attached = _attached(request.config)
    if attached is not None:
        yield attached
        return
    early = request.config.stash.get(EARLY, None)
    proxy = early.wait() if early is not None else Proxy(cwd=request.config.invocation_params.dir, args=_session_args(request.config)).start()
    saved = _set_env({"TOOLSTORM_SIDECAR": proxy.sidecar_url, "TOOLSTORM_ADMIN_TOKEN": proxy.token})
    try:
        yield proxy
    finally:
        _restore_env(saved)
        proxy.close()


def _set_env(values: Mapping[str, str]) -> Dict[str, Optional[str]]:
    """Set environment variables; what they were before (None: unset), for ``_restore_env``."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    return saved


def _restore_env(saved: Mapping[str, Optional[str]]) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _run_id(item: pytest.Item) -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = re.sub(r"[^A-Za-z0-9._~-]+", "-", item.name).strip("-")
    return f"{worker}-{next(_counter)}-{name}"[:128]


def _cassette_path(item: pytest.Item, marker: pytest.Mark) -> Path:
    given = marker.args[0] if marker.args else marker.kwargs.get("path")
    folder = Path(str(item.fspath)).parent
    if given is None:
        module = Path(str(item.fspath)).stem
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", item.name)
        return folder / "cassettes" / module / f"{name}.jsonl"
    path = Path(given)
    return path if path.is_absolute() else folder / path


def _globs(value: Any) -> List[str]:
    """A marker's route globs: one string or a list of them."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


@pytest.fixture
def toolstorm(request: pytest.FixtureRequest) -> Generator[Run, None, None]:
    """This test's run: ``rules()``, ``url(target)``, ``proxy_url``, ``env``, ``sidecar_url``, ``report()``, ``contract()``."""
    item = request.node
    cassette: Optional[CassetteSession] = None
    cassette_marker = merged_marker(item, "toolstorm_cassette")
    run_id = _run_id(item)
    if cassette_marker is not None:
        mode = cassette_marker.kwargs.get("record_mode") or request.config.getoption("--toolstorm-record-mode") or "once"
        try:
            cassette = CassetteSession(_cassette_path(item, cassette_marker), mode)
        except CassetteError as error:
            pytest.fail(str(error), pytrace=False)
        config = request.config
        kwargs = cassette_marker.kwargs
        # The command line wins: `--toolstorm-normalize none` turns a marker's normalisers off for one run.
        normalize = config.getoption("--toolstorm-normalize") or kwargs.get("normalize")
        try:
            cassette.start(
                cwd=config.invocation_params.dir,
                args=_proxy_args(config),
                normalize=normalize,
                normalize_pattern=kwargs.get("normalize_pattern"),
                normalize_path=kwargs.get("normalize_path"),
                live=[*_globs(kwargs.get("live")), *config.getoption("--toolstorm-live")],
                replay_only=[*_globs(kwargs.get("replay_only")), *config.getoption("--toolstorm-replay-only")],
            )
        except ValueError as error:
            pytest.fail(f"toolstorm: {error}", pytrace=False)
        run = cassette.run(run_id)
    else:
        proxy = request.getfixturevalue("toolstorm_proxy")
        gone = proxy.ended()
        if gone is not None:
            pytest.fail(f"toolstorm: the session's proxy {gone} during an earlier test, so this test cannot run through it.{proxy.last_output()}", pytrace=False)
        # Under toolstorm explore, the run is the one explore named (and set the rules of).
        run = Run(proxy, proxy.run_id if isinstance(proxy, AttachedProxy) else run_id)
    state = _TestState(run, cassette)
    item.stash[STATE] = state
    # Tool servers in this process (or started by the test) report effects to this test's proxy,
    # and the agent reports claims (report_claim: they need the admin token) to this test's run.
    test_env = {"TOOLSTORM_SIDECAR": run.sidecar_url, "TOOLSTORM_RUN": run.id}
    token = getattr(run.proxy, "token", None)
    if token:
        test_env["TOOLSTORM_ADMIN_TOKEN"] = str(token)
    state.saved_env = _set_env(test_env)
    try:
        run.proxy.activate(run.id)
        marker = merged_marker(item, "toolstorm")
        if marker is not None:
            kwargs = marker.kwargs
            rules = marker.args[0] if marker.args else kwargs.get("rules")
            # Explored (its run is toolstorm explore's): explore was given the seed, routes and max_calls, and sets the rules.
            if rules is not None or not isinstance(run.proxy, AttachedProxy):
                run.rules(rules, seed=kwargs.get("seed"), require_triggered=kwargs.get("require_triggered", True), max_calls=kwargs.get("max_calls"), routes=kwargs.get("routes"))
        yield run
    finally:
        _finish(item, state)


def _finish(item: pytest.Item, state: _TestState) -> None:
    run = state.run
    passed = item.stash.get(CALL_PASSED, False)
    _restore_env(state.saved_env)
    try:
        if run.proxy.running:
            run.proxy.activate(None)
            report_dir = item.config.getoption("--toolstorm-report-dir")
            if report_dir:
                _write_report(Path(report_dir), item, run.report())
            if state.cassette is None and not isinstance(run.proxy, AttachedProxy) and _incidents_dir(item.config) is not None:
                _end_run(item, run)
    finally:
        if state.cassette is not None:
            outcome = state.cassette.finish(passed)
            item.add_report_section("teardown", "toolstorm", f"cassette {outcome}")


def _end_run(item: pytest.Item, run: Run) -> None:
    """The test's run has ended (``--toolstorm-incidents``): a failed test is marked as an incident,
    and the run is decided now rather than after the proxy's --run-idle. The proxy keeps it when the
    test failed or something else went wrong in it (an upstream 5xx or reset, a fault that fired, a
    duplicate effect: docs/incidents.md#incidents)."""
    failed = item.stash.get(FAILED, None)
    admin = run.proxy.admin
    if failed is not None:
        try:
            admin.request("POST", "/incidents", query={"run": run.id}, body={"reason": failed})
        except AdminError as error:
            if error.status != 404:
                raise
            # No exchange of the run is held: the test failed before any call went through the proxy.
            item.add_report_section("teardown", "toolstorm", f"incident not kept: run {run.id} made no call through toolstorm")
            return
    answer = admin.request("POST", "/runs/end", query={"run": run.id})
    incident = answer.get("incident") if isinstance(answer, dict) else None
    if incident:
        folder = _incidents_dir(item.config)
        item.add_report_section("teardown", "toolstorm", f"incident kept: {folder / incident['incident']} ({', '.join(incident['why'])})")


def _write_report(folder: Path, item: pytest.Item, report: Dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", item.nodeid).strip("_")[:200] or "test"
    target = folder / f"{name}.json"
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, target)


def _never_triggered(run: Run) -> Optional[str]:
    """The failure message when a rule the test configured never triggered, else None."""
    result = run.contract().require_triggered().result()
    failing = [check for check in result["checks"] if not check["passed"]]
    if not failing:
        return None
    routes = {rule["name"]: rule["route"] for rule in run.report().get("rules", [])}
    lines: List[str] = []
    for check in failing:
        name = check["name"].split(": ", 1)[-1]
        lines.append(f'  rule "{name}" (route "{routes.get(name, "?")}"): {check["detail"]}')
    count = len(failing)
    return (
        f"toolstorm: {count} rule{'s' if count > 1 else ''} configured by this test never triggered\n"
        + "\n".join(lines)
        + "\nFix the route (or the test), or pass require_triggered=False when a rule may rightly not fire."
    )


def _marker_problems(item: pytest.Item) -> List[str]:
    """What is wrong with the test's toolstorm markers: unknown keywords (with the closest known
    one), a second positional argument, or an option given twice."""
    problems: List[str] = []
    # explore= and rules are judged as the test gets them: a class's explore=True and its test's rules conflict too.
    merged = merged_marker(item, "toolstorm")
    if merged is not None:
        problems += explore_problems(merged)
    for name, known in MARKER_KEYWORDS.items():
        for marker in item.iter_markers(name):
            for keyword in marker.kwargs:
                if keyword not in known:
                    close = difflib.get_close_matches(keyword, known, n=1, cutoff=0.6)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                    problems.append(f"@pytest.mark.{name} got an unknown keyword {keyword!r}{hint}: it would be ignored. It takes {', '.join(known)}.")
            if len(marker.args) > 1:
                problems.append(f"@pytest.mark.{name} takes one positional argument ({known[0]}), got {len(marker.args)}: name the others ({', '.join(known[1:])}).")
            elif marker.args and known[0] in marker.kwargs:
                problems.append(f"@pytest.mark.{name} got {known[0]} twice: as its positional argument and as a keyword.")
    return problems


def _unused_markers(item: pytest.Item) -> Optional[str]:
    """The failure message when the test carries a toolstorm marker but never used the ``toolstorm``
    fixture: its rules (or cassette) were never applied, so the test proved nothing about them."""
    names = [name for name in MARKER_KEYWORDS if item.get_closest_marker(name) is not None]
    if not names:
        return None
    markers = " and ".join(f"@pytest.mark.{name}" for name in names)
    return (
        f"toolstorm: this test carries {markers}, but it never used the toolstorm fixture, so no rule was set, "
        "nothing was recorded or replayed, and no traffic went through toolstorm. Add the toolstorm fixture to its "
        "arguments and send its traffic through it (toolstorm.url(target), toolstorm.proxy_url, toolstorm.env), or remove the marker."
    )


#: Where the effects helper reports, for the messages on reports that were not recorded.
_WHERE_REPORTS_GO = (
    "The effects helper reports to TOOLSTORM_SIDECAR (the plugin sets it to the proxy serving the test; give a "
    "subprocess tool server toolstorm.env), or to what configure(sidecar_url=...) or ToolstormEffects(sidecar_url=...) named."
)


def _lost_reports(before: Mapping[str, Any]) -> List[str]:
    """The failure messages when reports made in this process during the test were not recorded: effects
    and claims no sidecar recorded, and effects of requests that did not come through toolstorm."""
    lost = effects.undelivered()
    messages: List[str] = []
    for kind, last, what, why, judged, hint in (
        ("effects", "last", "effect report", "{was} not recorded", "the contracts on effects", _WHERE_REPORTS_GO),
        ("claims", "last_claim", "claim report", "{was} not recorded", "the checks on claims", _WHERE_REPORTS_GO),
        (
            "untracked", "last_untracked", "effect report", "came from a request that did not go through toolstorm (no x-toolstorm-call header)", "the contracts on effects",
            "Send every call of the agent through toolstorm (toolstorm.url(target), toolstorm.proxy_url, toolstorm.env); a write the test makes itself goes in a fixture.",
        ),
    ):
        count = lost[kind] - before.get(kind, 0)
        if count > 0:
            plural = count > 1
            said = why.format(was="were" if plural else "was") if "{was}" in why else why
            messages.append(
                f"toolstorm: {count} {what}{'s' if plural else ''} made in this process during the test {said}, so {judged} judged "
                f"without {'them' if plural else 'it'}. The last: {lost[last]}.\n{hint}"
            )
    return messages


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    if isinstance(item, ExploreCase):
        # A variation of an explored test: it ran under toolstorm explore, which judged it.
        return (yield)
    # Marker mistakes fail the test before it runs: it would run without what the marker asked for.
    marker_problems = _marker_problems(item)
    if marker_problems:
        pytest.fail("toolstorm: " + "\ntoolstorm: ".join(marker_problems), pytrace=False)
    names = getattr(item, "fixturenames", ())
    watched = "toolstorm" in names or "toolstorm_proxy" in names
    lost_before = effects.undelivered()
    # The checks run at the end of the call phase, so that they fail the test rather than error its teardown.
    result = yield
    problems: List[str] = _lost_reports(lost_before) if watched or STATE in item.stash else []
    state = item.stash.get(STATE, None)
    proxy = state.run.proxy if state is not None else getattr(item, "funcargs", {}).get("toolstorm_proxy")
    gone = proxy.ended() if isinstance(proxy, Proxy) else None
    if gone is not None:
        problems.append(
            f"toolstorm: the proxy this test ran through {gone} during the test: the calls after that never reached toolstorm, "
            f"and the run's rules, report and contracts went with it, so the test cannot pass on them.{proxy.last_output()}"
        )
    if state is None:
        unused = _unused_markers(item)
        if unused:
            problems.append(unused)
        if problems:
            pytest.fail("\n\n".join(problems), pytrace=False)
        return result
    state.checked = True
    if state.run.rules_error is not None:
        problems.append(
            f"toolstorm: toolstorm.rules() failed in this test, which went on without those rules (the error was caught): {state.run.rules_error}\n"
            "Fix the rules; a test that expects the error and then runs without rules says so with toolstorm.rules([])."
        )
    if gone is None and state.cassette is not None:
        failure = state.cassette.failure()
        if failure:
            problems.append(failure)
    if gone is None and state.run.require_triggered and (state.cassette is None or not state.cassette.replaying):
        message = _never_triggered(state.run)
        if message:
            problems.append(message)
    if problems:
        # A failure of the test with the message alone: the plugin's own frames would only hide it.
        pytest.fail("\n\n".join(problems), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Generator[None, Any, Any]:
    # An explored test is its cases, children of its module as parametrised cases are: a case's node
    # id selects it, and -k / -m choose among them by name. Under toolstorm explore (attached), each
    # test is one run of that explore: nothing to explore again.
    result = yield
    if result is None or _attached(collector.config) is not None:
        return result
    made = result if isinstance(result, list) else [result]
    replaced: List[Any] = []
    for node in made:
        cases = explored_cases(node, _marker_problems) if isinstance(node, pytest.Function) else None
        replaced += cases if cases is not None else [node]
    return replaced


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
    report = yield
    if report.failed and report.when in ("setup", "call") and FAILED not in item.stash:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = getattr(crash, "message", None) or str(report.longrepr or "").strip().splitlines()[-1:] or ["failed"]
        text = message if isinstance(message, str) else message[0]
        item.stash[FAILED] = f"pytest: {item.nodeid} failed in {report.when}: {text}"[:500]
    if report.when == "call":
        item.stash[CALL_PASSED] = report.passed
        state = item.stash.get(STATE, None)
        gone = state.run.proxy.ended() if state is not None else None
        if report.failed and state is not None and gone is not None and not state.checked:
            # The test failed on its own (a refused connection, most likely): say that the proxy is why.
            report.sections.append(("toolstorm", f"the proxy this test ran through {gone} during the test.{state.run.proxy.last_output()}"))
        elif report.failed and state is not None and state.run.proxy.running:
            try:
                # A replay that diverged fails the client's request first (a 422): the table says why.
                failure = state.cassette.failure() if state.cassette is not None and not state.checked else None
                report.sections.append(("toolstorm", "\n\n".join(filter(None, [failure, _describe_calls(state.run)]))))
            except Exception as error:  # noqa: BLE001 - a failing summary must not hide the test's own failure
                report.sections.append(("toolstorm", f"(the run's report could not be read: {error})"))
    return report


def _describe_calls(run: Run) -> str:
    report = run.report()
    lines = [f"run {run.id} on {run.proxy.url}: {len(report.get('calls', []))} call(s), {len(report.get('effects', []))} effect(s)"]
    refused = report.get("refusedEffects")
    if refused:
        lines.append(f"  {refused['count']} effect report(s) refused while the run was kept (first: {refused['first']})")
    for call in report.get("calls", [])[:50]:
        fault = f"  [{call['fault']}: {call['kind']}]" if call.get("fault") and call.get("injected") else ""
        lines.append(f"  {call['id']:>3}  {call['route']}  {call['outcome']} {call.get('status') or ''}{fault}")
    for name, counts in (report.get("coverage") or {}).items():
        lines.append(f"  rule {name}: eligible {counts['eligible']}, selected {counts['selected']}, triggered {counts['triggered']}")
    return "\n".join(lines)
