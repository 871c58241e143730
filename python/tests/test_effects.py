"""The effects helper (toolstorm.effects, the same file as helpers/python/toolstorm_effects.py)
follows the sidecar: TOOLSTORM_SIDECAR as it is when a report is sent, or one set at any time."""

import filecmp
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import toolstorm.effects as effects

ROOT = Path(__file__).resolve().parents[2]


class Sidecar:
    """A stand-in sidecar that records the effects posted to it."""

    def __init__(self):
        self.received = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # head and body in two writes (docs/python.md)

            def do_POST(self):
                owner.received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                self.send_response(201)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sidecars():
    made = [Sidecar(), Sidecar(), Sidecar()]
    yield made
    for sidecar in made:
        sidecar.close()


def test_the_package_module_is_the_helper_file():
    assert filecmp.cmp(effects.__file__, ROOT / "helpers" / "python" / "toolstorm_effects.py", shallow=False)


def test_the_shared_helper_follows_toolstorm_sidecar_and_configure(sidecars, monkeypatch):
    a, b, c = sidecars
    monkeypatch.setenv("TOOLSTORM_SIDECAR", a.url)
    assert effects.report_effect({"x-toolstorm-call": "call-1"}, "shipment", "o-1") is True
    # A new session's proxy: a helper made earlier follows it (it kept the first URL forever before).
    monkeypatch.setenv("TOOLSTORM_SIDECAR", b.url)
    assert effects.report_effect({"x-toolstorm-call": "call-2"}, "shipment", "o-2") is True
    assert [r["call"] for r in b.received] == ["call-2"]
    effects.configure(sidecar_url=c.url)
    try:
        assert effects.report_effect({"x-toolstorm-call": "call-3"}, "shipment", "o-3") is True
    finally:
        effects.configure(None)
    assert [[r["call"] for r in sidecar.received] for sidecar in sidecars] == [["call-1"], ["call-2"], ["call-3"]]


def test_a_helper_made_with_a_sidecar_keeps_it_until_told_otherwise(sidecars, monkeypatch):
    a, b, _ = sidecars
    helper = effects.ToolstormEffects(sidecar_url=a.url)
    monkeypatch.setenv("TOOLSTORM_SIDECAR", b.url)
    assert helper.report({"x-toolstorm-call": "k1"}, "shipment", "o") is True
    helper.set_sidecar(None)
    assert helper.sidecar_url == b.url
    assert helper.report({"x-toolstorm-call": "k2"}, "shipment", "o") is True
    assert [r["call"] for r in a.received] == ["k1"] and [r["call"] for r in b.received] == ["k2"]


def test_a_request_with_no_call_id_is_skipped_without_a_sound_and_counted_as_untracked(sidecars, monkeypatch, recwarn):
    # Production traffic: nothing is sent and nothing warns. Under pytest a test during which one was
    # made fails (it went around toolstorm): test_effects_reach_the_proxy.py.
    monkeypatch.setenv("TOOLSTORM_SIDECAR", sidecars[0].url)
    before = effects.undelivered()
    helper = effects.ToolstormEffects()
    assert helper.report({}, "shipment", "x") is False
    assert helper.stats()["skipped"] == 1 and sidecars[0].received == [] and len(recwarn) == 0
    after = effects.undelivered()
    assert (after["untracked"] - before["untracked"], after["effects"] - before["effects"]) == (1, 0)
    assert after["last_untracked"] == "toolstorm: effect ('shipment', 'x') was reported for a request with no x-toolstorm-call header"
