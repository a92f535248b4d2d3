"""docs/storage.md's worked example is reproduced by the tools.

Every ```console block in the document is run: each `$ python -m pocketmq.storage ...` line is executed
(with /tmp/ moved under tmp_path) and its output compared with the lines that follow it. A line
`...` in the document stands for any number of output lines. Timestamps, index file names, time
differences and disk usage change from run to run, so they are masked on both sides before
comparing; every other value, byte and offset must match.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pocketmq.common.java_hash import java_string_hash
from pocketmq.storage.__main__ import main as storage_main
from pocketmq.storage.index_file import key_hash
from pocketmq.storage.recovery import topic_length_error

from .conftest import run_tool

DOC = Path(__file__).resolve().parents[2] / "docs" / "storage.md"

_MASKS = [
    (re.compile(r"\b\d{17}\b"), "<index-file>"),
    (re.compile(r"\b\d{13}\b"), "<ms>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"), "<time>"),
    (re.compile(r"[\d.]+ (?:[KMG]iB|B) (on disk|allocated on disk)"), r"<n> \1"),
    (re.compile(r"timeDiff \d+"), "timeDiff <n>"),
    # An index entry's bytes: keyHash | phyOffset | timeDiff | prev. The timeDiff varies.
    (re.compile(r"(at byte \d+: [0-9a-f ]+ \| [0-9a-f ]+ \| )[0-9a-f ]+( \| [0-9a-f ]+)$"), r"\1<diff>\2"),
]
_TIMESTAMP_BYTES = re.compile(r"(?:[0-9a-f]{2} ){7}[0-9a-f]{2}")


def normalize(line: str) -> str:
    for pattern, repl in _MASKS:
        line = pattern.sub(repl, line)
    if "TIMESTAMP" in line:
        line = _TIMESTAMP_BYTES.sub("<8 bytes>", line)
    return " ".join(line.split())


def console_blocks(text: str) -> list[list[str]]:
    blocks, current = [], None
    for line in text.splitlines():
        if current is None and line.strip() == "```console":
            current = []
        elif current is not None and line.strip() == "```":
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def commands(block: list[str]) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for line in block:
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            out[-1][1].append(line)
    return out


def assert_matches(expected: list[str], actual: list[str], command: str) -> None:
    """Line by line after normalize(); an expected `...` skips to the next expected line."""
    exp = [normalize(x) for x in expected]
    act = [normalize(x) for x in actual]
    i = j = 0
    while i < len(exp):
        if exp[i] == "...":
            i += 1
            if i == len(exp):
                return
            while j < len(act) and act[j] != exp[i]:
                j += 1
        assert j < len(act), f"{command}: output ended, expected {expected[i]!r}"
        assert act[j] == exp[i], f"{command}: line {j + 1}\n  doc: {expected[i]}\n  got: {actual[j]}"
        i += 1
        j += 1
    assert j == len(act), f"{command}: unexpected extra output from line {j + 1}: {actual[j]!r}"


def test_the_worked_example_is_what_the_tools_print(tmp_path: Path) -> None:
    blocks = console_blocks(DOC.read_text())
    assert len(blocks) >= 3, "the worked example lost its console blocks"
    ran = 0
    for block in blocks:
        for command, expected in commands(block):
            command = command.replace("/tmp/", f"{tmp_path}/")
            expected = [line.replace("/tmp/", f"{tmp_path}/") for line in expected]
            argv = shlex.split(command)
            assert argv[:3] == ["python", "-m", "pocketmq.storage"], command
            code, out = run_tool(storage_main, argv[3:])
            assert code == 0, command
            assert_matches(expected, out.splitlines(), command)
            ran += 1
    assert ran >= 5


def test_the_arithmetic_in_the_prose() -> None:
    assert java_string_hash("TagA") == 84 * 31**3 + 97 * 31**2 + 103 * 31 + 65 == 2598919 == 0x27A807
    assert key_hash("OrderEvents#order-4") == 1853225255 and 1853225255 % 64 == 39
    assert key_hash("Payments#order-4") == 344779327 and 344779327 % 64 == 63
    assert 91 + 95 + 11 + 75 == 272 and 1305 + 272 == 1577 and 1305 == 0x519
    assert 40 + 39 * 4 == 196 and 40 + 64 * 4 + 14 * 20 == 576 and 0xCF13 == 53011 and 0x2A9F == 10911
    assert 32014 + 754 == 32768


def test_the_record_table_s_topic_length_is_the_signed_byte_recovery_checks() -> None:
    # The table said "T, unsigned" while section 2.7 (and RocketMQ's checkMessageAndReturnSize) read a signed byte.
    (row,) = [line for line in DOC.read_text().splitlines() if line.startswith("| 17 | 88+B | 1 | TOPICLENGTH |")]
    assert "unsigned" not in row and "a **signed** byte" in row and "at most 127" in row
    assert topic_length_error(127, 1) is None and topic_length_error(128, 1) is not None


def test_normalize_masks_only_what_varies() -> None:
    line = "    40    8  00 00 01 a1 ff 07 36 4d  BORNTIMESTAMP   1795280095156 = 2026-11-21 16:54:55.156"
    assert normalize(line) == "40 8 <8 bytes> BORNTIMESTAMP <ms> = <time>"
    line = "  00000000000000000000  32,768 bytes (8 KiB on disk)"
    assert normalize(line) == "00000000000000000000 32,768 bytes (<n> on disk)"
    kept = "            at byte 576: 6e 75 f9 27 | 00 00 00 00 00 00 05 19 | 00 00 00 01 | 00 00 00 00"
    assert normalize(kept) == "at byte 576: 6e 75 f9 27 | 00 00 00 00 00 00 05 19 | <diff> | 00 00 00 00"
