"""docs/client.md's examples run as written against a real cluster (the address swapped in)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pocketmq.broker.broker_controller")
embedded = pytest.importorskip("pocketmq.embedded")

DOC = Path(__file__).resolve().parents[2] / "docs" / "client.md"
DOC_ADDR = "127.0.0.1:9876"


def runnable_examples() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return [b for b in blocks if DOC_ADDR in b]


def test_the_doc_has_runnable_examples() -> None:
    assert len(runnable_examples()) == 8


@pytest.mark.parametrize("index", range(8))
def test_doc_example_runs(index: int, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = runnable_examples()[index]
    with embedded.ThreadedCluster(tmp_path) as cluster:
        exec(compile(code.replace(DOC_ADDR, cluster.namesrv_addr), f"client.md example {index}", "exec"), {})
    out = capsys.readouterr().out
    if index == 0:
        assert "SendStatus.SEND_OK" in out
        assert "created ['o-1'] b'order 1'" in out
    if index == 2:  # the lite pull consumer
        assert "[b'payment 0', b'payment 1', b'payment 2']" in out
    if index == 3:  # the push consumer
        assert "[b'order 0', b'order 1', b'order 2']" in out
    if index == 4:  # the simple consumer
        assert "[b'order 0', b'order 1', b'order 2']" in out
    if index == 5:  # request-reply
        assert "b'price of apples: 42'" in out
    if index == 6:  # message trace
        assert "['Pub', 'SubAfter', 'SubBefore']" in out
    if index == 7:  # the transactional producer
        assert "SendStatus.SEND_OK LocalTransactionState.COMMIT_MESSAGE" in out
        assert "[b'order 7 paid']" in out
