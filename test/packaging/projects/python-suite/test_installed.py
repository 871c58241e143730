"""A user's first pytest test, with the CLI from the packed tarball (node_modules/.bin/toolstorm,
found by the package: no TOOLSTORM_BIN) and the Python package installed from a git URL."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from toolstorm import find_cli
from toolstorm.effects import report_effect


class Shipping(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # head and body in two writes: else ~40 ms per kept-alive request

    def do_POST(self):
        order = json.loads(self.rfile.read(int(self.headers["content-length"])))["order"]
        report_effect(self.headers, "shipment", order)  # the commit point, before answering
        self.send_response(201)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def shipping():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Shipping)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()
    server.server_close()


def test_the_cli_is_the_installed_tarball_s():
    assert find_cli()[-1] == str((Path.cwd() / "node_modules" / "toolstorm" / "bin" / "toolstorm.js").resolve())


def test_a_lost_acknowledgement_retried_commits_twice(toolstorm, shipping):
    toolstorm.rules([{"name": "lost-ack", "route": "POST /ship", "kind": "response_lost", "calls": [1]}])
    for _ in range(2):
        try:
            requests.post(toolstorm.url(shipping) + "/ship", json={"order": "o-1"}, timeout=10)
            break
        except requests.ConnectionError:
            pass
    with pytest.raises(AssertionError, match=r'shipment key "o-1" committed 2 times \(calls 1, 2\)'):
        toolstorm.contract().require_triggered().no_duplicate_effects().assert_valid()
