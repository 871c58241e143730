"""The plugin as a user's suite sees it, run with pytester: what fails, how, and what is written."""

import json

import pytest


def test_a_misspelled_route_fails_the_test_naming_the_rule_its_route_and_the_closest_route_seen(suite):
    suite.makepyfile(
        test_typo="""
        import requests

        def test_typo(toolstorm, shipping_server):
            toolstorm.rules([{"name": "lost-ack", "route": "POST /shpi", "kind": "response_lost", "calls": [1]}])
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10).status_code == 201

        def test_opted_out(toolstorm, shipping_server):
            toolstorm.rules([{"name": "maybe", "route": "POST /ship", "kind": "unavailable", "probability": 0}], require_triggered=False)
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-2"}, timeout=10).status_code == 201

        def test_triggered(toolstorm, shipping_server):
            toolstorm.rules([{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}])
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-3"}, timeout=10).status_code == 503
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    # A failure of the test (not an error of its teardown), and only that one.
    result.assert_outcomes(passed=2, failed=1, errors=0)
    result.stdout.fnmatch_lines(
        [
            "*toolstorm: 1 rule configured by this test never triggered*",
            '*rule "lost-ack" (route "POST /shpi"): Triggered 0 time(s); never eligible: no call was on a route matching "POST /shpi" (routes seen: POST /ship ×1); the closest route seen is "POST /ship"*',
            "*FAILED test_typo.py::test_typo*",
        ]
    )
    # The failed test's calls are shown with it.
    result.stdout.fnmatch_lines(["*toolstorm*", "*1  POST /ship  response 201*", "*rule lost-ack: eligible 0, selected 0, triggered 0*"])


def test_each_test_is_a_run_of_its_own_and_its_report_is_written(suite, tmp_path):
    suite.makepyfile(
        test_runs="""
        import requests

        def test_first(toolstorm, shipping_server):
            toolstorm.rules([{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}])
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "a"}, timeout=10).status_code == 503

        def test_second_sees_no_rule_and_no_call_of_the_first(toolstorm, shipping_server):
            assert toolstorm.report()["calls"] == [] and toolstorm.report()["rules"] == []
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "b"}, timeout=10).status_code == 201
            assert [call["ordinal"] for call in toolstorm.report()["calls"]] == [1]

        def test_without_calls(toolstorm):
            assert toolstorm.report()["calls"] == []
        """
    )
    reports = tmp_path / "reports"
    result = suite.runpytest("-p", "no:cacheprovider", f"--toolstorm-report-dir={reports}")
    result.assert_outcomes(passed=3)
    written = sorted(path.name for path in reports.iterdir())
    assert written == ["test_runs.py_test_first.json", "test_runs.py_test_second_sees_no_rule_and_no_call_of_the_first.json", "test_runs.py_test_without_calls.json"]
    first = json.loads((reports / written[0]).read_text())
    assert first["kind"] == "toolstorm.report" and first["coverage"] == {"down": {"eligible": 1, "selected": 1, "triggered": 1}}
    assert json.loads((reports / written[2]).read_text())["calls"] == []


CONVERSATION = """
import openai, pytest

@pytest.mark.toolstorm_cassette("cassettes/chat.jsonl")
def test_chat(toolstorm, model_server):
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    for text in TEXTS:
        client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": text}])
    print("HITS", model_server.hits(), "ACTION", toolstorm.cassette.action)
