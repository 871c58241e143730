"""Status faults on a model call answer as the provider does (#26): the Python openai and anthropic
SDKs raise their own typed errors with the provider's error body and headers, and where they retry,
wait the advertised delay and succeed on the next call, which the report counts."""

import time

import anthropic
import openai
import pytest

CHAT = "POST /v1/chat/completions"
MESSAGES = "POST /v1/messages"
HI = [{"role": "user", "content": "hi"}]


def test_openai_raises_rate_limit_error_with_the_429_error_object(toolstorm, model_server):
    toolstorm.rules([{"name": "busy", "route": CHAT, "kind": "rate_limit", "delay": 1.5}])
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="gpt-test", messages=HI)
    error = raised.value
    assert (error.status_code, error.type, error.code) == (429, "requests", "rate_limit_exceeded")
    assert error.request_id.startswith("req_")
    headers = error.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"], headers["x-ratelimit-remaining-requests"], headers["x-ratelimit-reset-requests"]) == ("2", "1500", "0", "1.5s")
    assert model_server.hits() == 0


def test_openai_retries_a_503_and_succeeds(toolstorm, model_server):
    toolstorm.rules([{"name": "down", "route": CHAT, "kind": "unavailable", "calls": [1]}])
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=2)
    answer = client.chat.completions.create(model="gpt-test", messages=HI)
    assert answer.choices[0].message.content.startswith("Hello, world!")
    assert [(call["status"], call["injected"]) for call in toolstorm.report()["calls"]] == [(503, True), (200, False)]


@pytest.mark.parametrize("kind, status", [("unavailable", 503), ("overloaded", 503), ("timeout", 504)])
def test_openai_raises_internal_server_error(toolstorm, model_server, kind, status):
    toolstorm.rules([{"name": kind, "route": CHAT, "kind": kind}])
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="gpt-test", messages=HI)
    assert (raised.value.status_code, raised.value.type) == (status, "server_error")


def test_anthropic_raises_rate_limit_error_with_anthropic_ratelimit_headers(toolstorm, model_server):
    toolstorm.rules([{"name": "busy", "route": MESSAGES, "kind": "rate_limit", "delay": 3}])
    client = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-ant-test", max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as raised:
        client.messages.create(model="claude-test", max_tokens=16, messages=HI)
    error = raised.value
    assert error.body["type"] == "error" and error.body["error"]["type"] == "rate_limit_error"
    assert error.response.headers["retry-after"] == "3"
    assert error.response.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert error.response.headers["request-id"] == error.body["request_id"]


def test_anthropic_raises_overloaded_error_on_529_and_its_retry_waits_the_advertised_delay(toolstorm, model_server):
    toolstorm.rules([{"name": "busy", "route": MESSAGES, "kind": "overloaded", "delay": 0.4}])
    client = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-ant-test", max_retries=0)
    with pytest.raises(anthropic.OverloadedError) as raised:
        client.messages.create(model="claude-test", max_tokens=16, messages=HI)
    assert (raised.value.status_code, raised.value.body["error"]["type"]) == (529, "overloaded_error")

    toolstorm.rules([{"name": "busy", "route": MESSAGES, "kind": "overloaded", "calls": [1], "delay": 0.4}])
    toolstorm.reset()
    retrying = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-ant-test", max_retries=2)
    started = time.monotonic()
    message = retrying.messages.create(model="claude-test", max_tokens=16, messages=HI)
    assert message.content[0].text == "Hello, world!"
    assert time.monotonic() - started >= 0.4
    calls = toolstorm.report()["calls"]
    assert [(call["status"], call["injected"]) for call in calls] == [(529, True), (200, False)]
    toolstorm.contract().retry_after_respected().at_most_model_calls(2).assert_valid()


def test_anthropic_raises_internal_server_error_on_unavailable_with_503_as_on_any_route(toolstorm, model_server):
    toolstorm.rules([{"name": "down", "route": MESSAGES, "kind": "unavailable"}])
    client = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-ant-test", max_retries=0)
    with pytest.raises(anthropic.InternalServerError) as raised:
        client.messages.create(model="claude-test", max_tokens=16, messages=HI)
    assert (raised.value.status_code, raised.value.body["error"]["type"]) == (503, "api_error")
