"""Exploring a pytest test (``pytest --toolstorm-explore``, ``@pytest.mark.toolstorm(explore=True)``):
which faults does the code it tests not survive?

pytest fixes its test cases while it collects, before any test runs, and the variations of an
explore are only known once it ran (a fallback route appears under a fault). So the search runs at
collection, as ``toolstorm explore`` on the test itself: each run of it is
``python -m pytest <the test's node id>`` next to explore's proxy, and the plugin in that process
attaches to that proxy (``AttachedProxy``: the clash of two proxies per test is gone). Each
variation then becomes a case of its own, ``test_x[<fault>-<route>#<ordinal>-<id>]``: a failure
fails with the checks that failed and where its counterexample is; a variation not exercised, not
run or known is skipped, saying so.

The cases are the test's children in its module, so a case's node id selects it
(``pytest "tests/test_agent.py::test_ships[response_lost-POST /shipments#1-e3c56cbe]"``): explore
then runs that variation only (``--only``), after the baseline.

Under pytest-xdist every worker collects the same cases: the first worker to reach a test runs its
explore with as many jobs as there are workers (``--jobs``), the others wait for its result (a file
of the test session's, under a lock) and read it, and the cases are spread over the workers as any
others. An explore gives the same matrix for any number of jobs, so ``-n 2`` has ``-n 0``'s cases.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pytest

from ._cli import find_cli
from ._markers import merged_marker
from .errors import ToolstormError

try:  # POSIX: a lock the kernel releases when its holder dies, however it dies.
    import fcntl
except ImportError:  # pragma: no cover - Windows: every worker explores for itself
    fcntl = None  # type: ignore[assignment]

#: The keys of ``explore={...}`` and the ``toolstorm explore`` flag each one is (docs/python.md).
EXPLORE_KEYWORDS: Mapping[str, str] = {
    "faults": "--faults",
    "routes": "--route",
    "max_ordinal": "--max-ordinal",
    "depth": "--depth",
    "jobs": "--jobs",
    "max_runs": "--max-runs",
    "time_budget": "--time-budget",
    "run_timeout": "--run-timeout",
    "config": "--config",
    "max_model_calls": "--max-model-calls",
    "max_tokens": "--max-tokens",
    "max_recovery_tokens": "--max-recovery-tokens",
}
#: Keys that may be given a list (the flag is repeated).
_LISTS = frozenset({"faults", "routes"})
#: Environment of the test session that must not reach the runs: each run is a session of its own.
_SESSION_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST")


def explore_problems(marker: Any) -> List[str]:
    """What is wrong with a ``toolstorm`` marker's ``explore=`` (a bool, or a mapping of ``EXPLORE_KEYWORDS``)."""
    value = marker.kwargs.get("explore")
    if value is None or value is False:
        return []
    problems: List[str] = []
    if marker.args or "rules" in marker.kwargs:
        problems.append("@pytest.mark.toolstorm got rules and explore=: explore makes each run's rules (one fault per run), so the test's own would be replaced. Remove rules (or explore=).")
    if value is True:
        return problems
    if not isinstance(value, Mapping):
        return [*problems, f"@pytest.mark.toolstorm got explore={value!r}: expected True, False or a mapping of {', '.join(EXPLORE_KEYWORDS)}."]
    for key, given in value.items():
        if key not in EXPLORE_KEYWORDS:
            close = difflib.get_close_matches(str(key), list(EXPLORE_KEYWORDS), n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"@pytest.mark.toolstorm got explore={{{key!r}: …}}, an unknown option{hint}: it would be ignored. explore= takes {', '.join(EXPLORE_KEYWORDS)}.")
        elif isinstance(given, (list, tuple)) and key not in _LISTS:
            problems.append(f"@pytest.mark.toolstorm got explore={{{key!r}: {given!r}}}: expected one value, not a list.")
    return problems


def explore_requested(item: pytest.Item) -> bool:
    """Whether ``item`` is explored: it uses the ``toolstorm`` fixture (not a cassette test) and its
    marker says ``explore=`` (a true value), or ``--toolstorm-explore`` is given and its marker sets
    no rules and does not say ``explore=False``."""
    if "toolstorm" not in getattr(item, "fixturenames", ()) or item.get_closest_marker("toolstorm_cassette") is not None:
        return False
    marker = merged_marker(item, "toolstorm")
    kwargs = marker.kwargs if marker is not None else {}
    if "explore" in kwargs:
        return bool(kwargs["explore"])
    if marker is not None and (marker.args or "rules" in kwargs):
        return False
    return bool(item.config.getoption("--toolstorm-explore"))


