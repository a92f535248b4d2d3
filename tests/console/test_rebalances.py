"""The rebalance history's two halves without a cluster: what a client records (and what it leaves out), and how
the console reads a client's report, which is a peer's input (malformed parts are skipped), within its bounds.
The history over real sockets is in test_api.py."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("aiohttp", reason="the console extra")

from pocketmq.client.impl.consumer.rebalance_history import REBALANCE_HISTORY_PROPERTY, RebalanceHistory  # noqa: E402
from pocketmq.console.rebalances import RebalanceLog, parse_history  # noqa: E402
from pocketmq.remoting.client_body import MessageQueue  # noqa: E402


def q(i: int) -> MessageQueue:
    return MessageQueue("T", "broker-a", i)


def test_a_client_records_rounds_that_change_something_and_keeps_the_last_ones():
    h = RebalanceHistory(capacity=3)
    first = h.record("A", "T", "AVG", ["A"], [], [q(0), q(1)])
    assert first is not None and first.joined == ["A"] and first.gained == ["broker-a:0", "broker-a:1"]
    assert h.record("A", "T", "AVG", ["A"], [q(0), q(1)], [q(0), q(1)]) is None  # nothing changed: not kept
    joined = h.record("A", "T", "AVG", ["A", "B"], [q(0), q(1)], [q(0)])
    assert joined is not None and joined.joined == ["B"]
    assert joined.lost == ["broker-a:1"] and joined.held == ["broker-a:0"]
    left = h.record("A", "T", "AVG", ["A"], [q(0)], [q(0)])  # B left, A's queues did not move: still a round
    assert left is not None and left.left == ["B"] and left.gained == left.lost == []
    h.record("A", "T", "AVG", ["A", "C"], [q(0)], [q(0)])
    assert [e.joined for e in h.events] == [["B"], [], ["C"]]  # the ring keeps the last three
    assert [e["left"] for e in json.loads(h.to_json())] == [[], ["B"], []]


def test_the_console_skips_what_is_not_an_event():
    report = json.dumps([{"timestamp": 5, "topic": "T", "strategy": "AVG", "gained": ["b:0"], "clients": "x"},
                         {"timestamp": "soon", "topic": "T"}, 7, {"topic": "T"}])
    events = parse_history("A", {REBALANCE_HISTORY_PROPERTY: report})
    assert events == [{"client": "A", "timestamp": 5, "topic": "T", "strategy": "AVG", "clients": [],
                       "joined": [], "left": [], "gained": ["b:0"], "lost": [], "held": []}]
    assert parse_history("A", {REBALANCE_HISTORY_PROPERTY: "{not json"}) == []
    assert parse_history("A", {REBALANCE_HISTORY_PROPERTY: '{"a": 1}'}) == []
    assert parse_history("A", {}) == []  # a client that reports none (Apache RocketMQ's)


def test_the_console_merges_reports_newest_first_within_its_bounds():
    log = RebalanceLog(per_group=3, groups=2)

    def ev(client: str, t: int) -> dict:
        return {"client": client, "timestamp": t, "topic": "T"}

    assert log.merge("G", [ev("A", 1), ev("B", 2)]) == [ev("B", 2), ev("A", 1)]
    # A reports its event again and a new one; B has left and reports nothing: its event stays.
    assert log.merge("G", [ev("A", 1), ev("A", 3)]) == [ev("A", 3), ev("B", 2), ev("A", 1)]
    assert log.merge("G", [ev("A", 4)]) == [ev("A", 4), ev("A", 3), ev("B", 2)]  # the oldest goes
    assert log.merge("nobody", []) == []  # a group with nothing to show is not remembered
    log.merge("H", [ev("A", 1)])
    log.merge("I", [ev("A", 1)])
    assert log.merge("G", []) == []  # two groups at most: G, the least recently viewed, was forgotten
