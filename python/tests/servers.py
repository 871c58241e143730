"""Fake upstreams for the tests, on 127.0.0.1, in threads of the test process (standard library only):

- ``ShippingServer``: ``POST /ship`` commits a shipment and reports it with the effects helper
  (``toolstorm.effects.report_effect``) at the commit point, as a real tool server would; with
  ``idempotent=True`` a repeated ``idempotency_key`` returns the first shipment instead.
- ``ModelServer``: the OpenAI chat completions and Anthropic messages wire formats, streamed (SSE,
  with usage) or not, shaped like the providers' (ported from test/helpers/model-upstream.ts); a
  request offering tools, with no tool result yet, gets a streamed call of ``get_weather`` whose
  arguments arrive in the pieces of ``TOOL_ARGUMENTS``.

Both count what they received, so a test can prove what reached them (or, replayed, that nothing did).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from toolstorm.effects import report_effect

WORDS = ["Hello", ", ", "world", "!"]
CHAT_USAGE = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
MESSAGES_USAGE = {"input_tokens": 21, "output_tokens": 9}
TOOL_NAME = "get_weather"
TOOL_ARGUMENTS = ['{"city"', ': "Pa', 'ris"}']


class _Server:
    def __init__(self, handler: type) -> None:
        self.requests: List[Dict[str, Any]] = []
        owner = self

        class Handler(handler):  # type: ignore[misc, valid-type]
            server_owner = owner

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def hits(self, path: Optional[str] = None) -> int:
        return sum(1 for request in self.requests if path is None or request["path"] == path)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body go out in two writes: with Nagle on, a kept-alive connection waits ~40 ms for the
    # client's delayed ACK before the body leaves (docs/python.md#stdlib-httpserver-tool-servers).
    disable_nagle_algorithm = True
    server_owner: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self.server_owner.requests.append({"method": self.command, "path": self.path.split("?")[0], "headers": dict(self.headers), "body": body})
        return body

    def _json(self, status: int, value: Any, headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, text in (headers or {}).items():
            self.send_header(name, text)
        self.end_headers()
        self.wfile.write(data)


class ShippingServer(_Server):
    def __init__(self, idempotent: bool = False) -> None:
        self.idempotent = idempotent
        self.shipments: List[str] = []
        self.receipts: Dict[str, Dict[str, Any]] = {}
        super().__init__(_ShippingHandler)


class _ShippingHandler(_Handler):
    server_owner: ShippingServer

    def do_POST(self) -> None:
        body = self._body()
        server = self.server_owner
        key = body.get("idempotency_key")
        if server.idempotent and key in server.receipts:
            return self._json(200, server.receipts[key])
        server.shipments.append(body.get("order"))
        report_effect(self.headers, "shipment", body.get("order"))  # the commit point, before answering
        receipt = {"shipment": len(server.shipments), "order": body.get("order")}
        if key is not None:
            server.receipts[key] = receipt
        self._json(201, receipt)

    def do_GET(self) -> None:
        self._body()
        self._json(200, {"shipments": self.server_owner.shipments})


class ModelServer(_Server):
    def __init__(self, gap: float = 0.01) -> None:
        self.gap = gap
        super().__init__(_ModelHandler)


class _ModelHandler(_Handler):
    server_owner: ModelServer

    def do_POST(self) -> None:
        body = self._body()
        model = f"{body.get('model', 'unknown')}-2025-01-01"
        path = self.path.split("?")[0]
        tool = _wants_tool_call(body) and bool(body.get("stream"))
        if path.endswith("/chat/completions"):
            if tool:
                return self._stream(_chat_tool_events(model, body))
            return self._stream(_chat_events(model, body)) if body.get("stream") else self._json(200, _chat_completion(model, body))
        if path.endswith("/messages"):
            if tool:
                return self._stream(_message_tool_events(model))
            return self._stream(_message_events(model)) if body.get("stream") else self._json(200, _message(model))
        self._json(404, {"error": {"message": f"no route {path}"}})

    def _stream(self, events: List[Tuple[Optional[str], Any]]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for index, (event, data) in enumerate(events):
                if index:
                    time.sleep(self.server_owner.gap)
                text = data if isinstance(data, str) else json.dumps(data)
                chunk = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
                raw = chunk.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


def _reply(body: Dict[str, Any]) -> str:
    """The answer names the last user message, so two conversations differ."""
    messages = body.get("messages") or [{}]
    last = messages[-1].get("content", "")
    return "".join(WORDS) + (f" You said: {last}" if isinstance(last, str) and last else "")


def _chat_completion(model: str, body: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": _reply(body)}, "finish_reason": "stop"}],
        "usage": CHAT_USAGE,
    }


def _chat_events(model: str, body: Dict[str, Any]) -> List[Tuple[Optional[str], Any]]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": model, "system_fingerprint": "fp_1"}
    events: List[Tuple[Optional[str], Any]] = [(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}], "usage": None})]
    for word in WORDS:
        events.append((None, {**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}], "usage": None}))
    events.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None}))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {**base, "choices": [], "usage": CHAT_USAGE}))
    events.append((None, "[DONE]"))
    return events


def _wants_tool_call(body: Dict[str, Any]) -> bool:
    """Tools are offered and the conversation holds no tool result yet."""
    if not body.get("tools"):
        return False
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "tool" or (isinstance(content, list) and any(part.get("type") == "tool_result" for part in content)):
            return False
    return True


def _chat_tool_events(model: str, body: Dict[str, Any]) -> List[Tuple[Optional[str], Any]]:
    base = {"id": "chatcmpl-2", "object": "chat.completion.chunk", "created": 1700000000, "model": model, "system_fingerprint": "fp_1"}

    def chunk(delta: Dict[str, Any], finish: Optional[str] = None) -> Tuple[Optional[str], Any]:
        return (None, {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], "usage": None})

    events = [chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": TOOL_NAME, "arguments": ""}}], "refusal": None})]
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in TOOL_ARGUMENTS]
    events.append(chunk({}, "tool_calls"))
    if (body.get("stream_options") or {}).get("include_usage"):
        events.append((None, {**base, "choices": [], "usage": CHAT_USAGE}))
    events.append((None, "[DONE]"))
    return events


def _message_tool_events(model: str) -> List[Tuple[Optional[str], Any]]:
    start = {"id": "msg_2", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 21, "output_tokens": 1}}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {}}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}) for piece in TOOL_ARGUMENTS],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]


def _message(model: str) -> Dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [{"type": "text", "text": "".join(WORDS)}], "stop_reason": "end_turn", "stop_sequence": None, "usage": MESSAGES_USAGE}


def _message_events(model: str) -> List[Tuple[Optional[str], Any]]:
    start = {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 21, "output_tokens": 1}}
    return [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": word}}) for word in WORDS],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]
