"""HTTPS through the proxy: a subprocess agent given ``run.env`` (HTTPS_PROXY with the run in its
credentials, the CA bundle variables) reaches an HTTPS upstream through CONNECT, intercepted with
the CA the CLI announced; an in-process client does the same with ``verify=run.ca_path``; and a
base URL (``run.url("https://…")``) needs no trust at all (the proxy makes the HTTPS call)."""

import os
import ssl
import subprocess

import pytest
import requests

from servers import ShippingServer
from toolstorm import Proxy
from upstreams import run_urllib_agent

DOWN_FIRST = {"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}


@pytest.fixture
def https_upstream(tmp_path):
    """The shipping server over TLS, with a certificate for 127.0.0.1 signed by nobody the proxy knows."""
    cert, key = tmp_path / "upstream.pem", tmp_path / "upstream-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    server = ShippingServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server._httpd.socket = context.wrap_socket(server._httpd.socket, server_side=True)
    server.url = f"https://127.0.0.1:{server.port}"
    server.cert = str(cert)
    yield server
    server.close()


@pytest.fixture
def https_proxy(https_upstream):
    with Proxy(args=["--upstream-ca", https_upstream.cert, "--connect-port", str(https_upstream.port)]) as proxy:
        yield proxy


def test_a_subprocess_agent_with_the_run_s_environment_over_https(https_proxy, https_upstream, monkeypatch):
    run = https_proxy.run()
    run.rules([DOWN_FIRST])
    monkeypatch.setenv("TOOLSTORM_SIDECAR", run.sidecar_url)
    assert run.env["SSL_CERT_FILE"] == https_proxy.ca_path and os.path.isfile(https_proxy.ca_path)
    assert run_urllib_agent({**os.environ, **run.env}, f"{https_upstream.url}/ship") == [503, 201]
    report = run.report()
    assert [(call["url"], call["status"]) for call in report["calls"]] == [(f"{https_upstream.url}/ship", 503), (f"{https_upstream.url}/ship", 201)]
    assert [effect["key"] for effect in report["effects"]] == ["b"]


def test_an_in_process_client_trusts_the_run_s_ca_and_a_base_url_needs_none(https_proxy, https_upstream, monkeypatch):
    run = https_proxy.run()
    monkeypatch.setenv("TOOLSTORM_SIDECAR", run.sidecar_url)
    run.rules([DOWN_FIRST])
    proxied = requests.post(f"{https_upstream.url}/ship", json={"order": "a"}, proxies={"https": run.proxy_url}, verify=run.ca_path, timeout=10)
    based = requests.post(f"{run.url(https_upstream.url)}/ship", json={"order": "b"}, timeout=10)
    assert (proxied.status_code, based.status_code) == (503, 201)
    assert len(run.report()["calls"]) == 2