"""


def test_a_cassette_is_recorded_once_then_replayed_strictly(suite):
    suite.makepyfile(test_chat=f"TEXTS = ['one', 'two']\n{CONVERSATION}")
    recorded = suite.runpytest("-p", "no:cacheprovider", "-s")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["*HITS 2 ACTION record*"])
    cassette = suite.path / "cassettes" / "chat.jsonl"
    assert len([line for line in cassette.read_text().splitlines() if line.startswith('{"seq":')]) == 2
    assert "sk-test" not in cassette.read_text()
    original = cassette.read_text()

    replayed = suite.runpytest("-p", "no:cacheprovider", "-s")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*HITS 0 ACTION replay*"])

    # The agent changed: its second request is not the recorded one. The test fails with the table.
    suite.makepyfile(test_chat=f"TEXTS = ['one', 'three']\n{CONVERSATION}")
    diverged = suite.runpytest("-p", "no:cacheprovider")
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(["*ERR_CASSETTE_MISMATCH*", "*req  #  expected*seen*result*", "*2  2  POST /v1/chat/completions  POST /v1/chat/completions  mismatch: body differs*"])

    # One request fewer: the recorded exchange never asked for fails the test at its end.
    suite.makepyfile(test_chat=f"TEXTS = ['one']\n{CONVERSATION}")
    fewer = suite.runpytest("-p", "no:cacheprovider")
    fewer.assert_outcomes(failed=1)
    fewer.stdout.fnmatch_lines(["*toolstorm: the replay of *chat.jsonl failed*", "*2  POST /v1/chat/completions  *unused*", "*(ERR_CASSETTE_UNUSED)*"])
    assert cassette.read_text() == original  # a replay never rewrites the cassette

    # Recording anew (--toolstorm-record-mode=all) keeps the cassette only when the test passes.
    suite.makepyfile(test_chat=f"TEXTS = ['one', 'three']\n{CONVERSATION}    assert False, 'the agent broke'\n")
    failed = suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all")
    failed.assert_outcomes(failed=1)
    assert cassette.read_text() == original
    assert [path.name for path in cassette.parent.iterdir()] == ["chat.jsonl"]  # no recording left behind
    suite.makepyfile(test_chat=f"TEXTS = ['one', 'three']\n{CONVERSATION}")
    suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all").assert_outcomes(passed=1)
    assert "three" in cassette.read_text() and "two" not in cassette.read_text()


def test_record_mode_none_refuses_a_missing_cassette_and_new_episodes_adds_to_one(suite):
    suite.makepyfile(test_chat=f"TEXTS = ['one']\n{CONVERSATION}")
    missing = suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=none")
    missing.assert_outcomes(errors=1)
    missing.stdout.fnmatch_lines(["*cassettes/chat.jsonl does not exist and the record mode is 'none'*"])
    assert not (suite.path / "cassettes" / "chat.jsonl").exists()

    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    suite.makepyfile(test_chat=f"TEXTS = ['one', 'two']\n{CONVERSATION}")
    grown = suite.runpytest("-p", "no:cacheprovider", "-s", "--toolstorm-record-mode=new_episodes")
    grown.assert_outcomes(passed=1)
    grown.stdout.fnmatch_lines(["*HITS 1 ACTION update*"])  # only the new request reached the provider
    assert len([line for line in (suite.path / "cassettes" / "chat.jsonl").read_text().splitlines() if line.startswith('{"seq":')]) == 2


def test_a_cassette_keeps_its_large_bodies_beside_it_through_record_replay_update_and_a_failed_recording(suite):
    # A prompt over 64 KiB: toolstorm keeps the request body in a body file, chat.bodies/sha256-….
    long_text = "lorem ipsum " * 8000
    suite.makepyfile(test_chat=f"TEXTS = [{long_text!r}]\n{CONVERSATION}")
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    cassettes = suite.path / "cassettes"
    assert sorted(path.name for path in cassettes.iterdir()) == ["chat.bodies", "chat.jsonl"]
    files = sorted(path.name for path in (cassettes / "chat.bodies").iterdir())
    # The request, and the model's answer that quotes it: each named in the cassette's line.
    assert len(files) == 2 and all(name.startswith("sha256-") and name in (cassettes / "chat.jsonl").read_text() for name in files)

    suite.runpytest("-p", "no:cacheprovider", "-s").stdout.fnmatch_lines(["*HITS 0 ACTION replay*"])

    # An update copies the body files with the cassette and keeps them.
    suite.makepyfile(test_chat=f"TEXTS = [{long_text!r}, 'two']\n{CONVERSATION}")
    grown = suite.runpytest("-p", "no:cacheprovider", "-s", "--toolstorm-record-mode=new_episodes")
    grown.assert_outcomes(passed=1)
    grown.stdout.fnmatch_lines(["*HITS 1 ACTION update*"])
    assert sorted(path.name for path in (cassettes / "chat.bodies").iterdir()) == files
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    # A failed recording leaves the cassette, its folder and nothing else; a passing one without large bodies removes the folder.
    original = (cassettes / "chat.jsonl").read_text()
    suite.makepyfile(test_chat=f"TEXTS = ['small']\n{CONVERSATION}    assert False, 'the agent broke'\n")
    suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all").assert_outcomes(failed=1)
    assert (cassettes / "chat.jsonl").read_text() == original
    assert sorted(path.name for path in cassettes.iterdir()) == ["chat.bodies", "chat.jsonl"]
    suite.makepyfile(test_chat=f"TEXTS = ['small']\n{CONVERSATION}")
    suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all").assert_outcomes(passed=1)
    assert sorted(path.name for path in cassettes.iterdir()) == ["chat.jsonl"]


BLOCKED = """
import urllib.request
from pathlib import Path
import pytest

