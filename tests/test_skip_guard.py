"""Under CI=true a skip that tests/skip_guard.py does not expect fails the run (issue 31); without CI it does not.

Each case runs pytest for real, in a process of its own, on a small test folder with tests/skip_guard.py loaded
as a plugin (as tests/conftest.py loads it), with and without xdist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SKIPS = '''
import pytest

def test_runs():
    assert True

def test_needs_a_tool():
    pytest.skip("the tool is not installed")
'''
EXPECTED = '''
import pytest

def test_full_disk():
    pytest.skip("mounting a small tmpfs needs root")
'''
MODULE_SKIP = '''
import pytest
pytest.importorskip("a_module_nobody_has")

def test_never_collected():
    pass
'''


def run(folder: Path, ci: bool, *args: str) -> subprocess.CompletedProcess[str]:
    # Only the plugins these runs need (the guard, and xdist when asked): loading every installed one made each
    # run seconds slower.
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"PYTHONPATH": str(ROOT),
                                                                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    if "-n" in args:
        args = ("-p", "xdist", *args)
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "tests.skip_guard", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), "-c", os.devnull, *args, str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_an_unexpected_skip_fails_a_ci_run_and_says_which(tmp_path: Path, xdist: tuple[str, ...]) -> None:
    folder = write(tmp_path, {"tests/tool/test_tool.py": SKIPS})
    done = run(folder, True, *xdist)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "unexpected skips" in done.stdout
    assert "tests/tool/test_tool.py::test_needs_a_tool: the tool is not installed" in done.stdout
    assert run(folder, False, *xdist).returncode == 0


def test_a_module_that_skips_itself_fails_a_ci_run(tmp_path: Path) -> None:
    folder = write(tmp_path, {"tests/tool/test_gone.py": MODULE_SKIP, "tests/tool/test_ok.py": "def test_ok():\n"
                              "    pass\n"})
    done = run(folder, True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tests/tool/test_gone.py: could not import 'a_module_nobody_has'" in done.stdout


def test_an_expected_skip_passes_a_ci_run(tmp_path: Path) -> None:
    folder = write(tmp_path, {"tests/broker/test_disk.py": EXPECTED})
    done = run(folder, True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "unexpected skips" not in done.stdout


def test_a_failing_run_stays_failed(tmp_path: Path) -> None:
    folder = write(tmp_path, {"tests/tool/test_bad.py": "def test_bad():\n    assert False\n"})
    assert run(folder, True).returncode == 1
