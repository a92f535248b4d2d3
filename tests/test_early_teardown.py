"""tests/early_teardown.py ends a session fixture that holds a JVM once no test left for the process uses it.

A real pytest run in a process of its own, on a small folder whose session fixture is named as one of those
(it only logs its setup and teardown), with tests/early_teardown.py registered as tests/conftest.py registers it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFTEST = '''
import pytest
from tests import early_teardown

LOG = []

def pytest_configure(config):
    config.pluginmanager.register(early_teardown, "pocketmq-early-teardown")

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    early_teardown.note_order(items, {})

@pytest.fixture(scope="session")
def apache_rocketmq():
    LOG.append("setup")
    yield "server"
    LOG.append("teardown")

@pytest.fixture
def log():
    return LOG

def pytest_sessionfinish(session):
    with open("events.txt", "w") as f:
        f.write(" ".join(LOG))
'''
USERS = '''
def test_first(apache_rocketmq, log):
    log.append("a1")

def test_second(apache_rocketmq, log):
    log.append("a2")
'''
OTHERS = '''
def test_other(log):
    log.append("b")
'''
# A user the ranking cannot see (the name is built at run time): it gets the fixture again, set up anew.
HIDDEN_USER = '''
def test_hidden(request, log):
    assert request.getfixturevalue("apache_" + "rocketmq") == "server"
    log.append("c")
'''


def test_a_session_fixture_ends_after_its_last_user_and_comes_back_if_asked_again(tmp_path: Path) -> None:
    for name, text in {"conftest.py": CONFTEST, "test_a.py": USERS, "test_b.py": OTHERS,
                       "test_c.py": HIDDEN_USER}.items():
        (tmp_path / name).write_text(text)
    env = os.environ | {"PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           "-c", os.devnull, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "events.txt").read_text().split() == [
        "setup", "a1", "a2", "teardown", "b", "setup", "c", "teardown"]