@pytest.mark.toolstorm_cassette("cassettes/ship.jsonl", record_mode="all")
def test_ship(toolstorm, shipping_server):
    base = toolstorm.url(shipping_server.url)
    urllib.request.urlopen(base + "/shipments", timeout=10).read()
    if BLOCK:
        # A file where the recording's body files go: the large body below cannot be stored, as on a full disk.
        work = next((Path(__file__).parent / "cassettes").glob(".ship.jsonl.*.recording"))
        work.with_name(work.name + ".bodies").write_text("in the way")
    note = "x" * 100_000
    urllib.request.urlopen(urllib.request.Request(base + "/ship", data=('{"order": "o-1", "note": "' + note + '"}').encode(), method="POST"), timeout=10).read()
    urllib.request.urlopen(base + "/shipments", timeout=10).read()
"""


def test_a_recording_toolstorm_could_not_write_errors_the_test_and_leaves_the_cassette_as_it_was(suite):
    suite.makepyfile(test_ship="BLOCK = False\n" + BLOCKED)
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    cassette = suite.path / "cassettes" / "ship.jsonl"
    recorded = cassette.read_text()
    assert recorded.count('"seq":') == 3

    suite.makepyfile(test_ship="BLOCK = True\n" + BLOCKED)
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*toolstorm: the recording of *ship.jsonl failed (toolstorm exited 2), so *ship.jsonl is unchanged.*", "*Failed to write the body file *.bodies/sha256-*"])
    # The cassette of 3 exchanges was not replaced by the 1 that could be written.
    assert cassette.read_text() == recorded
    for leftover in (suite.path / "cassettes").glob(".ship.jsonl.*"):
        leftover.unlink()
    assert sorted(path.name for path in (suite.path / "cassettes").iterdir()) == ["ship.bodies", "ship.jsonl"]


LOOP = """
import json, secrets, urllib.request, uuid
import openai, pytest

@pytest.mark.toolstorm_cassette("cassettes/loop.jsonl", normalize="ids,uuids"MARKER)
def test_loop(toolstorm, model_server, shipping_server):
    ship = urllib.request.Request(toolstorm.url(shipping_server.url) + "/ship", data=json.dumps({"order": "o-1"}).encode(), method="POST")
    receipt = json.loads(urllib.request.urlopen(ship, timeout=10).read())
    # The tool result the agent sends back holds values that are new in every run.
    result = json.dumps({**receipt, "ticket": str(uuid.uuid4())})
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "ship o-1"}, {"role": "tool", "tool_call_id": "call_" + secrets.token_hex(8), "content": result}])
    print("MODEL", model_server.hits(), "SHIPPED", ",".join(shipping_server.shipments) or "nothing")
