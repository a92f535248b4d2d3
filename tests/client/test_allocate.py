"""Allocation strategies give RocketMQ's exact splits.

Expected values are derived independently of the code under test: closed-form block/stripe formulas for the
averaging strategies, and for consistent hash a golden table produced by running the Java algorithm's definition
(java.security.MessageDigest MD5 of String.getBytes(), first 4 bytes big-endian, a TreeMap ring with 10 virtual
nodes "<cid>-<n>", tailMap lookup with wrap-around) in a JVM.
"""

from __future__ import annotations

import logging

import pytest

from pocketmq.client.consumer.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from pocketmq.client.consumer.allocate.consistent_hash import md5_hash, message_queue_key
from pocketmq.client.impl.consumer.rebalance_impl import mq_sort_key
from pocketmq.common.java_hash import java_string_order
from pocketmq.remoting.client_body import MessageQueue

CONSUMERS = range(1, 11)
QUEUES = range(1, 21)


def queues(n: int, topic: str = "TopicTest", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def cids(n: int) -> list[str]:
    return sorted(f"127.0.0.1@{i + 1}" for i in range(n))  # RebalanceImpl sorts them as strings


def split(strategy: AllocateMessageQueueStrategy, mqs: list[MessageQueue], ids: list[str]) -> list[list[int]]:
    return [[mq.queue_id for mq in strategy.allocate("G", cid, mqs, ids)] for cid in ids]


def test_seed_example_eight_queues_three_consumers() -> None:
    mqs, ids = queues(8), cids(3)
    as_names = lambda parts: [{f"q{i + 1}" for i in part} for part in parts]  # noqa: E731
    assert as_names(split(AllocateMessageQueueAveragely(), mqs, ids)) == [
        {"q1", "q2", "q3"},
        {"q4", "q5", "q6"},
        {"q7", "q8"},
    ]
    assert as_names(split(AllocateMessageQueueAveragelyByCircle(), mqs, ids)) == [
        {"q1", "q4", "q7"},
        {"q2", "q5", "q8"},
        {"q3", "q6"},
    ]


def expected_averagely(n_cid: int, n_mq: int) -> list[list[int]]:
    # Contiguous blocks of size q, the first r clients one more: client k starts at k*q + min(k, r).
    q, r = divmod(n_mq, n_cid)
    return [list(range(k * q + min(k, r), k * q + min(k, r) + q + (1 if k < r else 0))) for k in range(n_cid)]


def expected_circle(n_cid: int, n_mq: int) -> list[list[int]]:
    return [[i for i in range(n_mq) if i % n_cid == k] for k in range(n_cid)]


@pytest.mark.parametrize("n_cid", CONSUMERS)
def test_averagely_table(n_cid: int) -> None:
    for n_mq in QUEUES:
        assert split(AllocateMessageQueueAveragely(), queues(n_mq), cids(n_cid)) == expected_averagely(n_cid, n_mq)


@pytest.mark.parametrize("n_cid", CONSUMERS)
def test_averagely_by_circle_table(n_cid: int) -> None:
    for n_mq in QUEUES:
        got = split(AllocateMessageQueueAveragelyByCircle(), queues(n_mq), cids(n_cid))
        assert got == expected_circle(n_cid, n_mq)


# Owner (index into the sorted cid list) of queues 0..19 of TopicTest@broker-a for 1..10 consumers, from the JVM.
# The ring depends only on the consumers, so the owner of a queue does not depend on how many queues there are.
CONSISTENT_HASH_OWNERS = {
    1: "00000000000000000000",
    2: "10100010010110110010",
    3: "10100012212210112020",
    4: "13100012213313112023",
    5: "13100012213313144023",
    6: "53500012213315144023",
    7: "53506612213315144023",
    8: "53506612213315144023",
    9: "53806612213318144023",
    10: "64107723324429255034",
}


def test_md5_hash_golden_values() -> None:
    # From the JVM: first 4 digest bytes as an unsigned big-endian int.
    assert md5_hash("c1-0") == 3886541579
    assert md5_hash("MessageQueue [topic=T, brokerName=b, queueId=0]") == 562732085
    assert message_queue_key(MessageQueue("T", "b", 0)) == "MessageQueue [topic=T, brokerName=b, queueId=0]"


@pytest.mark.parametrize("n_cid", CONSUMERS)
def test_consistent_hash_table(n_cid: int) -> None:
    owners = [int(c) for c in CONSISTENT_HASH_OWNERS[n_cid]]
    for n_mq in QUEUES:
        expected = [[q for q in range(n_mq) if owners[q] == k] for k in range(n_cid)]
        assert split(AllocateMessageQueueConsistentHash(), queues(n_mq), cids(n_cid)) == expected


@pytest.mark.parametrize(
    "strategy",
    [AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle(), AllocateMessageQueueConsistentHash()],
    ids=lambda s: s.name,
)
def test_every_queue_exactly_once_and_deterministic(strategy: AllocateMessageQueueStrategy) -> None:
    for n_cid in CONSUMERS:
        for n_mq in QUEUES:
            mqs, ids = queues(n_mq), cids(n_cid)
            first = split(strategy, mqs, ids)
            assert sorted(q for part in first for q in part) == list(range(n_mq))
            assert split(strategy, list(mqs), list(ids)) == first


def test_consistent_hash_moves_few_queues_when_a_consumer_joins() -> None:
    # The point of the ring: a new member only takes queues, nobody else's queues move between old members.
    mqs = queues(20)
    before = dict(zip(cids(4), split(AllocateMessageQueueConsistentHash(), mqs, cids(4)), strict=True))
    after_ids = cids(4) + ["127.0.0.1@new"]
    after = dict(zip(after_ids, split(AllocateMessageQueueConsistentHash(), mqs, after_ids), strict=True))
    for cid, got in before.items():
        assert set(after[cid]) <= set(got)


def test_consistent_hash_virtual_node_count_and_custom_hash() -> None:
    with pytest.raises(ValueError):
        AllocateMessageQueueConsistentHash(-1)
    # With zero virtual nodes the ring is empty and nobody gets anything, as in Java (routeNode returns null).
    assert split(AllocateMessageQueueConsistentHash(0), queues(4), cids(2)) == [[], []]
    # A constant hash puts every virtual node on one point; the last one put (last cid) owns the ring.
    const = AllocateMessageQueueConsistentHash(3, hash_function=lambda key: 7)
    assert split(const, queues(4), cids(3)) == [[], [], [0, 1, 2, 3]]


@pytest.mark.parametrize(
    "strategy",
    [
        AllocateMessageQueueAveragely(),
        AllocateMessageQueueAveragelyByCircle(),
        AllocateMessageQueueConsistentHash(),
    ],
    ids=lambda s: s.name,
)
def test_argument_checks(strategy: AllocateMessageQueueStrategy, caplog: pytest.LogCaptureFixture) -> None:
    mqs, ids = queues(4), cids(2)
    for bad in [("", mqs, ids), ("127.0.0.1@1", [], ids), ("127.0.0.1@1", mqs, [])]:
        with pytest.raises(ValueError):
            strategy.allocate("G", *bad)
    with caplog.at_level(logging.WARNING, logger="pocketmq.client.consumer.allocate"):
        assert strategy.allocate("G", "127.0.0.1@9", mqs, ids) == []
    assert "not in cidAll" in caplog.text


def test_strategies_do_not_mutate_their_inputs() -> None:
    mqs, ids = queues(7), cids(3)
    saved = (list(mqs), list(ids))
    nearby = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), RoomByPrefix())
    for strategy in [
        AllocateMessageQueueAveragely(),
        AllocateMessageQueueAveragelyByCircle(),
        AllocateMessageQueueConsistentHash(),
        AllocateMessageQueueByMachineRoom({"broker"}),
        nearby,
    ]:
        for cid in ids:
            got = strategy.allocate("G", cid, mqs, ids)
            got.append(MessageQueue("x", "y", 99))  # a caller may own and edit the result
        assert (mqs, ids) == saved


