"""The fake upstreams as pytest fixtures (a plugin: ``pytest_plugins = ["upstreams"]``), for these
tests and for the suites the pytester tests write; and a urllib agent run as a subprocess."""

import json
import subprocess
import sys

import pytest

from servers import ModelServer, ShippingServer

# A subprocess agent: POSTs two orders to SHIP_URL with urllib (which honours HTTP(S)_PROXY and
# SSL_CERT_FILE), printing the statuses it got.
URLLIB_AGENT = (
    "import json, os, urllib.request, urllib.error\n"
    "codes = []\n"
    "for order in ('a', 'b'):\n"
    "    req = urllib.request.Request(os.environ['SHIP_URL'], data=json.dumps({'order': order}).encode(), method='POST')\n"
    "    try:\n"
    "        codes.append(urllib.request.urlopen(req, timeout=10).status)\n"
    "    except urllib.error.HTTPError as error:\n"
    "        codes.append(error.code)\n"
    "print(json.dumps(codes))\n"
)


def run_urllib_agent(env, ship_url):
    """The statuses the subprocess agent got (its stderr in the assertion when it failed)."""
    done = subprocess.run([sys.executable, "-c", URLLIB_AGENT], env={**env, "SHIP_URL": ship_url}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def shipping_server():
    server = ShippingServer()
    yield server
    server.close()


@pytest.fixture
def idempotent_shipping_server():
    server = ShippingServer(idempotent=True)
    yield server
    server.close()


@pytest.fixture
def model_server():
    server = ModelServer()
    yield server
    server.close()
