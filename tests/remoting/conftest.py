"""Remoting test setup: every async test runs on both the default asyncio loop and uvloop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import uvloop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> dict[str, Callable[[], object]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, interval: float = 0.005) -> None:
    """Poll ``predicate`` until true; fail after ``timeout`` seconds (a generous bound, not a sleep)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(interval)


@pytest.fixture
def poll() -> Callable[..., object]:
    return wait_until
