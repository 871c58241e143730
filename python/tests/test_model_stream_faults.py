"""Event-aware stream faults and token quotas on model calls, seen by the Python SDKs (#26): what
``openai`` and ``anthropic`` raise, or silently hold, when a streamed tool call is cut inside its
arguments, when a delta arrives twice and when the usage is dropped (docs/streams.md's table of
client behaviour), and ``token_limit``'s ``RateLimitError`` whose advertised delay the SDK's own
retry waits, the retry counted in the report."""

import json
import time

import anthropic
import openai
import pytest

from toolstorm import Proxy

CHAT = "POST /v1/chat/completions"
MESSAGES = "POST /v1/messages"
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
OPENAI_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
ARGUMENTS = '{"city": "Paris"}'


def openai_client(toolstorm, model_server, **options):
    return openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=2, **options)


def anthropic_client(toolstorm, model_server):
    return anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-ant-test", max_retries=2)


def chat_arguments(client, pieces):
    """Stream a chat completion that calls the tool, keeping each argument delta as it arrives."""
    for chunk in client.chat.completions.create(model="gpt-test", messages=ASK, tools=OPENAI_TOOLS, stream=True, stream_options={"include_usage": True}):
        if chunk.choices and chunk.choices[0].delta.tool_calls:
            pieces.append(chunk.choices[0].delta.tool_calls[0].function.arguments or "")
        if chunk.usage is not None:
            pieces.append(chunk.usage)


def test_openai_cut_inside_tool_arguments_raises_api_connection_error_holding_half_the_json(toolstorm, model_server):
    toolstorm.rules([{"name": "cut", "route": CHAT, "kind": "stream_cut", "at": "tool_arguments", "after": 1}])
    pieces = []
    with pytest.raises(openai.APIConnectionError) as raised:
        chat_arguments(openai_client(toolstorm, model_server), pieces)
    # The SDK's vendored HTTP client's error (peer closed connection without sending complete message body).
    assert type(raised.value.__cause__).__name__ == "RemoteProtocolError"
    assert "".join(pieces) == '{"city"'
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(pieces))
    # Raised while iterating the body: the SDK's retries (max_retries=2) do not apply.
    calls = toolstorm.report()["calls"]
    assert [(call["status"], call["outcome"], call["error"], call["injected"]) for call in calls] == [(200, "error", "STREAM_CUT", True)]


def test_anthropic_cut_inside_tool_input_raises_the_raw_transport_error_not_an_api_error(toolstorm, model_server):
    toolstorm.rules([{"name": "cut", "route": MESSAGES, "kind": "stream_cut", "at": "tool_arguments", "after": 1}])
    pieces = []
    with pytest.raises(Exception) as raised:
        with anthropic_client(toolstorm, model_server).messages.stream(model="claude-test", max_tokens=64, messages=ASK, tools=ANTHROPIC_TOOLS) as stream:
            for event in stream:
                if event.type == "input_json":
                    pieces.append(event.partial_json)
    assert type(raised.value).__name__ == "RemoteProtocolError"
    assert not isinstance(raised.value, anthropic.APIError)
    assert pieces == ['{"city"']
    assert len(toolstorm.report()["calls"]) == 1


def test_openai_duplicated_argument_delta_goes_unnoticed_until_the_arguments_are_parsed(toolstorm, model_server):
    toolstorm.rules([{"name": "twice", "route": CHAT, "kind": "duplicate_event", "at": "tool_arguments", "after": 1}])
    pieces = []
    chat_arguments(openai_client(toolstorm, model_server), pieces)
    usage = pieces.pop()
    assert usage.total_tokens == 18
    assert "".join(pieces) == '{"city": "Pa: "Paris"}'
    with pytest.raises(json.JSONDecodeError):
        json.loads("".join(pieces))


