"""In-process clusters whose start or stop is cut short (cancelled, timed out, Ctrl-C): nothing of them is left
running, and the store folder can be started on again.

The broker's start is held where a real one waits longest: registering with a name server that accepts the
connection and never answers (a listening socket nobody reads), registerBrokerTimeoutMills (6 s) at most.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pocketmq import EmbeddedCluster, ThreadedCluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def silent_namesrv() -> Iterator[socket.socket]:
    """A "name server" that accepts connections and never answers."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as hole:
        yield hole


def address(hole: socket.socket) -> str:
    return f"127.0.0.1:{hole.getsockname()[1]}"


def cluster_threads(before: set[threading.Thread]) -> list[str]:
    """The threads started since ``before`` that belong to a cluster (the store's, the pull and gRPC threads)."""
    return sorted(t.name for t in threading.enumerate()
                  if t not in before and t.name.startswith(("pocketmq", "pull")))


def open_files_under(folder: Path) -> list[str]:
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # (closed meanwhile: the listing's own fd)
            pass
    return sorted(p for p in paths if p.startswith(str(folder)))


def mapped_files_under(folder: Path) -> list[str]:
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if str(folder) in line})


async def assert_nothing_left(folder: Path, before: set[threading.Thread]) -> None:
    assert cluster_threads(before) == []
    assert open_files_under(folder) == []  # the store's lock, checkpoint, timer wheel, ...
    assert mapped_files_under(folder) == []
    # The store's lock released: a cluster starts on the same folder.
    async with EmbeddedCluster(folder) as again:
        assert again.broker is not None and again.broker.is_running


async def test_a_cancelled_start_stops_the_broker_it_was_starting(tmp_path, silent_namesrv):
    # The broker was listed only once its start returned, and its start undid nothing after the port was bound:
    # cancelled while registering, its store threads went on, the store locked, its port open.
    before = set(threading.enumerate())
    silent_namesrv.setblocking(False)
    loop = asyncio.get_running_loop()
    start = asyncio.create_task(EmbeddedCluster(tmp_path, namesrv_addr=address(silent_namesrv)).start())
    conn, _ = await asyncio.wait_for(loop.sock_accept(silent_namesrv), 30)  # the broker registers now
    with conn:
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start
    await assert_nothing_left(tmp_path, before)


async def test_a_start_timed_out_in_wait_for_stops_everything(tmp_path, silent_namesrv):
    before = set(threading.enumerate())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(EmbeddedCluster(tmp_path, namesrv_addr=address(silent_namesrv)).start(), 1.0)
    await assert_nothing_left(tmp_path, before)


def listening_ports() -> set[int]:
    """The TCP ports this process listens on."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in list(f)[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # (0A: LISTEN)
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.005, 0.01, 0.02])
async def test_a_start_cancelled_while_the_grpc_endpoint_starts_stops_it(tmp_path, caplog, delay):
    # The endpoint's start ran on its own loop, which was stopped and closed under it: its gRPC server stayed
    # listening, or the cluster's store threads ran on, and "Event loop is closed" / "Task was destroyed but it is
    # pending!" followed. (Cancelled `delay` after the endpoint's thread started: somewhere in its start.)
    before, ports = set(threading.enumerate()), listening_ports()
    cluster = EmbeddedCluster(tmp_path, grpc=True)
    start = asyncio.create_task(cluster.start())
    while "pocketmq-grpc" not in cluster_threads(before):
        assert not start.done()
        await asyncio.sleep(0)
    await asyncio.sleep(delay)
    start.cancel()
    try:
        await start
    except asyncio.CancelledError:
        pass
    else:
        await cluster.stop()  # (the start was over already)
    await asyncio.sleep(0.2)  # (what a closed loop would still be handed comes now)
    assert listening_ports() - ports == set()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    await assert_nothing_left(tmp_path, before)


def test_a_threaded_start_past_its_timeout_stops_everything(tmp_path, silent_namesrv):
    before = set(threading.enumerate())
    cluster = ThreadedCluster(tmp_path, namesrv_addr=address(silent_namesrv))
    with pytest.raises(TimeoutError):
        cluster.start(timeout=1.0)
    assert cluster_threads(before) == []
    assert open_files_under(tmp_path) == []
    with ThreadedCluster(tmp_path) as again:
        assert again.cluster.broker is not None and again.cluster.broker.is_running


# Ctrl-C (SIGINT: KeyboardInterrupt in the main thread) while ThreadedCluster.start() or stop() waits, in a process
# of its own: the signal must not reach the test runner.
CTRL_C = textwrap.dedent("""
    import json, os, signal, socket, sys, threading, time
    from pocketmq import ThreadedCluster

    # Ctrl-C as a terminal delivers it: a runner started in the background by a shell (CI's) has SIGINT ignored,
    # which this process inherits, and Python then installs no KeyboardInterrupt for it.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    mode, folder = sys.argv[1], sys.argv[2]
    hole = socket.create_server(("127.0.0.1", 0), backlog=16)  # a name server that never answers
    namesrv = "127.0.0.1:%d" % hole.getsockname()[1]
    before = set(threading.enumerate())
    if mode == "start":
        cluster = ThreadedCluster(folder, namesrv_addr=namesrv)
        # Ctrl-C once the broker registers (start() waits for that); its connection kept open, unanswered.
        held = []
        threading.Thread(target=lambda: (held.append(hole.accept()), os.kill(os.getpid(), signal.SIGINT)),
                         daemon=True).start()
    else:
        # Registering fails after 1 s and the start goes on; unregistering in stop() then waits 2 s.
        cluster = ThreadedCluster(folder, namesrv_addr=namesrv, register_broker_timeout=1.0).start()
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        cluster.start() if mode == "start" else cluster.stop()
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    threads = sorted(t.name for t in threading.enumerate()
                     if t not in before and t.name.startswith(("pocketmq", "pull")))
    files = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            files.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    files = sorted(f for f in files if f.startswith(folder))
    try:
        ThreadedCluster(folder).start().stop()
        again = "started"
    except Exception as e:
        again = repr(e)
    print(json.dumps({"interrupted": interrupted, "threads": threads, "files": files, "again": again}))
""")


@pytest.mark.parametrize("mode", ["start", "stop"])
def test_ctrl_c_in_a_threaded_start_or_stop_leaves_nothing_running(tmp_path, mode):
    # The loop was stopped and closed under the start or stop still running on it: the store threads went on,
    # its lock stayed held ("StoreLockedError" for the next cluster), and "Event loop is closed" came after.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", CTRL_C, mode, str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcome = json.loads(proc.stdout.splitlines()[-1])
    assert outcome == {"interrupted": True, "threads": [], "files": [], "again": "started"}, proc.stderr
    for complaint in ("Event loop is closed", "Task was destroyed but it is pending", "Traceback"):
        assert complaint not in proc.stderr, proc.stderr
