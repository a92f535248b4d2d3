"""The ``both_loops`` marker of the test folders whose code `pocketmq dev` runs on uvloop (broker, client, console):
every test runs on the default asyncio loop, and a test so marked on uvloop too, whose transports are not asyncio's
classes. A folder's conftest imports both hooks from here."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import uvloop


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "both_loops: run on the default asyncio loop and on uvloop")


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Callable[[], object]]:
    if item.get_closest_marker("both_loops") is not None:
        return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
    return {"asyncio": asyncio.new_event_loop}