def test_by_config_returns_the_configured_queues() -> None:
    fixed = [MessageQueue("T", "b", 3), MessageQueue("T", "b", 1)]
    strategy = AllocateMessageQueueByConfig(fixed)
    assert strategy.name == "CONFIG"
    for n_cid in CONSUMERS:
        for n_mq in QUEUES:
            for cid in cids(n_cid):
                assert strategy.allocate("G", cid, queues(n_mq), cids(n_cid)) == fixed
    strategy.allocate("G", "c", [], []).clear()
    assert strategy.allocate("G", "c", [], []) == fixed


def room_queues(n_mq: int) -> list[MessageQueue]:
    # Brokers of three rooms interleaved; room "c" is not consumed by MACHINE_ROOM below.
    names = ["a@broker-1", "b@broker-2", "c@broker-3", "plain-broker", "a@x@y"]
    mqs = [MessageQueue("T", names[i % len(names)], i) for i in range(n_mq)]
    return sorted(mqs, key=lambda q: (q.topic, q.broker_name, q.queue_id))


@pytest.mark.parametrize("n_cid", CONSUMERS)
def test_by_machine_room_table(n_cid: int) -> None:
    strategy = AllocateMessageQueueByMachineRoom({"a", "b"})
    for n_mq in QUEUES:
        mqs, ids = room_queues(n_mq), cids(n_cid)
        wanted = [mq for mq in mqs if mq.broker_name in ("a@broker-1", "b@broker-2")]
        got = [strategy.allocate("G", cid, mqs, ids) for cid in ids]
        # Client k: an equal block of len // n, then the k-th of the leftover tail.
        base, rem = divmod(len(wanted), n_cid)
        for k, part in enumerate(got):
            tail = [wanted[n_cid * base + k]] if k < rem else []
            assert part == wanted[k * base : (k + 1) * base] + tail
        assert sorted(q.queue_id for part in got for q in part) == sorted(q.queue_id for q in wanted)


