"""Examples to copy: each test is what a user writes with the ``toolstorm`` fixture.

The fake servers (servers.py) stand in for your tool server and model provider; point the same
code at yours. The shipping server reports each commit with ``toolstorm.effects.report_effect``.
"""

import openai
import pytest
import requests

LOST_ACK = {"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}


def ship(base_url, order, key=None):
    """An agent's tool call with one retry on a broken connection: the bug under test."""
    body = {"order": order, **({"idempotency_key": key} if key else {})}
    for attempt in range(2):
        try:
            return requests.post(f"{base_url}/ship", json=body, timeout=10).json()
        except requests.ConnectionError:
            if attempt == 1:
                raise


def test_a_lost_acknowledgement_retried_without_a_key_ships_twice(toolstorm, shipping_server):
    toolstorm.rules([LOST_ACK], seed=42)
    receipt = ship(toolstorm.url(shipping_server.url), "order-1729")
    assert receipt["shipment"] == 2  # the agent saw one clean answer ...
    with pytest.raises(AssertionError, match=r"No duplicate side effects: 1 duplicate effect\(s\) across 2 commits"):
        toolstorm.contract().no_duplicate_effects().assert_valid()  # ... but the tool committed twice


def test_a_lost_acknowledgement_retried_with_an_idempotency_key_ships_once(toolstorm, idempotent_shipping_server):
    toolstorm.rules([LOST_ACK], seed=42)
    ship(toolstorm.url(idempotent_shipping_server.url), "order-1729", key="order-1729")
    toolstorm.contract().require_triggered().no_duplicate_effects().at_most_calls(2).assert_valid()
    assert idempotent_shipping_server.shipments == ["order-1729"]


def test_the_openai_sdk_retries_a_429_after_its_retry_after(toolstorm, model_server):
    toolstorm.rules([{"name": "busy", "route": "POST /v1/chat/completions", "kind": "rate_limit", "calls": [1], "delay": 0.2}])
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=2)
    answer = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content.startswith("Hello, world!")
    calls = toolstorm.report()["calls"]
    assert [(call["status"], call["injected"]) for call in calls] == [(429, True), (200, False)]
    assert model_server.hits() == 1  # the 429 never reached the provider
    toolstorm.contract().retry_after_respected().at_most_model_calls(2).max_tokens(18).assert_valid()


@pytest.mark.toolstorm(rules=[{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}], seed=7)
def test_rules_from_the_marker(toolstorm, shipping_server):
    first = requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10)
    second = requests.post(toolstorm.url(shipping_server.url) + "/ship", json={"order": "o-1"}, timeout=10)
    assert (first.status_code, second.status_code) == (503, 201)


@pytest.mark.toolstorm_cassette("cassettes/conversation.jsonl")
def test_a_recorded_conversation_replays_with_no_provider(toolstorm, model_server):
    # The first run records the conversation into the cassette; every later run replays it strictly,
    # and a request that differs from the recording fails the test with the table of expected vs seen.
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    answers = [client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": text}]).choices[0].message.content for text in ("one", "two")]
    assert answers == ["Hello, world! You said: one", "Hello, world! You said: two"]
    if toolstorm.cassette.replaying:
        assert model_server.hits() == 0  # offline: the provider was never asked
