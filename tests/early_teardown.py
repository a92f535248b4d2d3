"""Session fixtures that hold JVMs end after their last user instead of at the end of the run.

A session-scoped Apache broker keeps burning CPU while idle (5.5.0's timer and POP threads, every broker's
1 ms reput loop: a tenth of a core or more each), and until now the two workers each kept one of each version
(and the Spark JVM) up to the very end of `make test`. The users of these fixtures are ranked first
(tests/conftest.py); `--dist loadfile --no-loadscope-reorder` hands modules out in that order, one at a time, so
once a worker starts an item placed after a fixture's last user, no user is left for that worker. The fixture is
then finished as pytest finishes any fixture (its teardown runs, its cached value is dropped): were a user missed
below, a later request would start it again rather than find it stopped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

import pytest
from _pytest.fixtures import SubRequest

EARLY_ENDING_FIXTURES = ("apache_rocketmq", "apache_rocketmq5", "spark", "spark_cluster")

# A module that asks for one of them by name at run time (request.getfixturevalue) uses it too.
_BY_NAME = re.compile("[\"'](" + "|".join(EARLY_ENDING_FIXTURES) + ")[\"']")

_last_user: dict[str, int] = {}
_position: dict[str, int] = {}
_set_up: dict[str, tuple[pytest.FixtureDef[object], pytest.FixtureRequest]] = {}


def fixtures_used(item: pytest.Item, module_text: dict[Path, str]) -> set[str]:
    used = set(getattr(item, "fixturenames", ())) & set(EARLY_ENDING_FIXTURES)
    path = Path(str(item.path))
    if path not in module_text:
        try:
            module_text[path] = path.read_text(encoding="utf-8")
        except OSError:
            module_text[path] = ""
    text = module_text[path]
    if "getfixturevalue" in text:
        used.update(_BY_NAME.findall(text))
    return used


def note_order(items: list[pytest.Item], module_text: dict[Path, str]) -> None:
    """Record, in the final order, where each item is and where each fixture's last user is."""
    _last_user.clear()
    _position.clear()
    for i, item in enumerate(items):
        _position[item.nodeid] = i
        for name in fixtures_used(item, module_text):
            _last_user[name] = i


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> None:
    if fixturedef.argname in EARLY_ENDING_FIXTURES and fixturedef.scope == "session":
        _set_up[fixturedef.argname] = (fixturedef, request)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    position = _position.get(item.nodeid)
    if position is None:
        return
    for name in EARLY_ENDING_FIXTURES:
        if name in _set_up and position > _last_user.get(name, -1):
            fixturedef, request = _set_up.pop(name)
            fixturedef.finish(cast(SubRequest, request))  # (the request it was set up with)
