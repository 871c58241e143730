"""What real Python clients do on each fault, measured through the proxy (docs/streams.md and
docs/mcp.md carry these as the Python column): the openai and anthropic SDKs on stream faults, and
the MCP SDK client (Streamable HTTP) when a tools/call answer is lost."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
CHAT = "POST /v1/chat/completions"
MESSAGES = "POST /v1/messages"


def stream_chat(toolstorm, model_server, kind, **fields):
    toolstorm.rules([{"name": kind, "route": CHAT, "kind": kind, **fields}])
    client = openai.OpenAI(base_url=toolstorm.url(model_server.url + "/v1"), api_key="sk-test", max_retries=2, timeout=1.0)
    chunks = []
    stream = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True})
    try:
        for chunk in stream:
            chunks.append(chunk)
    finally:
        stream.close()
    return chunks


@pytest.mark.parametrize("kind, fields", [("stream_cut", {"after": 2}), ("truncate", {"after": 200})])
def test_openai_raises_api_connection_error_on_a_cut_stream_and_does_not_retry(toolstorm, model_server, kind, fields):
    with pytest.raises(openai.APIConnectionError) as error:
        stream_chat(toolstorm, model_server, kind, **fields)
    assert type(error.value.__cause__).__name__ == "RemoteProtocolError"
    assert model_server.hits() == 1
    assert [(call["outcome"], call["error"]) for call in toolstorm.report()["calls"]] == [("error", "STREAM_CUT")]


def test_openai_raises_api_timeout_error_when_a_stream_stalls_past_its_timeout(toolstorm, model_server):
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        stream_chat(toolstorm, model_server, "stream_stall", after=2)
    # The SDK's timeout covers each read of the body too (in Node it covers only the wait for the head).
    assert 0.9 < time.monotonic() - started < 10
    assert len(toolstorm.report()["calls"]) == 1


def test_openai_does_not_notice_a_missing_done(toolstorm, model_server):
    chunks = stream_chat(toolstorm, model_server, "drop_terminal")
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello, world!"
    assert chunks[-1].usage.total_tokens == 18  # every chunk, usage included: only [DONE] was dropped
    assert toolstorm.report()["calls"][0]["cut"]["events"] == 7


@pytest.mark.parametrize("kind, fields, error", [("stream_cut", {"after": 2}, httpx2.RemoteProtocolError), ("stream_stall", {"after": 2}, httpx2.ReadTimeout)])
def test_anthropic_lets_the_raw_transport_error_out_of_a_broken_stream(toolstorm, model_server, kind, fields, error):
    toolstorm.rules([{"name": kind, "route": MESSAGES, "kind": kind, **fields}])
    client = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-test", max_retries=2, timeout=1.0)
    with pytest.raises(error):
        with client.messages.stream(model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]) as stream:
            for _ in stream:
                pass
    assert not issubclass(error, anthropic.APIError)  # not wrapped as the SDK's own errors are
    assert len(toolstorm.report()["calls"]) == 1


def test_anthropic_does_not_notice_a_missing_message_stop(toolstorm, model_server):
    toolstorm.rules([{"name": "drop", "route": MESSAGES, "kind": "drop_terminal"}])
    client = anthropic.Anthropic(base_url=toolstorm.url(model_server.url), api_key="sk-test", max_retries=0, timeout=5.0)
    with client.messages.stream(model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Hello, world!" and final.stop_reason == "end_turn"
    events = [event.type for event in client.messages.create(model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}], stream=True)]
    assert events[-1] == "message_delta"  # the rule has no "calls": both calls lost their message_stop
    assert [call["cut"]["events"] for call in toolstorm.report()["calls"]] == [8, 8]


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def mcp_server(toolstorm_proxy):
    """The MCP SDK's own server (fixtures/python-mcp-server): create_shipment commits and reports each commit."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, str(ROOT / "fixtures" / "python-mcp-server" / "server.py"), str(port), toolstorm_proxy.sidecar_url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.kill()
    server.wait()


async def call_shipment(url, order):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("create_shipment", {"order_id": order})


async def test_mcp_a_lost_tool_answer_ends_the_client_session_and_a_retry_commits_again(toolstorm, mcp_server):
    toolstorm.rules([{"name": "lost", "route": "tools/call create_shipment", "kind": "response_lost", "calls": [1]}])
    url = toolstorm.url(mcp_server) + "/mcp"
    with pytest.raises(Exception) as ended:
        await call_shipment(url, "o-1")
    # Not an error of the call: the whole session ends, with an ExceptionGroup out of the transport's task group.
    assert type(ended.value).__name__ == "ExceptionGroup"
    assert [type(sub).__name__ for sub in ended.value.exceptions] == ["ReadError"]
    retried = await call_shipment(url, "o-1")  # a retry needs a new session
    assert retried.is_error is False
    tool_calls = [call for call in toolstorm.report()["calls"] if call["route"] == "tools/call create_shipment"]
    assert [(call["outcome"], call["executed"]) for call in tool_calls] == [("reset", True), ("response", True)]
    assert [effect["call"] for effect in toolstorm.report()["effects"]] == [call["id"] for call in tool_calls]
    with pytest.raises(AssertionError, match="No duplicate side effects: 1 duplicate effect"):
        toolstorm.contract().require_triggered().no_duplicate_effects().assert_valid()
