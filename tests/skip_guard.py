"""No silent skips: under ``CI=true`` a run in which a test is skipped for a reason not listed here fails.

A skip says something is missing (a client, a browser, a package, a permission); locally that is worth a line of the
summary, in CI it is a gap in what was proven. tests/conftest.py loads these hooks (for the controller of an xdist
run too, which receives every worker's skips). pocketmq's own modules are imported plainly by the tests: an import
error is a failure, never a skip.
"""

from __future__ import annotations

import os

import pytest

# (start of the test's node id, start of the skip's reason) -> why CI may see it.
EXPECTED_SKIPS = {
    ("tests/broker/", "mounting a small tmpfs needs root"):
        "a real full disk is a 16 MiB tmpfs, mounted for the test: a CI runner that is not root cannot mount it",
    ("tests/broker/", "cannot mount a tmpfs here"):
        "the same, in a container that forbids mounts (no CAP_SYS_ADMIN) although it runs as root",
}

_skips: list[tuple[str, str]] = []
_unexpected: list[str] = []


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def expected(nodeid: str, reason: str) -> bool:
    return any(nodeid.startswith(prefix) and reason.startswith(start) for prefix, start in EXPECTED_SKIPS)


def _reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips.append((report.nodeid, _reason(report)))


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:
        _skips.append((report.nodeid, _reason(report)))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput") or not in_ci():
        return  # (an xdist worker's skips are judged by the controller)
    _unexpected[:] = sorted({f"{nodeid}: {reason}" for nodeid, reason in _skips if not expected(nodeid, reason)})
    if _unexpected and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    if _unexpected:
        terminalreporter.section("unexpected skips (CI=true: tests/skip_guard.py lists the expected ones)", red=True)
        for line in _unexpected:
            terminalreporter.write_line(line)