def test_anthropic_stream_helper_silently_builds_a_wrong_tool_input_from_a_duplicated_delta(toolstorm, model_server):
    toolstorm.rules([{"name": "twice", "route": MESSAGES, "kind": "duplicate_event", "at": "tool_arguments", "after": 1}])
    with anthropic_client(toolstorm, model_server).messages.stream(model="claude-test", max_tokens=64, messages=ASK, tools=ANTHROPIC_TOOLS) as stream:
        message = stream.get_final_message()
    # The helper's partial-JSON parser stops at the doubled piece: no error, a wrong argument.
    assert message.stop_reason == "tool_use"
    assert message.content[0].input == {"city": "Pa: "}


def test_drop_usage_openai_sees_no_usage_while_the_report_keeps_the_upstream_tokens(toolstorm, model_server):
    toolstorm.rules([{"name": "nousage", "route": CHAT, "kind": "drop_usage"}])
    pieces = []
    chat_arguments(openai_client(toolstorm, model_server), pieces)
    assert "".join(pieces) == ARGUMENTS
    [call] = toolstorm.report()["calls"]
    assert (call["injected"], call["model"]["inputTokens"], call["model"]["outputTokens"]) == (True, 11, 7)


def test_drop_usage_anthropic_stream_helper_fails_with_attribute_error_and_create_gets_none(toolstorm, model_server):
    toolstorm.rules([{"name": "nousage", "route": MESSAGES, "kind": "drop_usage"}])
    client = anthropic_client(toolstorm, model_server)
    # The helper reads message_delta's usage unconditionally: a plain AttributeError, not an APIError.
    with pytest.raises(AttributeError, match="output_tokens"):
        with client.messages.stream(model="claude-test", max_tokens=64, messages=ASK, tools=ANTHROPIC_TOOLS) as stream:
            stream.get_final_message()
    usages = [event.usage for event in client.messages.create(model="claude-test", max_tokens=64, messages=ASK, tools=ANTHROPIC_TOOLS, stream=True) if event.type == "message_delta"]
    assert usages == [None]


def test_token_limit_raises_rate_limit_error_and_the_sdk_retry_waits_the_reset(model_server):
    """A virtual clock keeps the minute window short: the proxy's clock is moved to 0.5 s before the
    window turns, and on by the advertised delay while the SDK waits it (the run's time passes)."""
    rules = [{"name": "quota", "route": CHAT, "kind": "token_limit", "tokensPerMinute": 10}]
    with Proxy(target=model_server.url, rules=rules, args=["--clock", "virtual"]) as proxy:

        def advance(seconds):
            proxy.admin.request("POST", "/clock/advance", body={"seconds": seconds})

        strict = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        strict.chat.completions.create(model="gpt-test", messages=ASK)
        with pytest.raises(openai.RateLimitError) as raised:
            strict.chat.completions.create(model="gpt-test", messages=ASK)
        assert (raised.value.type, raised.value.response.headers["x-ratelimit-remaining-tokens"]) == ("tokens", "0")
        assert float(raised.value.response.headers["retry-after-ms"]) > 59_000
        # A new run for the retry: the SDK above did not retry (max_retries=0), which the contract would count.
        proxy.reset()
        strict.chat.completions.create(model="gpt-test", messages=ASK)

        waits = []

        def on_response(response):
            if response.status_code == 429:
                waits.append(float(response.headers["retry-after-ms"]) / 1000)
                advance(waits[-1])

        advance(59.5 - proxy.report()["calls"][-1]["started"])
        retrying = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=2, http_client=openai.DefaultHttpxClient(event_hooks={"response": [on_response]}))
        started = time.monotonic()
        answer = retrying.chat.completions.create(model="gpt-test", messages=ASK)
        assert answer.choices[0].message.content.startswith("Hello, world!")
        assert waits == [pytest.approx(0.5, abs=0.01)]
        assert time.monotonic() - started >= waits[0]
        calls = proxy.report()["calls"]
        assert [(call["status"], call["injected"]) for call in calls] == [(200, False), (429, True), (200, False)]
        assert calls[1]["retryAfter"] == pytest.approx(0.5, abs=0.01)
        proxy.contract().retry_after_respected().assert_valid()
