"""Explored tests (``@pytest.mark.toolstorm(explore=...)``, ``--toolstorm-explore``): the test runs
once per call site x fault under ``toolstorm explore``, and each variation is a case of its own.

The agent is the one with known bugs of toolstorm explore's own tests (fixtures/explore/agent.py:
its own tool server and fake model, urllib through HTTP_PROXY; ``--fixed`` is the corrected one),
run by the test with ``toolstorm.env``. Each run of the test appends a line to a log, so the tests
can count how often it ran.
"""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from toolstorm import find_cli

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "fixtures" / "explore" / "agent.py"
# The shipping agent's writes, under two faults: 5 variations (a model call is not a write: no response_lost there).
FLAGS = ["--faults", "timeout,response_lost", "--route", "POST /*"]

TESTS = f'''
import os, subprocess, sys
import pytest

EXPLORE = {{"faults": ["timeout", "response_lost"], "routes": ["POST /*"]}}

def run_agent(toolstorm, *args):
    with open(os.environ["RUNS_LOG"], "a") as log:
        log.write(os.environ.get("TOOLSTORM_RUN", "?") + "\\n")
    done = subprocess.run([sys.executable, {str(AGENT)!r}, *args], env={{**os.environ, **toolstorm.env}}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr

@pytest.mark.toolstorm(explore=EXPLORE)
def test_ships(toolstorm):
    run_agent(toolstorm)

@pytest.mark.toolstorm(explore=EXPLORE)
def test_ships_fixed(toolstorm):
    run_agent(toolstorm, "--fixed")
'''


def cases(report):
    """``{case name: outcome}`` from a JUnit report: passed, failed, skipped (and the failure's message)."""
    found = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failure = case.find("failure")
        skipped = case.find("skipped")
        found[case.get("name")] = ("failed", failure.text or "") if failure is not None else ("skipped", skipped.get("message", "")) if skipped is not None else ("passed", "")
    return found


