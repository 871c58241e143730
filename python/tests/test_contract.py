"""Contracts from Python are evaluated by the proxy: the same names, details, verdicts and the lines
a failing check names as in TypeScript (docs/contracts.md), with bad arguments refused when a check is added."""

import pytest
import requests


def test_every_check_runs_on_the_run_s_evidence(toolstorm, shipping_server, model_server):
    toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
    for _ in range(2):
        try:
            requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10)
        except requests.ConnectionError:
            pass
    requests.post(toolstorm.url(model_server.url) + "/v1/chat/completions", json={"model": "m", "messages": []}, timeout=10)
    contract = (
        toolstorm.contract()
        .require_triggered()
        .no_duplicate_effects()
        .at_most_calls(3)
        .at_most_calls(1, route="POST /ship")
        .at_most_effects("shipment", 1, key="o-1")
        .at_most_model_calls(1)
        .max_tokens(18)
        .at_most_tokens(10, kind="input")
        .retry_after_respected()
        .check("Order confirmed", True, "shipment 2")
    )
    assert [(check["name"], check["passed"], check["detail"]) for check in contract.checks] == [
        ("Fault exercised: lost-ack", True, "Triggered 1 time(s)"),
        ("No duplicate side effects", False, "1 duplicate effect(s) across 2 commits"),
        ("Call budget", True, "3 / 3 calls"),
        ("Call budget: POST /ship", False, "2 / 1 calls"),
        ("Effect budget: shipment", False, "2 / 1 committed effects"),
        ("Model-call budget", True, "1 / 1 model calls"),
        ("Token budget", True, "18 / 18 tokens"),
        ("Token budget: input", False, "11 / 10 tokens"),
        ("Retry-after respected", True, "0 retry(s) occurred before the advertised delay"),
        ("Order confirmed", True, "shipment 2"),
    ]
    assert contract.passed is False
    # What a failing check names comes with it, as `toolstorm check` prints it (#36).
    assert [check.get("details") for check in contract.checks[1:4]] == [['shipment key "o-1" committed 2 times (calls 1, 2)'], None, ["call 1  POST /ship  reset  [lost-ack]", "call 2  POST /ship  response 201"]]
    with pytest.raises(AssertionError) as failed:
        contract.assert_valid()
    assert str(failed.value) == (
        "toolstorm contract failed\n"
        "No duplicate side effects: 1 duplicate effect(s) across 2 commits\n"
        '    shipment key "o-1" committed 2 times (calls 1, 2)\n'
        "Call budget: POST /ship: 2 / 1 calls\n"
        "    call 1  POST /ship  reset  [lost-ack]\n"
        "    call 2  POST /ship  response 201\n"
        "Effect budget: shipment: 2 / 1 committed effects\n"
        "Token budget: input: 11 / 10 tokens"
    )


def test_an_empty_contract_does_not_pass(toolstorm):
    with pytest.raises(AssertionError, match="An empty contract cannot establish correctness"):
        toolstorm.contract().assert_valid()


@pytest.mark.parametrize(
    "add, message",
    [
        (lambda c: c.at_most_calls(-1), "the call limit must be a nonnegative integer"),
        (lambda c: c.at_most_calls(1.5), "the call limit must be a nonnegative integer"),
        (lambda c: c.max_tokens(5, kind="cached"), "unknown token kind 'cached'"),
        (lambda c: c.check("x", 1), "the condition must be a bool"),
    ],
)
def test_a_bad_argument_is_refused_when_the_check_is_added(toolstorm, add, message):
    with pytest.raises(ValueError, match=message):
        add(toolstorm.contract())
