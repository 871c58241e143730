"""``--toolstorm-incidents DIR``: a suite keeps the tests that went wrong as incident cassettes
(docs/incidents.md#in-a-test-suite), each replaying offline."""

import json

SUITE = """
import requests

def test_ships(toolstorm, shipping_server):
    assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "fine"}, timeout=10).status_code == 201

def test_ships_and_then_fails(toolstorm, shipping_server):
    receipt = requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-bad"}, timeout=10).json()
    assert receipt["order"] == "o-good", "the agent shipped the wrong order"

def test_fails_before_any_call(toolstorm):
    assert False, "no call made"

def test_ships_again(toolstorm, shipping_server):
    assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "fine-2"}, timeout=10).status_code == 201
"""


def incidents_in(folder):
    """The index's lines of kept incidents (not evictions)."""
    lines = [json.loads(line) for line in (folder / "index.jsonl").read_text().splitlines() if line.strip()]
    return [line for line in lines if "incident" in line and "evicted" not in line]


def test_a_suite_keeps_exactly_its_failing_test_s_run_as_a_cassette_that_replays_offline(suite, tmp_path):
    suite.makepyfile(test_orders=SUITE)
    folder = tmp_path / "incidents"
    result = suite.runpytest("-p", "no:cacheprovider", "-rA", f"--toolstorm-incidents={folder}")
    result.assert_outcomes(passed=2, failed=2)
    kept = incidents_in(folder)
    assert [line["run"].rsplit("-", 1)[-1] for line in kept] == ["test_ships_and_then_fails"], kept
    [incident] = kept
    assert incident["why"] == ["marked"] and incident["calls"] == 1 and incident["routes"] == ["POST /ship"]
    assert "test_orders.py::test_ships_and_then_fails failed in call" in incident["detail"][0] and "the agent shipped the wrong order" in incident["detail"][0]
    # The test's output says where its incident is; the one that made no call says there is none.
    result.stdout.fnmatch_lines([f"*incident kept: {folder / incident['incident']} (marked)*"])
    result.stdout.fnmatch_lines(["*incident not kept: run *test_fails_before_any_call made no call through toolstorm*"])
    assert sorted(path.name for path in folder.iterdir()) == sorted(["index.jsonl", incident["incident"], incident["incident"].replace(".jsonl", ".report.json")])

    # The cassette holds that run alone, and replays it offline (the shipping server is gone).
    cassette = [json.loads(line) for line in (folder / incident["incident"]).read_text().splitlines()]
    exchanges = [line for line in cassette if line.get("type", "exchange") == "exchange" and "request" in line]
    assert [(exchange["run"], json.loads(exchange["request"]["body"]["data"])) for exchange in exchanges] == [(incident["run"], {"order": "o-bad"})]
    suite.makepyfile(
        test_replay=f"""
        import requests
        from toolstorm import Proxy

        def test_the_incident_replays_offline():
            with Proxy(replay={str(folder / incident["incident"])!r}) as proxy:
                # The agent's request as it went: to the shipping server's address, through the proxy.
                answer = requests.post({exchanges[0]["request"]["url"]!r}, json={{"order": "o-bad"}}, proxies={{"http": proxy.url}}, timeout=10)
                assert (answer.status_code, answer.json()["order"]) == (201, "o-bad")
        """
    )
    replayed = suite.runpytest("-p", "no:cacheprovider", "test_replay.py")
    replayed.assert_outcomes(passed=1)


def test_the_ini_option_keeps_a_passing_test_whose_run_had_a_fault_fire_and_not_the_others(suite):
    suite.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\ntoolstorm_incidents = kept\n")
    suite.makepyfile(
        test_faults="""
        import requests

        def test_recovers_from_a_503(toolstorm, shipping_server):
            toolstorm.rules([{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}])
            statuses = [requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "a"}, timeout=10).status_code for _ in range(2)]
            assert statuses == [503, 201]

        def test_plain(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "b"}, timeout=10).status_code == 201
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    kept = incidents_in(suite.path / "kept")
    assert [(line["run"].rsplit("-", 1)[-1], line["why"], line["calls"]) for line in kept] == [("test_recovers_from_a_503", ["fault"], 2)], kept
