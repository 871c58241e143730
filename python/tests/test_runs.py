"""Each test is a run of its own, whatever client it uses, without adding a header: base URLs,
proxy URLs (HTTP_PROXY), a subprocess agent with ``toolstorm.env``, and traffic that names no
run at all (the active run). Runs used at once never see each other's calls or rules."""

import asyncio
import json
import os
import re
import urllib.request

import httpx
import requests

from upstreams import run_urllib_agent

DOWN_FIRST = {"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}


def routes(report):
    return [(call["route"], call["status"]) for call in report["calls"]]


def test_a_test_with_no_calls_has_an_empty_report(toolstorm):
    report = toolstorm.report()
    assert report["run"] == toolstorm.id and report["calls"] == [] and report["effects"] == []


def test_requests_and_urllib_through_the_run_s_proxy_url(toolstorm, shipping_server):
    toolstorm.rules([DOWN_FIRST])
    first = requests.post(f"{shipping_server.url}/ship", json={"order": "a"}, proxies={"http": toolstorm.proxy_url}, timeout=10)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": toolstorm.proxy_url}))
    request = urllib.request.Request(f"{shipping_server.url}/ship", data=json.dumps({"order": "b"}).encode(), headers={"content-type": "application/json"}, method="POST")
    with opener.open(request, timeout=10) as second:
        assert (first.status_code, second.status) == (503, 201)
    assert routes(toolstorm.report()) == [("POST /ship", 503), ("POST /ship", 201)]
    # The tool server reported its commit with the helper: on record against this run's call.
    assert [(effect["name"], effect["key"], effect["call"]) for effect in toolstorm.report()["effects"]] == [("shipment", "b", 2)]


def test_a_subprocess_agent_with_the_run_s_environment(toolstorm, shipping_server):
    toolstorm.rules([DOWN_FIRST])
    assert run_urllib_agent({**os.environ, **toolstorm.env}, f"{shipping_server.url}/ship") == [503, 201]
    assert routes(toolstorm.report()) == [("POST /ship", 503), ("POST /ship", 201)]
    assert toolstorm.env["TOOLSTORM_SIDECAR"] == toolstorm.sidecar_url == os.environ["TOOLSTORM_SIDECAR"]


def test_traffic_that_names_no_run_is_the_running_test_s(toolstorm, toolstorm_proxy, shipping_server):
    # The session's bare proxy URL (say, HTTP_PROXY set once for the whole suite): no run in it.
    toolstorm.rules([DOWN_FIRST])
    with httpx.Client(proxy=toolstorm_proxy.url, timeout=10) as client:
        assert client.post(f"{shipping_server.url}/ship", json={"order": "a"}).status_code == 503
    assert routes(toolstorm.report()) == [("POST /ship", 503)]


async def test_runs_used_at_once_never_see_each_other(toolstorm_proxy, shipping_server):
    # Two runs of one proxy at the same time (two tests of a suite running concurrently would be the same).
    runs = [toolstorm_proxy.run(), toolstorm_proxy.run()]
    runs[0].rules([DOWN_FIRST])
    runs[1].rules([{"name": "busy", "route": "POST /ship", "kind": "rate_limit", "calls": [2]}])

    async def agent(run, order):
        async with httpx.AsyncClient(base_url=run.url(shipping_server.url), timeout=10) as client:
            return [(await client.post("/ship", json={"order": order})).status_code for _ in range(3)]

    statuses = await asyncio.gather(agent(runs[0], "a"), agent(runs[1], "b"))
    assert statuses == [[503, 201, 201], [201, 429, 201]]
    assert [len(run.report()["calls"]) for run in runs] == [3, 3]
    assert [sorted(run.report()["coverage"]) for run in runs] == [["down"], ["busy"]]
    assert [[effect["key"] for effect in run.report()["effects"]] for run in runs] == [["a", "a"], ["b", "b"]]


def test_the_effects_helper_in_the_test_process_reports_to_this_test_s_proxy(toolstorm, shipping_server):
    response = requests.post(f"{toolstorm.url(shipping_server.url)}/ship", json={"order": "o-9"}, timeout=10)
    assert response.status_code == 201
    assert [effect["key"] for effect in toolstorm.report()["effects"]] == ["o-9"]


def test_an_agent_s_claims_go_to_the_running_test_s_run_and_are_judged(toolstorm, shipping_server):
    # The plugin sets TOOLSTORM_SIDECAR, TOOLSTORM_RUN and TOOLSTORM_ADMIN_TOKEN for the test:
    # report_claim needs nothing more. The lost answer's commit is a silent commit; the retry confirmed.
    from toolstorm.effects import report_claim

    toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
    for attempt in (1, 2):
        try:
            response = requests.post(f"{shipping_server.url}/ship", json={"order": "a"}, proxies={"http": toolstorm.proxy_url}, timeout=10)
            ok = response.status_code == 201
        except requests.ConnectionError:
            ok = False
        assert report_claim("POST /ship", "success" if ok else "failure", tool_call_id="call_%d" % attempt) is True
        if ok:
            break
    claims = toolstorm.report()["claims"]
    assert [(c["toolCallId"], c["status"], c["verdict"], c["calls"]) for c in claims] == [("call_1", "failure", "silent_commit", [1]), ("call_2", "success", "confirmed", [2])]
    assert toolstorm.contract().claims_match_effects().passed is False
    assert toolstorm.env["TOOLSTORM_ADMIN_TOKEN"] == os.environ["TOOLSTORM_ADMIN_TOKEN"]


def test_effects_require_approval_fails_on_a_shipment_made_while_the_approval_route_was_down(toolstorm, shipping_server):
    # A fail-open guard: the first approval answers 503, the agent ships anyway; the second is approved.
    toolstorm.rules([{"name": "approval-down", "route": "GET /approve", "kind": "unavailable", "calls": [1]}])
    proxies = {"http": toolstorm.proxy_url}
    for order in ("a", "b"):
        requests.get(f"{shipping_server.url}/approve", proxies=proxies, timeout=10)
        assert requests.post(f"{shipping_server.url}/ship", json={"order": order}, proxies=proxies, timeout=10).status_code == 201
    checked = toolstorm.contract().effects_require_approval("shipment", "GET /approve")
    assert checked.passed is False
    [check] = checked.checks
    details = check.pop("details")
    assert check == {"name": "Approval required: shipment", "passed": False, "detail": '1 of 2 "shipment" effect(s) committed without a 2xx answer from "GET /approve" before them (first: key "a", call 2)'}
    # It names the effect, the call that committed it and what the approval route answered before it.
    assert len(details) == 1 and re.fullmatch(r'shipment key "a" committed by call 2 \(POST /ship\) at \d+\.\d{3}s: no 2xx answer from "GET /approve" before it \(asked: call 1 response 503 \[approval-down\]\)', details[0])
    try:
        toolstorm.contract().effects_require_approval("shipment", "")
    except ValueError as error:
        assert "route" in str(error)
    else:
        raise AssertionError("an empty route was accepted")