def _without(flags: Sequence[str], names: Sequence[str]) -> List[str]:
    """``flags`` without the flags ``names`` and their values (``--jobs 4``, ``--jobs=4``)."""
    kept: List[str] = []
    skip = False
    for flag in flags:
        if skip:
            skip = False
        elif flag in names:
            skip = True
        elif not any(flag.startswith(f"{name}=") for name in names):
            kept.append(flag)
    return kept


def _flags(item: pytest.Item, rules_file: Optional[Path]) -> List[str]:
    """The explore flags of ``item``: the command line's and the ini's, then its marker's. A list
    (``faults``, ``routes``) adds to theirs; a value the marker gives replaces theirs."""
    config = item.config
    given = [*config.getini("toolstorm_explore_args"), *shlex.split(config.getoption("--toolstorm-explore-args") or "")]
    marker = merged_marker(item, "toolstorm")
    kwargs = marker.kwargs if marker is not None else {}
    options = kwargs.get("explore")
    own: List[str] = []
    if isinstance(options, Mapping):
        for key, value in options.items():
            for one in value if isinstance(value, (list, tuple)) else [value]:
                own += [EXPLORE_KEYWORDS[key], str(one)]
    if kwargs.get("seed") is not None:
        own += ["--seed", str(kwargs["seed"])]
    if rules_file is not None:
        own += ["--rules", str(rules_file)]
    replaced = sorted({flag for flag in own if flag.startswith("--")} - {EXPLORE_KEYWORDS[key] for key in _LISTS})
    flags = [*_without(given, replaced), *own]
    if "--jobs" not in flags and not any(flag.startswith("--jobs=") for flag in flags):
        # The workers of the session run the explore's variations: as many at once as there are workers.
        flags += ["--jobs", str(max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))]
    return flags


def _rules_document(item: pytest.Item) -> Optional[Dict[str, Any]]:
    """The proxy's own rules for the explore (the marker's named routes and max_calls), if any."""
    marker = merged_marker(item, "toolstorm")
    kwargs = marker.kwargs if marker is not None else {}
    document: Dict[str, Any] = {}
    if kwargs.get("routes") is not None:
        document["routes"] = dict(kwargs["routes"])
    if kwargs.get("max_calls") is not None:
        document["maxCalls"] = kwargs["max_calls"]
    return {"version": 1, **document, "rules": []} if document else None


def _inner_pytest(item: pytest.Item) -> List[str]:
    """``python -m pytest <node id>`` as this session would run that one test (its ini, rootdir,
    plugins, import mode), in one process (no xdist), without the cache (runs may go at once)."""
    config = item.config
    option = config.option
    command = [sys.executable, "-m", "pytest", item.nodeid, "-p", "no:cacheprovider", "-q", "--no-header", "-rfE", "--rootdir", str(config.rootpath)]
    if config.inipath is not None:
        command += ["-c", str(config.inipath)]
    for plugin in getattr(option, "plugins", None) or []:
        if plugin != "no:cacheprovider":
            command += ["-p", plugin]
    for override in getattr(option, "override_ini", None) or []:
        command += ["-o", override]
    if getattr(option, "importmode", None):
        command += [f"--import-mode={option.importmode}"]
    if getattr(option, "confcutdir", None):
        command += [f"--confcutdir={option.confcutdir}"]
    if config.pluginmanager.hasplugin("xdist"):
        command += ["-n", "0"]
    return command


def _safe_name(nodeid: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid).strip("_")[:80]
    return f"{readable}-{hashlib.sha1(nodeid.encode('utf-8')).hexdigest()[:10]}"


