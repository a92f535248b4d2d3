"""Measurements live in bench/README.md, the code says why in a sentence (issue 31): no timing figure (a number in
µs, us, ns or msgs/s, or in ms written as a measurement) in a comment or docstring of the package, where it would
go stale unseen."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("pocketmq", "pyspark_pocketmq")
FIGURE = re.compile(
    r"\d[\d.,]*\s?(?:µs|us|ns|msgs/s)\b"
    # Milliseconds only in a measurement's forms (about, a range, took/cost, measured): RocketMQ's defaults and
    # intervals are written in ms too ("polls every 1 ms", "3000 ms").
    r"|(?<!\d)~\s?\d[\d.,]*\s?ms\b|\d[\d.,]*\s?[-–]\s?\d[\d.,]*\s?ms\b|\b(?:took|takes|cost|costs)\s~?\d[\d.,]*\s?ms\b"
    r"|\d[\d.,]*\s?ms\b[^.]*\(measured\)"
)


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
    assert FIGURE.search("~60 ms of work") and FIGURE.search("waited 6-48 ms") and FIGURE.search("one took 36 ms")
    assert not FIGURE.search("polls every 1 ms") and not FIGURE.search("(RocketMQ: 3000 ms)")
    assert not FIGURE.search('"[0~10ms]"')
