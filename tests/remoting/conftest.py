"""Remoting test setup: every async test runs on both the default asyncio loop and uvloop."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import uvloop

from pocketmq.remoting import busy_poll
from pocketmq.remoting.server import RemotingServer


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], object]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture
def server_options() -> dict[str, Any]:
    """RemotingServer keyword arguments; a module overrides this fixture to change them."""
    return {}


@pytest.fixture
async def server(app: Any, server_options: dict[str, Any]) -> AsyncIterator[RemotingServer]:
    """A started server with the module's ``app`` fixture's processors installed."""
    srv = RemotingServer(**server_options)
    app.install(srv)
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
def no_other_pollers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A poller spins only while no other loop of the process with a poller runs (busy_poll._alone); an earlier test
    of this worker may leave one running in a thread (a session's cluster). The busy-polling tests start from none."""
    monkeypatch.setattr(busy_poll, "_pollers", weakref.WeakKeyDictionary())
