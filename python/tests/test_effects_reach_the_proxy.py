"""Every way of making a run gets the effects its tool servers report (#36): the session proxy's
runs, a Proxy in a script, a test's own run; and evidence that could not be recorded never lets a
check pass in silence: a report the proxy refused fails the contracts on effects, and one that
reached no proxy fails the test."""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_a_run_of_the_session_proxy_gets_the_effects_its_tool_server_reports(suite):
    # toolstorm_proxy.run(), no toolstorm fixture: the helper is configured from the environment, as the docs say.
    suite.makepyfile(
        test_session_runs="""
        import requests

        def test_two_commits_of_one_order(toolstorm_proxy, shipping_server):
            run = toolstorm_proxy.run()
            for _ in range(2):
                assert requests.post(run.url(shipping_server.url) + "/ship", json={"order": "order-1729"}, timeout=10).status_code == 201
            run.contract().no_duplicate_effects().assert_valid()
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*No duplicate side effects: 1 duplicate effect(s) across 2 commits*", '*shipment key "order-1729" committed 2 times (calls 1, 2)*'])


SCRIPT = """
import json, requests, toolstorm
from servers import ShippingServer

server = ShippingServer()
with toolstorm.Proxy() as proxy:
    run = proxy.run()
    for _ in range(2):
        requests.post(run.url(server.url) + "/ship", json={"order": "o-1"}, timeout=10)
    print(json.dumps([effect["key"] for effect in run.report()["effects"]]))
server.close()
"""


def test_a_proxy_started_in_a_script_gets_the_effects_of_tool_servers_in_its_process():
    env = {name: value for name, value in os.environ.items() if not name.startswith("TOOLSTORM_") or name in ("TOOLSTORM_BIN", "TOOLSTORM_CA_DIR")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["o-1", "o-1"]
    assert "could not report" not in done.stderr


def test_an_effect_report_the_proxy_refused_fails_the_contracts_on_effects(suite):
    # A tool server's background job commits after the test reset its run: its call is forgotten,
    # the proxy refuses the report, and the run's effects are incomplete.
    suite.makepyfile(
        test_refused="""
        import requests
        from toolstorm.effects import report_effect

        def test_a_commit_reported_after_its_call_was_forgotten(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10).status_code == 201
            kept = shipping_server.requests[-1]["headers"]
            toolstorm.reset()
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-2"}, timeout=10).status_code == 201
            assert report_effect(kept, "shipment", "o-1") is False
            refused = toolstorm.report()["refusedEffects"]
            assert refused["count"] == 1 and "no exchange" in refused["first"]
            checks = toolstorm.contract().no_duplicate_effects().at_most_effects("shipment", 5).at_most_calls(5).checks
            assert [check["passed"] for check in checks] == [False, False, True]
            toolstorm.contract().no_duplicate_effects().assert_valid()
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*No duplicate side effects: 0 duplicate effect(s) across 1 commits, but 1 effect report(s) were refused while the run was kept, so its effects may be incomplete (first: Failed to record an effect: *",
            "*1 effect report(s) refused while the run was kept*",
        ]
    )