def explore_cli(command):
    """``toolstorm explore --json - FLAGS -- command``: its result."""
    done = subprocess.run([*find_cli(), "explore", "--json", "-", *FLAGS, "--", *command], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_each_variation_is_a_case_and_the_failures_are_those_toolstorm_explore_finds(suite, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNS_LOG", str(tmp_path / "runs.log"))
    suite.makepyfile(test_agent=TESTS)
    out = tmp_path / "counterexamples"
    result = suite.runpytest("-p", "no:cacheprovider", f"--junitxml={tmp_path / 'report.xml'}", f"--toolstorm-explore-out={out}")
    found = cases(tmp_path / "report.xml")
    # The same matrix as toolstorm explore's on the agent itself: the same variations (ids), the same failures.
    expected = explore_cli([sys.executable, str(AGENT)])
    ids = {variation["id"]: variation["status"] for variation in expected["variations"]}
    assert len(ids) == 5 and sorted(ids.values()) == ["fail", "fail", "pass", "pass", "pass"]
    buggy = {name.rsplit("-", 1)[-1].rstrip("]"): outcome for name, (outcome, _) in found.items() if name.startswith("test_ships[")}
    assert buggy == {identifier: {"fail": "failed", "pass": "passed"}[status] for identifier, status in ids.items()}
    # Named by fault, route and ordinal (and the id).
    lost = next(identifier for identifier, status in ids.items() if status == "fail" and any(v["id"] == identifier and v["steps"][0]["fault"] == "response_lost" for v in expected["variations"]))
    name = f"test_ships[response_lost-POST /shipments#1-{lost}]"
    outcome, message = found[name]
    assert outcome == "failed"
    # The failing check, where the counterexample is, and how to rerun it.
    assert 'No duplicate side effects: 1 duplicate effect(s) across 2 commits; shipment key "order-7" committed 2 times' in message
    assert f"counterexample: {out}" in message and (Path(message.split("counterexample: ")[1].split(" ")[0]) / "cassette.jsonl").is_file()
    assert f"rerun: toolstorm explore --only {lost} " in message
    # The corrected agent: every variation passes, no false alarm.
    fixed = {name: outcome for name, (outcome, _) in found.items() if name.startswith("test_ships_fixed[")}
    assert len(fixed) == 5 and set(fixed.values()) == {"passed"}
    result.assert_outcomes(passed=8, failed=2)
    # Each test ran once per variation and once for its baseline, no more.
    assert len((tmp_path / "runs.log").read_text().splitlines()) == 2 * (1 + 5)
    # A case's node id selects it: explore runs the baseline and that variation only.
    (tmp_path / "runs.log").write_text("")
    again = suite.runpytest("-p", "no:cacheprovider", f"test_agent.py::{name}")
    again.assert_outcomes(failed=1)
    assert sorted(set((tmp_path / "runs.log").read_text().split())) == ["explore-baseline", f"explore-{lost}"]


def test_xdist_workers_share_one_explore_and_collect_the_cases_of_one_process(suite, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNS_LOG", str(tmp_path / "runs.log"))
    suite.makepyfile(test_agent=TESTS.replace("def test_ships_fixed", "def _not_collected"))
    single = suite.runpytest("-p", "no:cacheprovider", f"--junitxml={tmp_path / 'single.xml'}")
    single.assert_outcomes(passed=3, failed=2)
    runs_alone = (tmp_path / "runs.log").read_text().splitlines()
    (tmp_path / "runs.log").write_text("")
    workers = suite.runpytest("-p", "no:cacheprovider", "-n", "2", f"--junitxml={tmp_path / 'workers.xml'}")
    workers.assert_outcomes(passed=3, failed=2)
    assert cases(tmp_path / "workers.xml").keys() == cases(tmp_path / "single.xml").keys()
    assert {name: outcome for name, (outcome, _) in cases(tmp_path / "workers.xml").items()} == {name: outcome for name, (outcome, _) in cases(tmp_path / "single.xml").items()}
    # The baseline ran once, not once per worker, and each variation once.
    runs = (tmp_path / "runs.log").read_text().splitlines()
    assert sorted(runs) == sorted(runs_alone) and runs.count("explore-baseline") == 1


def test_a_test_whose_baseline_fails_is_one_failing_case_with_its_output(suite):
    suite.makepyfile(
        test_broken="""
        import pytest, requests

        @pytest.mark.toolstorm(explore=True)
        def test_broken(toolstorm, shipping_server):
            requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "a"}, timeout=10)
            assert False, "the agent's own assertion, with no fault"
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*toolstorm explore of test_broken.py::test_broken did not run: it could not start (a failing baseline*", "*with no fault injected, command exit: exited 1*", "*the agent's own assertion, with no fault*", "FAILED test_broken.py::test_broken[[]explore[]]*"])


def test_an_explore_in_which_no_fault_fired_fails_the_test_instead_of_skipping_every_case(suite, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNS_LOG", str(tmp_path / "runs.log"))
    # POST /events answers the JSON string "ok": schema_drift has nothing to drift, so its one variation never fires.
    tests = TESTS.replace('"faults": ["timeout", "response_lost"], "routes": ["POST /*"]', '"faults": ["schema_drift"], "routes": ["POST /events"]')
    assert tests != TESTS
    suite.makepyfile(test_agent=tests.replace("def test_ships_fixed", "def _not_collected"))
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*toolstorm explore of test_agent.py::test_ships tested nothing: no fault fired in 1 variation(s)*"])


def test_explore_mistakes_fail_the_test_instead_of_exploring_something_else(suite):
    suite.makepyfile(
        test_mistakes="""
        import pytest

        @pytest.mark.toolstorm(explore={"fault": ["timeout"]})
        def test_misspelled_option(toolstorm):
            pass

        @pytest.mark.toolstorm(rules=[{"name": "down", "route": "*", "kind": "unavailable"}], explore=True)
        def test_rules_and_explore(toolstorm):
            pass

        @pytest.mark.toolstorm(explore=True)
        def test_without_the_fixture():
            pass
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines_random(
        [
            "*got explore={'fault': …}, an unknown option (did you mean 'faults'?): it would be ignored. explore= takes faults, routes, *",
            "*got rules and explore=: explore makes each run's rules (one fault per run)*",
            "*this test carries @pytest.mark.toolstorm, but it never used the toolstorm fixture*",
        ]
    )


def test_the_command_line_option_explores_the_tests_that_set_no_rules_of_their_own(suite, tmp_path, monkeypatch):
    monkeypatch.setenv("RUNS_LOG", str(tmp_path / "runs.log"))
    suite.makepyfile(
        test_suite=f"""
        import os, subprocess, sys
        import pytest, requests

        @pytest.mark.toolstorm(seed=5, explore={{"jobs": 1}})
        def test_agent(toolstorm):
            with open(os.environ["RUNS_LOG"], "a") as log:
                log.write(toolstorm.id + "\\n")
            done = subprocess.run([sys.executable, {str(AGENT)!r}, "--fixed"], env={{**os.environ, **toolstorm.env}}, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr

        @pytest.mark.toolstorm(rules=[{{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}}])
        def test_one_fault_of_its_own(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={{"order": "a"}}, timeout=10).status_code == 503

        @pytest.mark.toolstorm(explore=False)
        def test_opted_out(toolstorm):
            assert toolstorm.report()["calls"] == []
        """
    )
    # The marker's seed and jobs replace the command line's (given twice, explore would refuse them).
    result = suite.runpytest("-p", "no:cacheprovider", "-rA", "--toolstorm-explore", "--toolstorm-explore-args=--faults timeout --route 'POST /shipments' --jobs 2 --seed=3")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines_random(["PASSED test_suite.py::test_agent[[]timeout-POST /shipments#1-*[]]", "PASSED test_suite.py::test_one_fault_of_its_own", "PASSED test_suite.py::test_opted_out"])
    # The explored test ran as explore's runs (its baseline and its one variation); the others as usual, not logged.
    runs = sorted((tmp_path / "runs.log").read_text().split())
    assert len(runs) == 2 and runs[0] == "explore-baseline" and re.fullmatch(r"explore-[0-9a-f]{8}", runs[1])