"""


def test_a_cassette_replays_the_model_with_the_tool_live_and_tolerates_new_ids_with_its_normalisers(suite):
    suite.makepyfile(test_loop=LOOP.replace("MARKER", ""))
    recorded = suite.runpytest("-p", "no:cacheprovider", "-s")
    recorded.assert_outcomes(passed=1)
    recorded.stdout.fnmatch_lines(["*MODEL 1 SHIPPED o-1*"])
    assert '"normalize":["ids","uuids"]' in (suite.path / "cassettes" / "loop.jsonl").read_text().splitlines()[0]

    # --toolstorm-live: the tool server is called for real (it ships again), the model is replayed.
    live = suite.runpytest("-p", "no:cacheprovider", "-s", "--toolstorm-live", "POST /ship")
    live.assert_outcomes(passed=1)
    live.stdout.fnmatch_lines(["*MODEL 0 SHIPPED o-1*"])

    # --toolstorm-normalize none turns the header's normalisers off: the new ids miss, named by path.
    strict = suite.runpytest("-p", "no:cacheprovider", "--toolstorm-live", "POST /ship", "--toolstorm-normalize", "none")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*ERR_CASSETTE_MISMATCH*", "*$.messages[[]1].content*"])

    # The marker's live= does the same; a live route runs under the test's rules.
    suite.makepyfile(test_loop=LOOP.replace("MARKER", ', live=["POST /ship"]').replace("def test_loop(toolstorm, model_server, shipping_server):\n", "def test_loop(toolstorm, model_server, shipping_server):\n    toolstorm.rules([{'name': 'busy', 'route': 'POST /ship', 'kind': 'rate_limit', 'calls': [1], 'delay': 1}])\n    try:\n        urllib.request.urlopen(urllib.request.Request(toolstorm.url(shipping_server.url) + '/ship', data=b'{}', method='POST'), timeout=10)\n    except urllib.error.HTTPError as error:\n        print('FIRST', error.code)\n"))
    marked = suite.runpytest("-p", "no:cacheprovider", "-s")
    marked.assert_outcomes(passed=1)
    marked.stdout.fnmatch_lines(["*FIRST 429*", "*MODEL 0 SHIPPED o-1*"])


IDS_LOOP = """
import json, secrets, urllib.request
import openai, pytest

@pytest.mark.toolstorm_cassette("cassettes/ids.jsonl", live=["POST /ship"]MARKER)
def test_loop(toolstorm, model_server, shipping_server):
    ship = urllib.request.Request(toolstorm.url(shipping_server.url) + "/ship", data=json.dumps({"order": "o-1"}).encode(), method="POST")
    receipt = json.loads(urllib.request.urlopen(ship, timeout=10).read())
    # The tool's own ids, new in every run: no named normaliser knows them.
    result = json.dumps({**receipt, "id": "SHP-%04d" % secrets.randbelow(10000), "ref": "ord_" + secrets.token_hex(4)})
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "ship o-1"}, {"role": "tool", "tool_call_id": "call_1", "content": result}])
    print("MODEL", model_server.hits())
"""


def test_a_cassette_replays_a_tools_own_ids_with_the_markers_normalize_pattern_or_normalize_path(suite):
    header = lambda: json.loads((suite.path / "cassettes" / "ids.jsonl").read_text().splitlines()[0])["match"]
    suite.makepyfile(test_ids=IDS_LOOP.replace("MARKER", ""))
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    strict = suite.runpytest("-p", "no:cacheprovider")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*ERR_CASSETTE_MISMATCH*", "*$.messages[[]1].content*"])

    suite.makepyfile(test_ids=IDS_LOOP.replace("MARKER", ', normalize_pattern=[r"SHP-\\d+", r"ord_[0-9a-f]+"]'))
    suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all").assert_outcomes(passed=1)
    assert header()["normalizePatterns"] == [r"SHP-\d+", r"ord_[0-9a-f]+"]
    replayed = suite.runpytest("-p", "no:cacheprovider", "-s")
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["*MODEL 0*"])

    suite.makepyfile(test_ids=IDS_LOOP.replace("MARKER", ', normalize_path="$.messages[1].content"'))
    suite.runpytest("-p", "no:cacheprovider", "--toolstorm-record-mode=all").assert_outcomes(passed=1)
    assert (header()["normalizePatterns"], header()["normalizePaths"]) == ([], ["$.messages[1].content"])
    suite.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

    # A malformed one stops the test before it runs, with the CLI's message naming the flag.
    suite.makepyfile(test_ids=IDS_LOOP.replace("MARKER", ', normalize_pattern="SHP-(\\\\d+"'))
    bad = suite.runpytest("-p", "no:cacheprovider")
    bad.assert_outcomes(errors=1)
    bad.stdout.fnmatch_lines(["*--normalize-pattern: expected a regular expression that matches something*got /SHP-(\\d+/*"])
