"""Helpers every test folder shares."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from pocketmq.remoting.client import RemotingClient
from tests import early_teardown
from tests.apache.apache_rocketmq import V4, V5, ApacheRocketMQ
from tests.early_teardown import fixtures_used, note_order
from tests.skip_guard import (  # noqa: F401  # (hooks: under CI=true, a skip not listed there fails the run)
    pytest_collectreport,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)

# Tests never assert on wall time, and hypothesis's per-example deadline (200 ms) is one: on a busy CI machine an
# example that waited for a CPU failed as "flaky". Loaded here, before any test module builds its settings.
settings.register_profile("pocketmq", deadline=None)
settings.load_profile("pocketmq")

# `pocketmq broker` (and Apache's broker, and mqadmin's -n default) read the name server from $NAMESRV_ADDR when
# nothing else names one: a developer's shell that sets it must not send the suite's brokers and commands there.
os.environ.pop("NAMESRV_ADDR", None)


async def wait_until(predicate: Callable[[], bool], timeout: float = 15.0, interval: float = 0.005) -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds (a generous bound, not a sleep). The default
    stays below the clients' periodic rebalance, heartbeat and route polls, so a wait for what must come at once
    does not pass on one of them instead."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)


@pytest.fixture
def poll() -> Callable[..., object]:
    """``await poll(lambda: cond)``: wait for a condition with a deadline instead of sleeping."""
    return wait_until


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    """A bare RemotingClient (no name server, no MQ client instance), closed after the test."""
    c = RemotingClient()
    yield c
    await c.close()


def pytest_configure(config: pytest.Config) -> None:
    # A plugin of its own, not hooks of this conftest: pytest asks a conftest's hooks only about nodes in its folder,
    # and a session fixture's setup is reported on the session, which lies above it.
    config.pluginmanager.register(early_teardown, "pocketmq-early-teardown")


# Apache RocketMQ, the reference (tests/apache/): one name server and broker per version and test process, shared
# by the tests of that process, which keep to topics and groups of their own. A missing jar or Java fails the test
# with the one-line reason (ApacheRocketMQUnavailable), never a skip.
@pytest.fixture(scope="session")
def apache_rocketmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheRocketMQ]:
    # A half message is checked a second after its send (4.9.7's defaults: every minute, once 6 s old), so the
    # client's transaction tests see the check without waiting a minute.
    server = ApacheRocketMQ(tmp_path_factory.mktemp("apache-rocketmq-4"), version=V4, transactionCheckInterval="1000",
                            transactionTimeOut="1000")
    with server.killed_at_exit():  # its store is thrown away: killed, not shut down (seconds at the end)
        yield server


@pytest.fixture(scope="session")
def apache_rocketmq5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheRocketMQ]:
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache-rocketmq-5"), version=V5).killed_at_exit() as server:
        yield server


# The modules that take minutes (JVMs of Apache RocketMQ and its clients, Spark) go to the two xdist workers
# first, longest first: `--dist loadfile --no-loadscope-reorder` hands out modules in collection order (without
# the flag xdist sorts them by test count, and these few-test modules came last), and one of these started last
# would leave the other worker idle at the end of `make test`.
LONG_MODULES_FIRST = (
    "tests/java_client/",
    "tests/java_sdk/",
    "tests/apache/mqadmin/",
    "tests/proxy/apache_parity/",
    "tests/native_clients/test_spring_client.py",
    "tests/apache/test_store_both_ways.py",
    "tests/apache/test_mixed_cluster.py",
    "tests/apache/test_differential",
    "tests/proxy/test_grpc_differential_fuzz.py",
    "tests/spark/",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    module_text: dict[Path, str] = {}
    shares_a_jvm = {item.nodeid.split("::")[0] for item in items if fixtures_used(item, module_text)}

    def rank(item: pytest.Item) -> int:
        for i, prefix in enumerate(LONG_MODULES_FIRST):
            if item.nodeid.startswith(prefix):
                return i
        # Then the modules that use a session-scoped JVM (tests/early_teardown.py): the sooner the last of them
        # has run, the sooner a worker stops those JVMs.
        return len(LONG_MODULES_FIRST) + (item.nodeid.split("::")[0] not in shares_a_jvm)

    items.sort(key=rank)  # (stable: a module's tests stay together and in their order)
    note_order(items, module_text)


# Test packages whose modules share servers through package-scoped fixtures (each was one module, split to keep
# files short): `--dist loadfile` would hand their modules to both workers, and each worker would start the servers
# (JVMs); a package here is one unit of work, given to one worker whole, its modules in their order.
ONE_WORKER_PACKAGES = ("tests/apache/mqadmin/", "tests/proxy/apache_parity/")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class PackageOrFileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return next((p for p in ONE_WORKER_PACKAGES if nodeid.startswith(p)), super()._split_scope(nodeid))

    return PackageOrFileScheduling(config, log)
