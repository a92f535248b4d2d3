"""Measurements live in bench/README.md, the code says why in a sentence (issue 31): no timing figure (a number in
µs, us, ns or msgs/s) in a comment or docstring of the package, where it would go stale unseen."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pocketmq", "pyspark_pocketmq")
FIGURE = re.compile(r"\d[\d.,]*\s?(?:µs|us|ns|msgs/s)\b")


def figures() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if FIGURE.search(line):
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_no_timing_figures_in_the_code():
    assert figures() == [], "move the figure to bench/README.md and say why in a sentence"


def test_the_pattern_sees_figures():
    assert FIGURE.search("costs ~0.25 µs a frame") and FIGURE.search("took ~80 us here")
    assert FIGURE.search("315,000 msgs/s") and FIGURE.search("(~70 ns)")
    assert not FIGURE.search("status=1 used") and not FIGURE.search("busy_poll_us = 200")
