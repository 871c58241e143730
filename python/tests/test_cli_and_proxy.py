"""Finding the CLI (TOOLSTORM_BIN, node_modules/.bin in a parent, PATH), starting it, and
``toolstorm.Proxy`` as a context manager in reverse mode."""

import os
import stat
import sys
from pathlib import Path

import pytest
import requests

import toolstorm
from toolstorm import CliNotFoundError, Proxy, ProxyStartError, find_cli

REPO_BIN = Path(os.environ["TOOLSTORM_BIN"]).resolve()


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_toolstorm_bin_comes_first_and_a_javascript_entry_runs_under_node_directly(tmp_path, monkeypatch):
    entry = _script(tmp_path / "pkg" / "cli.js", "#!/usr/bin/env node\n")
    monkeypatch.setenv("TOOLSTORM_BIN", str(entry))
    command = find_cli(cwd=tmp_path)
    assert Path(command[0]).name.startswith("node") and command[1:] == [str(entry.resolve())]


def test_node_modules_bin_in_a_parent_folder_is_found_through_its_symlink(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLSTORM_BIN")
    script = _script(tmp_path / "node_modules" / "toolstorm" / "bin" / "toolstorm.js", "#!/usr/bin/env node\n")
    shim = tmp_path / "node_modules" / ".bin" / "toolstorm"
    shim.parent.mkdir(parents=True)
    shim.symlink_to(os.path.relpath(script, shim.parent))
    nested = tmp_path / "services" / "agent" / "tests"
    nested.mkdir(parents=True)
    assert find_cli(cwd=nested)[1:] == [str(script.resolve())]


def test_a_shell_shim_that_is_not_a_link_runs_the_package_script_not_the_shim(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLSTORM_BIN")
    script = _script(tmp_path / "node_modules" / "toolstorm" / "bin" / "toolstorm.js", "// the CLI\n")
    _script(tmp_path / "node_modules" / ".bin" / "toolstorm", "#!/bin/sh\nexec npx toolstorm \"$@\"\n")
    assert find_cli(cwd=tmp_path)[1:] == [str(script.resolve())]


def test_toolstorm_on_path_comes_last(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLSTORM_BIN")
    on_path = _script(tmp_path / "bin" / "toolstorm", "#!/usr/bin/env node\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert find_cli(cwd=tmp_path / "bin")[1:] == [str(on_path.resolve())]


def test_no_cli_anywhere_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLSTORM_BIN")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CliNotFoundError) as error:
        find_cli(cwd=tmp_path)
    assert "not on the npm registry yet" in str(error.value) and "TOOLSTORM_BIN" in str(error.value)
    assert "\n    (cd ../toolstorm && npm ci && npm pack)\n    npm i -D ../toolstorm/toolstorm-*.tgz\n" in str(error.value)
    monkeypatch.setenv("TOOLSTORM_BIN", str(tmp_path / "missing.js"))
    with pytest.raises(CliNotFoundError, match="TOOLSTORM_BIN is .*missing.js.*which is not a file"):
        find_cli(cwd=tmp_path)


def test_a_cli_that_exits_before_it_is_ready_fails_with_its_output(tmp_path):
    broken = _script(tmp_path / "broken", f"#!{sys.executable}\nimport sys\nprint('cannot listen: port in use', file=sys.stderr)\nsys.exit(2)\n")
    with pytest.raises(ProxyStartError, match=r"(?s)exited with code 2.*cannot listen: port in use"):
        Proxy(cli=[str(broken)]).start()


def test_bad_rules_are_refused_naming_the_field_and_the_process_is_stopped():
    proxy = Proxy(rules=[{"name": "x", "route": "GET /a", "kind": "nope"}])
    with pytest.raises(toolstorm.AdminError, match=r"\$\.rules\[0\]\.kind") as error:
        proxy.start()
    assert error.value.code == "ERR_CONFIG_INVALID" and error.value.status == 400
    assert not proxy.running


def test_a_proxy_in_reverse_mode_as_a_context_manager(shipping_server, monkeypatch):
    with Proxy(shipping_server.url, rules=[{"name": "down", "route": "POST /ship", "kind": "unavailable", "calls": [1]}], seed=3) as proxy:
        monkeypatch.setenv("TOOLSTORM_SIDECAR", proxy.sidecar_url)  # where the shipping server's helper reports
        assert proxy.mode == "reverse" and proxy.ca_path is None
        statuses = [requests.post(f"{proxy.url}/ship", json={"order": "a"}, timeout=10).status_code for _ in range(2)]
        assert statuses == [503, 201]
        report = proxy.report()
        assert report["seed"] == 3 and report["coverage"]["down"]["triggered"] == 1
        assert [(effect["key"], effect["call"]) for effect in report["effects"]] == [("a", 2)]
        proxy.contract().require_triggered().at_most_calls(2).assert_valid()
        run = proxy.run("agent-7")
        assert run.url() == f"{proxy.url}/_run/agent-7"
        assert requests.post(f"{run.url()}/ship", json={"order": "b"}, timeout=10).status_code == 503
        assert proxy.set_rules([{"name": "typo", "route": "POST /shp", "kind": "reset"}])["warnings"] == []
        proxy.reset()
        assert proxy.report()["calls"] == []
        assert proxy.env["TOOLSTORM_PROXY_URL"] == proxy.url and "HTTP_PROXY" not in proxy.env
    assert proxy.exit_code == 0 and not proxy.running


def test_a_run_s_url_for_a_forward_mode_proxy(toolstorm_proxy):
    run = toolstorm_proxy.run("r1")
    assert run.url("http://127.0.0.1:4000/v1/") == f"{toolstorm_proxy.url}/_run/r1/http/127.0.0.1:4000/v1"
    assert run.url("https://api.example.com") == f"{toolstorm_proxy.url}/_run/r1/https/api.example.com"
    assert run.proxy_url == toolstorm_proxy.url.replace("http://", "http://r1:toolstorm@")
    assert run.env["HTTPS_PROXY"] == run.proxy_url and run.env["NO_PROXY"] == ""
    assert run.env["SSL_CERT_FILE"] == run.env["REQUESTS_CA_BUNDLE"] == toolstorm_proxy.ca_path
    with pytest.raises(ValueError, match="name the upstream"):
        run.url()
    with pytest.raises(ValueError, match="not a run id"):
        toolstorm_proxy.run("has space")


def test_normalisers_and_live_routes_are_checked_before_a_process_starts(tmp_path):
    with pytest.raises(ValueError, match=r"normalize: expected ids, timestamps, uuids \(comma-separated\) or none alone, got 'ids,idz'"):
        Proxy(replay=tmp_path / "c.jsonl", normalize="ids,idz")
    with pytest.raises(ValueError, match="or none alone, got 'none,ids'"):
        Proxy(replay=tmp_path / "c.jsonl", normalize=["none", "ids"])
    with pytest.raises(ValueError, match="live routes are for a replay"):
        Proxy(record=tmp_path / "c.jsonl", live=["POST /ship"])
    replay = Proxy(replay=tmp_path / "c.jsonl", normalize=["ids", "uuids"], live="POST /ship", replay_only=["POST /v1/*"])
    assert replay._args[:10] == ["replay", str(tmp_path / "c.jsonl"), "--mode", "replay", "--normalize", "ids,uuids", "--live", "POST /ship", "--replay-only", "POST /v1/*"]
