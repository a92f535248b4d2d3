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


