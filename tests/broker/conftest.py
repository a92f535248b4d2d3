"""Fixtures of the broker tests; the harness they build on (real brokers and name servers, ``MQ``) is
broker_harness.py."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import resource
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import (  # noqa: F401 (re-exported)
    FLAG_COMMIT_OFFSET,
    FLAG_SUBSCRIPTION,
    FLAG_SUSPEND,
    GUARD,
    MQ,
    Cluster,
    pull_all,
    small_config,
)

from pocketmq.broker import BrokerController
from pocketmq.remoting.client import RemotingClient
from tests.loops import pytest_asyncio_loop_factories, pytest_configure  # noqa: F401 (the both_loops hooks)


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
async def broker(cluster: Cluster) -> BrokerController:
    """A broker without name servers."""
    return await cluster.broker()


@pytest.fixture
def mq(cluster: Cluster, broker: BrokerController) -> MQ:
    return cluster.mq(broker)




async def wait_dispatched(broker: BrokerController) -> None:
    """Until everything stored is in the consume queues (dispatch runs on the store's own thread)."""
    assert await asyncio.to_thread(broker.store.wait_dispatched, GUARD)


@pytest.fixture
def dispatched() -> Callable[[BrokerController], Any]:
    return wait_dispatched


# --- `pocketmq dev` in a process of its own, and a small file system (the hardening tests of issue 18) ---
# What an in-process broker cannot give: a process that could die (SIGBUS on a full disk), resource limits of
# its own (RLIMIT_NOFILE), and a real full disk (a small tmpfs, mounted when the tests run as root; skipped with
# the reason otherwise).


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs mounted for the test (a real file system that fills up), or skip the test."""
    where = tmp_path / "fs"
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def dev_broker() -> Callable[..., Any]:
    """``async with dev_broker(store, conf) as dev:`` (see dev_process)."""
    return dev_process


_ADDRESSES = re.compile(rb"name server (\S+), broker \S+ at (\S+)")


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "16m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (a real file system that fills up), or skip the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _limit_open_files(soft: int, hard: int | None) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard is None
                                                else hard))


class DevProcess:
    """A `pocketmq dev` child: its name server and broker addresses, and an MQ talking to the broker."""

    def __init__(self, proc: asyncio.subprocess.Process, namesrv: str, broker: str) -> None:
        self.proc = proc
        self.namesrv = namesrv
        self.broker = broker
        self.client = RemotingClient()
        self.mq = MQ(self.client, broker)

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    async def pull_all(self, topic: str, queue_id: int, start: int = 0) -> list[tuple[int, bytes]]:
        return await pull_all(self.mq, topic, queue_id, start)

    async def stderr_text(self) -> str:
        if self.proc.returncode is None or self.proc.stderr is None:
            return ""
        return (await self.proc.stderr.read()).decode(errors="replace")


@contextlib.asynccontextmanager
async def dev_process(store: Path, conf: str | None = "", *, nofile: int | None = None,
                      nofile_hard: int | None = None, extra_env: dict[str, Any] | None = None
                      ) -> AsyncIterator[DevProcess]:
    """Start `pocketmq dev` on free ports with the broker properties `conf` (written to ``<store>.conf`` beside the
    store; None: that file as it is); stop it (SIGTERM) afterwards.

    ``nofile``, ``nofile_hard``: the child's RLIMIT_NOFILE (the broker raises the soft limit to the hard one at
    start, so a test that needs a low limit lowers both)."""
    conf_path = store.parent / f"{store.name}.conf"
    if conf is not None:
        conf_path.write_text(conf)
    env = dict(os.environ, **(extra_env or {}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pocketmq", "dev", "--no-console", "--no-grpc", "--store", str(store),
        "--namesrv-port", "0", "--broker-port", "0",
        "-c", str(conf_path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
        preexec_fn=(lambda: _limit_open_files(nofile, nofile_hard)) if nofile else None)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    found = _ADDRESSES.search(line)
    if found is None:
        proc.kill()
        assert proc.stderr is not None
        raise AssertionError(f"pocketmq dev did not start: {line!r} {(await proc.stderr.read())[-3000:]!r}")
    dev = DevProcess(proc, found.group(1).decode(), found.group(2).decode())
    try:
        yield dev
    finally:
        await dev.client.close()
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()
