"""What the pytest plugin costs: the per-test overhead of the ``toolstorm`` fixture with no faults,
and the proxy's start per worker (docs/benchmarks.md#python-fixture).

    node_modules/.cache/toolstorm-py/bin/python python/bench/overhead.py [--tests 60] [--starts 7] [--json FILE]

1. One pytest session runs the same test body three ways, interleaved (plain, fixture,
   fixture+rules, plain, …) so that load from elsewhere falls on all of them alike: a GET and a
   POST to a local server directly (``plain``); the same through ``toolstorm.url(server)``
   (``fixture``); and the same after ``toolstorm.rules([...])`` (``fixture+rules``: one more admin
   call before; the rule never fires and is not required to). A test's time is its setup + call +
   teardown. The first test of each kind is left out (imports; the first fixture test waits for
   the proxy, reported apart).
2. ``toolstorm.Proxy().start()`` (forward mode, what each worker starts), ``--starts`` times.

Both are reported as wall time (what this machine gave, load included) and as **CPU time**: the
test process's (``time.process_time``, its threads and the fake server included) plus the node
proxy's (``/proc/<pid>/stat``, Linux). The machines this runs on are shared, and the load from
elsewhere stretches wall times several times over; the CPU a test costs does not change with it,
and on an idle machine a test's wall time is about that CPU (the client, the proxy and the server
take turns). Overhead = the mean per test of a kind − the plain test's.

Gates (issue #24): overhead ≤ 50 ms median; proxy start ≤ 1.5 s per worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TICKS = os.sysconf("SC_CLK_TCK")

TESTS = '''
import http.server, threading
import pytest, requests

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else ~40 ms per kept-alive request (docs/python.md)
    def _answer(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        data = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = _answer
    def log_message(self, *args):
        pass

@pytest.fixture(scope="session")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()

def body(base):
    with requests.Session() as session:
        assert session.get(f"{base}/items/1", timeout=10).json() == {"ok": True}
        assert session.post(f"{base}/ship", json={"order": "o-1"}, timeout=10).status_code == 200

@pytest.mark.parametrize("i", range(N))
def test_plain(server, i):
    body(server)

@pytest.mark.parametrize("i", range(N))
def test_fixture(server, toolstorm, i):
    body(toolstorm.url(server))

@pytest.mark.parametrize("i", range(N))
def test_fixture_rules(server, toolstorm, i):
    toolstorm.rules([{"name": "never", "route": "GET /elsewhere", "kind": "timeout"}], require_triggered=False)
    body(toolstorm.url(server))
'''

# Interleaves the kinds, and records each test's wall and CPU time (this process and the proxy's).
CONFTEST = '''
import json, os, time
import pytest
from toolstorm.plugin import EARLY

TICKS = os.sysconf("SC_CLK_TCK")

def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: (item.callspec.params["i"], item.originalname))

last = [0.0]

def node_cpu_ms(config):
    early = config.stash.get(EARLY, None)
    if early is None or early.proxy._process is None:
        return last[0]
    try:
        with open(f"/proc/{early.proxy.info['pid']}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:  # the session's end stopped it
        return last[0]
    last[0] = (int(fields[11]) + int(fields[12])) * 1000 / TICKS
    return last[0]

@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    wall, cpu, node = time.perf_counter(), time.process_time(), node_cpu_ms(item.config)
    result = yield
    with open(os.environ["BENCH_OUT"], "a") as out:
        out.write(json.dumps({"name": item.name, "wall": (time.perf_counter() - wall) * 1000, "cpu": (time.process_time() - cpu) * 1000, "node": node_cpu_ms(item.config) - node}) + "\\n")
    return result
'''


def per_test_overhead(count: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="toolstorm-bench-") as folder:
        tests = Path(folder) / "test_overhead.py"
        tests.write_text(TESTS.replace("range(N)", f"range({count + 1})"))
        (Path(folder) / "conftest.py").write_text(CONFTEST)
        out = Path(folder) / "times.jsonl"
        env = {**os.environ, "BENCH_OUT": str(out), "TOOLSTORM_BIN": os.environ.get("TOOLSTORM_BIN", str(ROOT / "bin" / "toolstorm.js"))}
        subprocess.run([sys.executable, "-m", "pytest", str(tests), "-q", "-p", "no:cacheprovider", "-p", "no:asyncio"], cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)
        rows = [json.loads(line) for line in out.read_text().splitlines()]
    kinds: dict = {"plain": [], "fixture": [], "fixture+rules": []}
    first = None
    for row in rows:
        name = row["name"]
        kind = "fixture+rules" if name.startswith("test_fixture_rules") else "fixture" if name.startswith("test_fixture") else "plain"
        if name.endswith("[0]"):
            if name == "test_fixture[0]":
                first = row
            continue
        kinds[kind].append(row)
    wall = {kind: statistics.median(r["wall"] for r in values) for kind, values in kinds.items()}
    cpu = {kind: statistics.fmean(r["cpu"] + r["node"] for r in values) for kind, values in kinds.items()}
    return {
        "tests per kind": count,
        "wall ms, median": {kind: round(value, 1) for kind, value in wall.items()},
        "wall overhead ms, median": {kind: round(wall[kind] - wall["plain"], 1) for kind in wall if kind != "plain"},
        "CPU ms per test (test process + proxy), mean": {kind: round(value, 1) for kind, value in cpu.items()},
        "CPU overhead ms per test, mean": {kind: round(cpu[kind] - cpu["plain"], 1) for kind in cpu if kind != "plain"},
        "first toolstorm test, wall ms (waits for the proxy started at collection)": round(first["wall"]) if first else None,
    }


def proxy_start(starts: int) -> dict:
    sys.path.insert(0, str(ROOT / "python" / "src"))
    from toolstorm import Proxy

    os.environ.setdefault("TOOLSTORM_BIN", str(ROOT / "bin" / "toolstorm.js"))
    walls, cpus = [], []
    for _ in range(starts):
        started = time.perf_counter()
        proxy = Proxy().start()
        walls.append((time.perf_counter() - started) * 1000)
        with open(f"/proc/{proxy.info['pid']}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        cpus.append((int(fields[11]) + int(fields[12])) * 1000 / TICKS)
        proxy.close()
    return {"starts": starts, "wall ms to the ready line, median": round(statistics.median(walls)), "wall ms, min": round(min(walls)), "node CPU ms to the ready line, median": round(statistics.median(cpus))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=60, help="tests of each kind")
    parser.add_argument("--starts", type=int, default=7, help="proxy starts")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    results = {
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "python": sys.version.split()[0],
        "node": subprocess.run(["node", "-v"], capture_output=True, text=True).stdout.strip(),
        "load average (1 min) before": round(os.getloadavg()[0], 2),
        "proxy start": proxy_start(args.starts),
        "per-test": per_test_overhead(args.tests),
    }
    text = json.dumps(results, indent=2)
    print(text)
    overhead = max(results["per-test"]["CPU overhead ms per test, mean"].values())
    start = results["proxy start"]["node CPU ms to the ready line, median"]
    print(f"gates on CPU time: per-test overhead {overhead:.1f} ms ≤ 50 ms: {'pass' if overhead <= 50 else 'FAIL'}; proxy start {start} ms ≤ 1500 ms: {'pass' if start <= 1500 else 'FAIL'}")
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
