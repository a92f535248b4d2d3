"""`pocketmq dev` serves the console (URL printed at start, --no-console turns it off) and `pocketmq console -n`
serves it for any cluster, read-only unless --admin: separate processes, as a developer runs them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")


CLI = [sys.executable, "-m", "pocketmq"]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    return out


def test_dev_serves_the_console_and_prints_its_url(tmp_path):
    proc = start("dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
                 "--console-port", "0", "--no-grpc")  # (the console's line comes second, and no test binds 8081)
    try:
        first, second = proc.stdout.readline(), proc.stdout.readline()
        assert first.startswith("pocketmq dev: name server"), first
        match = re.search(r"console: (http://127\.0\.0\.1:\d+/)", second)
        assert match, second
        url = match.group(1)
        status, html = get(url)
        assert status == 200 and "pocketmq console" in html
        status, info = get(url + "api/info")
        assert json.loads(info)["admin"] is True and json.loads(info)["storage"] == ["broker-a"]
        status, metrics = get(url + "metrics")
        assert status == 200 and "rocketmq_storage_dispatch_behind_bytes" in metrics
    finally:
        stop(proc)


def test_dev_without_console(tmp_path):
    proc = start("dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
                 "--no-console", "--no-grpc")
    proc.stdout.readline()
    out = stop(proc)
    assert "console:" not in out


def test_console_for_a_running_cluster_is_read_only_unless_admin(pocketmq_cluster, tmp_path):
    proc = start("console", "-n", pocketmq_cluster.namesrv_addr, "--port", "0")
    try:
        line = proc.stdout.readline()
        match = re.search(r"pocketmq console: (http://\S+/) \(read-only", line)
        assert match, line
        url = match.group(1)
        assert json.loads(get(url + "api/info")[1]) == {"namesrv": pocketmq_cluster.namesrv_addr, "admin": False,
                                                        "storage": []}
        status, body = post(url + "api/topic", {"topic": "FromCli"})
        assert status == 403 and "read-only" in body["error"]
        status, body = get(url + "api/storage/files")
        assert status == 404  # no --store: no storage page
        status, cluster = get(url + "api/cluster")
        assert status == 200 and pocketmq_cluster.broker_addr in cluster
    finally:
        stop(proc)

    store = pocketmq_cluster.store.root
    proc = start("console", "-n", pocketmq_cluster.namesrv_addr, "--port", "0", "--admin", "--store", store)
    try:
        url = re.search(r"(http://\S+/) \(admin", proc.stdout.readline()).group(1)
        status, body = post(url + "api/topic", {"topic": "FromCli", "queues": 2})
        assert status == 200 and body["created"] == "FromCli"
        status, files = get(url + "api/storage/files")
        assert status == 200 and json.loads(files)["store"] == store
    finally:
        stop(proc)


def test_console_store_is_a_store_or_the_folder_of_pocketmq_dev_s(tmp_path):
    # A typo was accepted and showed an empty store; `pocketmq dev --store F`'s folder F showed none of F/store.
    typo = tmp_path / "no-such-store"
    proc = subprocess.run([*CLI, "console", "-n", "127.0.0.1:1", "--port", "0", "--store", str(typo)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"pocketmq console: ValueError: --store {typo} is not a RocketMQ store: it holds none of "
                           "commitlog/, consumequeue/, index/ and checkpoint\n")

    dev = tmp_path / "dev"
    subprocess.run([sys.executable, "-m", "pocketmq.storage", "demo", str(dev / "store"), "--small", "--messages", "3"],
                   check=True, capture_output=True, timeout=60)
    proc = start("console", "-n", "127.0.0.1:1", "--port", "0", "--store", str(dev))  # (no cluster: files only)
    try:
        line = proc.stdout.readline()
        assert line == f"pocketmq console: reading {dev / 'store'}, the store of `pocketmq dev --store {dev}`\n", line
        url = re.search(r"(http://\S+/) \(read-only", proc.stdout.readline()).group(1)
        status, files = get(url + "api/storage/files")
        view = json.loads(files)
        assert status == 200 and view["store"] == str(dev / "store") and view["files"]
    finally:
        stop(proc)


def test_a_console_on_every_interface_prints_a_url_it_answers(tmp_path):
    # It printed http://0.0.0.0:PORT/, which its own Host check refuses (403).
    proc = start("console", "-n", "127.0.0.1:1", "--port", "0", "--host", "0.0.0.0")
    try:
        first = proc.stdout.readline()
        match = re.search(r"pocketmq console: (http://127\.0\.0\.1:\d+/) \(read-only", first)
        assert match, first
        assert get(match.group(1))[0] == 200
        second = proc.stdout.readline()
        assert "from another machine, open it by a name or address given with --allow-host NAME" in second
    finally:
        stop(proc)
    proc = start("dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
                 "--console-port", "0", "--console-host", "0.0.0.0", "--no-grpc")
    try:
        proc.stdout.readline()
        line = proc.stdout.readline()
        match = re.search(r"console: (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        assert get(match.group(1))[0] == 200
        assert "given with --console-allow-host NAME" in proc.stdout.readline()
    finally:
        stop(proc)