def test_by_machine_room_example_and_unknown_client() -> None:
    mqs = [MessageQueue("T", f"{room}@b{i}", i) for i, room in enumerate("aabbaab")]
    strategy = AllocateMessageQueueByMachineRoom({"a"})
    assert strategy.name == "MACHINE_ROOM"
    ids = ["c1", "c2", "c3"]
    assert [[q.queue_id for q in strategy.allocate("G", c, mqs, ids)] for c in ids] == [[0, 5], [1], [4]]
    ids = ["c1", "c2", "c3", "c4", "c5"]
    assert [[q.queue_id for q in strategy.allocate("G", c, mqs, ids)] for c in ids] == [[0], [1], [4], [5], []]
    assert strategy.allocate("G", "nobody", mqs, ids) == []


class RoomByPrefix:
    """Rooms from names: broker "IDC1@broker-a" is in IDC1, client "IDC1-host@pid" in IDC1."""

    def broker_deploy_in(self, mq: MessageQueue) -> str:
        return mq.broker_name.split("@")[0]

    def consumer_deploy_in(self, client_id: str) -> str:
        return client_id.split("-")[0]


def test_machine_room_nearby_keeps_queues_local_and_shares_orphans() -> None:
    mqs = [MessageQueue("T", f"IDC{room}@broker-{room}", q) for room in (1, 2, 3) for q in range(4)]
    ids = ["IDC1-c1", "IDC1-c2", "IDC2-c3"]
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), RoomByPrefix())
    assert strategy.name == "MACHINE_ROOM_NEARBY-AVG"
    got = {cid: [(q.broker_name[:4], q.queue_id) for q in strategy.allocate("G", cid, mqs, ids)] for cid in ids}
    # IDC1's queues split between its two clients, IDC2's all to c3, IDC3 has no consumer: shared by all three.
    assert got == {
        "IDC1-c1": [("IDC1", 0), ("IDC1", 1), ("IDC3", 0), ("IDC3", 1)],
        "IDC1-c2": [("IDC1", 2), ("IDC1", 3), ("IDC3", 2)],
        "IDC2-c3": [("IDC2", 0), ("IDC2", 1), ("IDC2", 2), ("IDC2", 3), ("IDC3", 3)],
    }


@pytest.mark.parametrize("n_cid", CONSUMERS)
def test_machine_room_nearby_table(n_cid: int) -> None:
    # Clients in rooms IDC0/IDC1 alternately; brokers in IDC0..IDC2, so IDC2 (and IDC1 with one client) is orphaned.
    ids = sorted(f"IDC{i % 2}-client{i}" for i in range(n_cid))
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragelyByCircle(), RoomByPrefix())
    for n_mq in QUEUES:
        mqs = sorted(
            (MessageQueue("T", f"IDC{i % 3}@broker-{i % 3}", i) for i in range(n_mq)),
            key=lambda q: (q.topic, q.broker_name, q.queue_id),
        )
        got = {cid: strategy.allocate("G", cid, mqs, ids) for cid in ids}
        assert sorted(q.queue_id for part in got.values() for q in part) == list(range(n_mq))
        live_rooms = {cid.split("-")[0] for cid in ids}
        for cid, part in got.items():
            for mq in part:
                room = mq.broker_name.split("@")[0]
                assert room == cid.split("-")[0] or room not in live_rooms
        # Within a live room the wrapped strategy's split holds exactly.
        for room in sorted(live_rooms):
            local_ids = [c for c in ids if c.startswith(room)]
            local_mqs = [mq for mq in mqs if mq.broker_name.startswith(room + "@")]
            for k, cid in enumerate(local_ids):
                assert [mq for mq in got[cid] if mq in local_mqs] == local_mqs[k :: len(local_ids)]


def test_machine_room_nearby_checks() -> None:
    with pytest.raises(ValueError):
        AllocateMachineRoomNearby(None, RoomByPrefix())  # type: ignore[arg-type]
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), RoomByPrefix())
    assert strategy.allocate("G", "IDC9-x", queues(3), ["IDC1-a"]) == []
    with pytest.raises(ValueError, match="Machine room is null"):
        strategy.allocate("G", "IDC1-a", [MessageQueue("T", "@b", 0)], ["IDC1-a"])


def test_client_ids_and_queues_sort_as_java_strings_do() -> None:
    # Java compares UTF-16 code units: a character above U+FFFF (a surrogate pair, 0xD800..) sorts before one in
    # U+E000..U+FFFF. Sorted by code point instead, a Java and a Python consumer of one group split differently.
    cids = ["10.0.0.1@\uff21", "10.0.0.1@\U00020000"]
    assert sorted(cids, key=java_string_order) == ["10.0.0.1@\U00020000", "10.0.0.1@\uff21"]
    mqs = [MessageQueue("T", "broker-\uff21", 0), MessageQueue("T", "broker-\U00020000", 1)]
    assert [mq.broker_name for mq in sorted(mqs, key=mq_sort_key)] == ["broker-\U00020000", "broker-\uff21"]