def test_an_effect_report_that_reached_no_proxy_fails_the_test(suite):
    # The tool server's helper points at a sidecar nobody serves (a stale address): both commits are
    # lost, and the contract would pass on no evidence at all.
    suite.makepyfile(
        test_lost="""
        import socket
        import requests
        from toolstorm import effects

        def test_two_commits_reported_nowhere(toolstorm, shipping_server):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                nowhere = "http://127.0.0.1:%d" % probe.getsockname()[1]
            effects.configure(sidecar_url=nowhere)
            try:
                for _ in range(2):
                    assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10).status_code == 201
            finally:
                effects.configure(None)
            toolstorm.contract().no_duplicate_effects().assert_valid()

        def test_a_later_test_is_not_blamed(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-2"}, timeout=10).status_code == 201
            toolstorm.contract().no_duplicate_effects().assert_valid()
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-W", "ignore::toolstorm.effects.ToolstormWarning")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*toolstorm: 2 effect reports made in this process during the test were not recorded, so the contracts on effects judged without them. The last: toolstorm: could not report an effect to http://127.0.0.1:*/effects (URLError: *",
            "*FAILED test_lost.py::test_two_commits_reported_nowhere*",
        ]
    )


def test_a_tool_server_that_reports_no_commits_fails_the_contracts_after_a_lost_answer(suite):
    # The tool server never calls report_effect: the agent's retry after the lost answer ships
    # twice, and no report was refused or lost on its way. The contract on effects must not pass.
    suite.makepyfile(
        test_silent="""
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        import requests

        class Silent(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True
            commits = 0

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                Silent.commits += 1
                self.send_response(201)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        def test_a_lost_answer_retried_against_a_silent_tool_server(toolstorm):
            server = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            try:
                toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
                url = toolstorm.url("http://127.0.0.1:%d" % server.server_address[1]) + "/ship"
                for attempt in range(2):
                    try:
                        requests.post(url, json={"order": "o-1"}, timeout=10)
                        break
                    except requests.ConnectionError:
                        pass
                assert Silent.commits == 2
                toolstorm.contract().require_triggered().no_duplicate_effects().assert_valid()
            finally:
                server.shutdown()
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*No duplicate side effects: 0 duplicate effect(s) across 0 commits, but no effect was reported in this run, yet call 1 (POST /ship) lost its answer after its upstream answered it (lost-ack)*"])


def test_a_claim_that_reached_no_proxy_fails_the_test(suite):
    # The agent concluded the lost write failed (it committed: a silent commit); its claim went to a
    # stale sidecar, and claims_match_effects passed on 0 claims.
    suite.makepyfile(
        test_lost_claim="""
        import socket
        import requests
        from toolstorm import effects

        def test_a_silent_commit_whose_claim_was_lost(toolstorm, shipping_server):
            toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
            try:
                requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10)
            except requests.ConnectionError:
                pass
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                nowhere = "http://127.0.0.1:%d" % probe.getsockname()[1]
            assert effects.ToolstormEffects(sidecar_url=nowhere).claim("POST /ship", "failure") is False
            toolstorm.contract().claims_match_effects().assert_valid()
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider", "-W", "ignore::toolstorm.effects.ToolstormWarning")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*toolstorm: 1 claim report made in this process during the test was not recorded, so the checks on claims judged without it. The last: toolstorm: could not report a claim to http://127.0.0.1:*/claims (URLError: *"]
    )


def test_an_effect_reported_for_a_call_that_went_around_toolstorm_fails_the_test(suite):
    # The agent's fallback after the lost answer goes straight to the tool server: its commit reaches
    # the helper with no call id, is skipped as production traffic, and the duplicate went unseen.
    suite.makepyfile(
        test_around="""
        import requests

        def test_a_retry_straight_to_the_tool_server(toolstorm, shipping_server):
            toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
            try:
                requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10)
            except requests.ConnectionError:
                requests.post(shipping_server.url + "/ship", json={"order": "o-1"}, timeout=10)
            assert shipping_server.shipments == ["o-1", "o-1"]
            toolstorm.contract().require_triggered().no_duplicate_effects().assert_valid()

        def test_a_later_test_is_not_blamed(toolstorm, shipping_server):
            assert requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-2"}, timeout=10).status_code == 201
        """
    )
    result = suite.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*toolstorm: 1 effect report made in this process during the test came from a request that did not go through toolstorm (no x-toolstorm-call header), so the contracts on effects judged without it. The last: toolstorm: effect ('shipment', 'o-1') was reported for a request with no x-toolstorm-call header*",
            "*FAILED test_around.py::test_a_retry_straight_to_the_tool_server*",
        ]
    )