def _out_root(config: pytest.Config) -> Path:
    given = config.getoption("--toolstorm-explore-out")
    if given:
        return Path(given).resolve()
    cache = getattr(config, "cache", None)
    if cache is not None:
        return Path(cache.mkdir("toolstorm-explore"))
    return Path(tempfile.gettempdir()) / f"toolstorm-explore-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def run_explore(item: pytest.Item, work: Path, only: Sequence[str] = ()) -> Dict[str, Any]:
    """Run ``toolstorm explore`` on ``item`` (``only``: these variations); what to make its cases
    from: the result (or None), the exit code, the rerun command and the output."""
    config = item.config
    out = _out_root(config) / _safe_name(item.nodeid)
    # The counterexamples of this explore only: those of an earlier one may no longer fail (a rerun
    # of some variations replaces theirs, and keeps the others').
    if not only:
        shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    rules = _rules_document(item)
    rules_file = None
    if rules is not None:
        rules_file = work / "rules.json"
        rules_file.write_text(json.dumps(rules), encoding="utf-8")
    result_file = work / "result.json"
    inner = _inner_pytest(item)
    chosen = ["--only", ",".join(only)] if only else []
    command = [*find_cli(config.rootpath), "explore", "--json", str(result_file), "--out", str(out), *chosen, *_flags(item, rules_file), "--", *inner]
    env = {name: value for name, value in os.environ.items() if name not in _SESSION_VARIABLES}
    done = subprocess.run(command, cwd=str(config.rootpath), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    result = None
    if result_file.exists():
        try:
            result = json.loads(result_file.read_text(encoding="utf-8"))
        except ValueError:
            result = None
    output = done.stdout.decode("utf-8", "replace")
    return {
        "nodeid": item.nodeid,
        "code": done.returncode,
        "result": result,
        # The live rerun of a variation: the same explore, only that variation (its id after --only).
        "rerun": ["toolstorm", "explore", "--only", *_flags(item, rules_file), "--", *inner],
        "output": "\n".join(output.splitlines()[-60:]),
    }


def _locked(item: pytest.Item, only: Sequence[str]) -> Dict[str, Any]:
    """The explore of ``item``, shared by the xdist workers of this session: the first to take the
    lock runs it and writes its result, the others wait on the lock and read it. Alone (or on a
    system without ``fcntl``) the explore just runs."""
    workerinput = getattr(item.config, "workerinput", None)
    uid = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None
    if not uid or fcntl is None:
        with tempfile.TemporaryDirectory(prefix="toolstorm-explore-") as work:
            return run_explore(item, Path(work), only)
    folder = Path(tempfile.gettempdir()) / f"toolstorm-explore-session-{uid}"
    folder.mkdir(parents=True, exist_ok=True)
    name = _safe_name(item.nodeid + "".join(f" {identifier}" for identifier in only))
    done = folder / f"{name}.json"
    with open(folder / f"{name}.lock", "a+b") as lock:
        # Released by the kernel if its holder dies: a waiting worker then runs the explore itself.
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if done.exists():
                return json.loads(done.read_text(encoding="utf-8"))
            found = run_explore(item, folder / name, only)
            temporary = done.with_name(f".{done.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(found), encoding="utf-8")
            os.replace(temporary, done)
            return found
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


class ExploreFailed(Exception):
    """A variation that failed (or an explore that could not run): its message is the whole report."""


def _site(step: Mapping[str, Any]) -> str:
    return f"{step['route']} #{step['ordinal']}"


def describe(variation: Mapping[str, Any]) -> str:
    """``response_lost on POST /shipments #1``, a fault reached under others ``… after timeout on …`` (as explore prints it)."""
    steps = list(reversed(variation["steps"]))
    first, rest = steps[0], steps[1:]
    text = f"{first['fault']} on {_site(first)}"
    before = ", ".join(f"{step['fault']} on {_site(step)}" for step in rest)
    return f"{text} after {before}" if rest else text


def case_id(variation: Mapping[str, Any]) -> str:
    """A case's parameter id: the fault, the call site it hit (route and ordinal) and the variation's id."""
    last = variation["steps"][-1]
    return f"{last['fault']}-{last['route']}#{last['ordinal']}-{variation['id']}"


def _failure(variation: Mapping[str, Any], found: Mapping[str, Any]) -> str:
    lines = [f"toolstorm explore: {describe(variation)} fails:"]
    lines += [f"  {check['check']}: {check['detail']}" for check in variation.get("failed", [])]
    if variation.get("counterexample"):
        lines.append(f"counterexample: {variation['counterexample']} (rules.json: its rules and seed; cassette.jsonl: what it sent and got; README.md: how to replay it)")
    rerun = list(found["rerun"])
    rerun.insert(3, variation["id"])
    lines.append(f"rerun: {shlex.join(rerun)}")
    if variation.get("output"):
        lines += ["--- the last lines the test printed ---", variation["output"].rstrip()]
    return "\n".join(lines)


def cases_of(found: Mapping[str, Any]) -> Iterator[Tuple[str, str, str]]:
    """``(id, outcome, message)`` per case of an explore: ``passed``, ``failed`` or ``skipped``."""
    result = found.get("result")
    if result is None or found["code"] not in (0, 1):
        why = {2: "it could not start (a failing baseline, a bad option, or no traffic through the proxy)", 127: "the command was not found", 130: "it was stopped"}.get(found["code"], f"it exited {found['code']}")
        yield ("explore", "failed", f"toolstorm explore of {found['nodeid']} did not run: {why}.\n{found['output']}")
        return
    summary = result.get("summary") or {}
    if found["code"] == 1 and summary.get("passed", 0) + summary.get("failed", 0) == 0:
        # Every variation was not exercised: skipped cases alone would let the session pass on nothing tested.
        yield ("explore", "failed", f"toolstorm explore of {found['nodeid']} tested nothing: no fault fired in {summary.get('notExercised', 0)} variation(s), so none shows the test survives a fault. Widen faults= or routes=, or make the calls those faults need.")
    for variation in result["variations"]:
        status = variation["status"]
        if status == "not-exercised":
            yield (case_id(variation), "skipped", f"{describe(variation)}: not exercised (the fault never fired: it proves nothing)")
        elif status == "fail" and variation.get("known"):
            where = "in the baseline" if variation["known"] == "baseline" else "allowed"
            yield (case_id(variation), "skipped", f"{describe(variation)}: a known failure ({where})")
        elif status == "fail":
            yield (case_id(variation), "failed", _failure(variation, found))
        else:
            yield (case_id(variation), "passed", "")
    for skip in result.get("skipped", []):
        for index, identifier in enumerate(skip.get("ids") or []):
            names = skip.get("names") or []
            name = names[index] if index < len(names) else identifier
            yield (f"{re.sub(r' on ', '-', name.split(' after ')[0]).replace(' #', '#')}-{identifier}", "skipped", f"{name} [{identifier}]: {skip['detail']}")


class ExploreCase(pytest.Item):
    """One variation of an explored test, reported as a case of its own."""

    def __init__(self, *, test: pytest.Item, outcome: str, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._test_info = test.reportinfo()
        self.outcome = outcome
        self.message = message
        # Selection by marker (-m) sees the test's own markers.
        self.own_markers.extend(getattr(test, "own_markers", []))
        self.keywords.update({name: True for name in test.keywords})

    def runtest(self) -> None:
        if self.outcome == "failed":
            raise ExploreFailed(f"{self.message}\nthis case alone (explore runs the baseline, then this variation): pytest {shlex.quote(self.nodeid)}")
        if self.outcome == "skipped":
            pytest.skip(self.message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ExploreFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> Tuple[Any, Optional[int], str]:
        path, line, _ = self._test_info
        return path, line, self.name


def cases_for(item: pytest.Item, found: Mapping[str, Any]) -> List[ExploreCase]:
    """The items that stand for ``item``: one per variation of its explore."""
    cases: List[ExploreCase] = []
    base = item.name
    for identifier, outcome, message in cases_of(found):
        name = f"{base[:-1]}-{identifier}]" if base.endswith("]") else f"{base}[{identifier}]"
        cases.append(ExploreCase.from_parent(item.parent, name=name, test=item, outcome=outcome, message=message))
    return cases


def _variation_ids(parameter: str) -> Optional[List[str]]:
    """The variation ids at the end of a case's parameter (``…-e3c56cbe``, ``…-71cbd871-5179c389``)."""
    found = re.search(r"((?:-[0-9a-f]{8})+)$", parameter)
    return found.group(1)[1:].split("-") if found else None


def selection(item: pytest.Item) -> Optional[List[str]]:
    """Which of ``item``'s variations the command line asks for: ``[]`` for all of them (a folder,
    its file, the test by name), the ids of the cases it names (``test_x[timeout-POST /x#1-e3c56cbe]``:
    explore runs only those, after the baseline), or None when it names other tests of the file only
    (then the test is not explored: it would not run). Arguments it cannot read select everything."""
    config = item.config
    wanted: List[str] = []
    chain = item.nodeid.split("::")[1:]
    base = item.name.split("[")[0]
    own = item.name[len(base):].strip("[]")
    for arg in config.args:
        head, bracket, rest = arg.partition("[")
        strpath, *parts = head.split("::")
        try:
            path = (config.invocation_params.dir / strpath).resolve()
        except OSError:
            return []
        if path != item.path and path not in item.path.parents:
            if not path.exists():
                return []  # a module name (--pyargs), or something else this cannot read
            continue
        if not parts:
            return []
        if parts[:-1] != chain[:-1] or parts[-1] != base:
            continue
        if not bracket:
            return []
        parameter = rest[:-1] if rest.endswith("]") else rest
        if own and parameter == own:
            return []
        ids = _variation_ids(parameter) if (not own or parameter.startswith(own + "-")) else None
        if ids is None:
            return [] if parameter == "explore" else None
        wanted.append("-".join(ids))
    return sorted(set(wanted)) if wanted else None


def explored_cases(item: pytest.Item, problems: Callable[[pytest.Item], List[str]]) -> Optional[List[ExploreCase]]:
    """The cases that stand for ``item`` when it is explored, else None. A test whose markers have
    ``problems`` is not explored: it fails with them, rather than run without what they asked."""
    if not explore_requested(item) or problems(item):
        return None
    only = selection(item)
    if only is None:
        return None
    config = item.config
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and not hasattr(config, "workerinput"):
        reporter.write_line(f"toolstorm: exploring {item.nodeid}{' (' + ', '.join(only) + ')' if only else ''} …")
    try:
        found = _locked(item, only)
    except ToolstormError as error:
        raise pytest.UsageError(str(error)) from error
    return cases_for(item, found)
