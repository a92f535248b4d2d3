"""CLONE_GROUP_OFFSET (314) and QUERY_CORRECTION_OFFSET (308): one group's offsets copied to another, and the
lowest offset per queue of a topic's groups (tests/apache/test_differential.py compares both with Apache 4.9.7)."""

from __future__ import annotations

from pocketmq.common.java_numbers import LONG_MAX
from pocketmq.remoting.admin_body import QueryCorrectionOffsetBody
from pocketmq.remoting.admin_header import CloneGroupOffsetRequestHeader, QueryCorrectionOffsetHeader
from pocketmq.remoting.body import decode_body
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand


async def clone(mq, src: str, dest: str, topic: str | None, offline: bool = False) -> None:
    answer = await mq.invoke(RequestCode.CLONE_GROUP_OFFSET, CloneGroupOffsetRequestHeader(src, dest, topic, offline))
    assert (answer.code, answer.remark, answer.body) == (ResponseCode.SUCCESS, None, None)


async def correction(mq, topic: str, compare: str, filter_groups: str | None = None) -> dict[int, int]:
    answer = await mq.invoke(RequestCode.QUERY_CORRECTION_OFFSET,
                             QueryCorrectionOffsetHeader(compare, topic, filter_groups))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    return decode_body(answer.body, QueryCorrectionOffsetBody).correction_offsets


async def test_clone_copies_the_topics_offsets_over_the_destinations(broker, mq) -> None:
    offsets = broker.consumer_offset_manager
    await mq.update_offset("Src", "CloneA", 0, 5)
    await mq.update_offset("Src", "CloneA", 1, 7)
    await mq.update_offset("Src", "CloneB", 0, 3)
    await mq.update_offset("Dest", "CloneA", 2, 9)
    await clone(mq, "Src", "Dest", "CloneA")
    # The destination's table of the topic is replaced (queue 2 gone), the source's other topics left alone.
    assert offsets.query_offset_table("Dest", "CloneA") == {0: 5, 1: 7}
    assert offsets.query_offset_table("Dest", "CloneB") == {}
    assert offsets.query_offset_table("Src", "CloneA") == {0: 5, 1: 7}
    # A copy, not the same table: the source's next commit is its own.
    await mq.update_offset("Src", "CloneA", 0, 6)
    assert offsets.query_offset("Dest", "CloneA", 0) == 5


async def test_a_topic_the_broker_has_no_config_of_is_not_cloned(broker, mq) -> None:
    offsets = broker.consumer_offset_manager
    offsets.offset_table["Gone@Src"] = {0: 4}  # (of a topic deleted without its offsets: a commit makes none)
    await clone(mq, "Src", "Dest", "Gone")
    await clone(mq, "Src", "Dest", "NeverHeardOf")
    assert "Gone@Dest" not in offsets.offset_table and "NeverHeardOf@Dest" not in offsets.offset_table


async def test_without_a_topic_each_topic_of_the_source_group_is_cloned(broker, mq) -> None:
    # RocketMQ walks the same topics but clones topic null, copying nothing (docs/compatibility.md).
    offsets = broker.consumer_offset_manager
    await mq.update_offset("Src", "CloneA", 0, 5)
    await mq.update_offset("Src", "CloneB", 1, 3)
    await mq.update_offset("Other", "CloneC", 0, 1)
    offsets.offset_table["Gone@Src"] = {0: 4}
    for blank in (None, "", " "):
        await clone(mq, "Src", f"Dest{len(blank or '')}{blank is None}", blank)
    for dest in ("Dest0True", "Dest0False", "Dest1False"):
        assert {k: v for k, v in offsets.offset_table.items() if k.endswith("@" + dest)} == {
            f"CloneA@{dest}": {0: 5}, f"CloneB@{dest}": {1: 3}}


async def test_blank_is_javas_a_no_break_space_names_a_topic_and_a_group(broker, mq) -> None:
    # UtilAll.isBlank is Character.isWhitespace's, which the no-break spaces are not (Python's strip() takes
    # them): such a topic is one the broker has no config of, such a filter a group left out.
    offsets = broker.consumer_offset_manager
    await mq.update_offset("Src", "CloneA", 0, 5)
    for name in ("\xa0", "\u2007", "\u202f"):
        await clone(mq, "Src", "DestNbsp", name)
    assert not [k for k in offsets.offset_table if k.endswith("@DestNbsp")]
    offsets.offset_table["CloneA@\xa0"] = {0: 2}  # (a commit refuses the name: pocketmq's check of group names)
    assert await correction(mq, "CloneA", "Cmp") == {0: 2}
    assert await correction(mq, "CloneA", "Cmp", "\xa0") == {0: 5}


async def test_a_topic_without_config_does_not_stop_the_clone_of_the_groups_other_topics(broker, mq) -> None:
    # RocketMQ skips such a topic and goes on with the rest, in whatever order it walks them: one that comes
    # first (in pocketmq's order, sorted) leaves the later ones cloned.
    offsets = broker.consumer_offset_manager
    offsets.offset_table["AGone@Src"] = {0: 4}  # (of a topic deleted without its offsets)
    await mq.update_offset("Src", "CloneB", 1, 3)
    await clone(mq, "Src", "Dest", None)
    assert {k: v for k, v in offsets.offset_table.items() if k.endswith("@Dest")} == {"CloneB@Dest": {1: 3}}


async def test_a_source_without_offsets_of_the_topic_leaves_the_destinations_alone(broker, mq) -> None:
    # RocketMQ copies only a table the source has: the destination keeps its own offsets of the topic.
    offsets = broker.consumer_offset_manager
    await mq.create_topic("CloneN", queues=4)
    await mq.update_offset("Dest", "CloneN", 2, 9)
    await clone(mq, "Src", "Dest", "CloneN")
    await clone(mq, "Src", "Fresh", "CloneN")
    assert offsets.query_offset_table("Dest", "CloneN") == {2: 9}
    assert "CloneN@Fresh" not in offsets.offset_table


async def test_a_topic_the_online_consumers_do_not_subscribe_to_is_cloned_offline_only(broker, mq) -> None:
    offsets = broker.consumer_offset_manager
    await mq.update_offset("Src", "CloneA", 0, 5)
    await mq.update_offset("Src", "CloneB", 0, 3)
    assert (await mq.heartbeat("clone-client", {"Src": {"CloneB": "*"}})).code == ResponseCode.SUCCESS
    await clone(mq, "Src", "Dest", "CloneA")
    assert offsets.query_offset_table("Dest", "CloneA") == {}
    await clone(mq, "Src", "Dest", "CloneB")
    assert offsets.query_offset_table("Dest", "CloneB") == {0: 3}
    await clone(mq, "Src", "Dest", "CloneA", offline=True)
    assert offsets.query_offset_table("Dest", "CloneA") == {0: 5}
    await clone(mq, "Src", "DestAll", None)
    assert offsets.query_offset_table("DestAll", "CloneA") == {}
    assert offsets.query_offset_table("DestAll", "CloneB") == {0: 3}


async def test_a_clone_is_written_to_the_offsets_file(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.update_offset("Src", "CloneA", 0, 5)
    # The source's commit written by a flush first: the clone alone is what the next write has to carry.
    await broker.consumer_offset_manager.persist()
    await clone(mq, "Src", "Dest", "CloneA")
    broker = await cluster.restart(broker)
    assert broker.consumer_offset_manager.query_offset_table("Dest", "CloneA") == {0: 5}


async def test_correction_offset_is_the_lowest_of_the_groups_not_filtered_out(broker, mq, dispatched) -> None:
    await mq.create_topic("Corr", queues=4)
    for queue_id, count in ((0, 3), (1, 1)):
        for _ in range(count):
            assert (await mq.send("Corr", queue_id=queue_id)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    for group, queue_id, offset in (("G1", 0, 3), ("G1", 1, 1), ("G2", 0, 1), ("G2", 3, 0), ("G3", 0, 0),
                                    ("G3", 1, 0), ("G4", 2, -1)):
        await mq.update_offset(group, "Corr", queue_id, offset)
    await mq.update_offset("G1", "Elsewhere", 0, 0)
    # Queue 2: only an offset before the queue's first (0, though the store has no such queue yet) is left out.
    assert await correction(mq, "Corr", "G1") == {0: 0, 1: 0, 3: 0}
    assert await correction(mq, "Corr", "G1", "G3") == {0: 1, 1: 1, 3: 0}
    assert await correction(mq, "Corr", "G1", "G3,G2") == {0: 3, 1: 1}
    assert await correction(mq, "Corr", "G1", " ") == {0: 0, 1: 0, 3: 0}
    assert await correction(mq, "Nothing", "G1") == {}
    # RocketMQ removes the filtered groups' offsets from its table as it leaves them out; pocketmq keeps them.
    assert broker.consumer_offset_manager.query_offset_table("G3", "Corr") == {0: 0, 1: 0}


async def test_correction_offset_compares_the_key_rocketmq_4_looks_up(broker, mq) -> None:
    """4.9.7 looks the compare group up under compareGroup@topic (queryOffset's arguments swapped): the offsets
    of a topic named as the group by a group named as the topic. Where those are past the lowest, the queue's
    answer is Long.MAX_VALUE; a queue the lowest has not fails (SYSTEM_ERROR, a NullPointerException there)."""
    await mq.create_topic("CorrT", queues=4)
    await mq.update_offset("Cmp", "CorrT", 0, 4)  # (the group's own offsets, under CorrT@Cmp: no part)
    await mq.update_offset("Low", "CorrT", 0, 2)
    await mq.update_offset("Low", "CorrT", 1, 2)
    await mq.update_offset("CorrT", "Cmp", 1, 1)  # CorrT@Cmp read backwards: topic Cmp, group CorrT
    assert await correction(mq, "CorrT", "Cmp") == {0: 2, 1: LONG_MAX}
    assert await correction(mq, "CorrT", "Cmp", "CorrT") == {0: 2, 1: 2}  # (the "group" CorrT filtered)
    await mq.update_offset("CorrT", "Cmp", 3, 1)
    answer = await mq.invoke(RequestCode.QUERY_CORRECTION_OFFSET, QueryCorrectionOffsetHeader("Cmp", "CorrT"))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "queue 3" in (answer.remark or "")


async def test_correction_offset_counts_every_group_whatever_other_keys_come_first(broker, mq) -> None:
    # Offsets of other topics, and of filtered groups, met before the topic's own are passed over, not an end.
    await mq.create_topic("CorrO", queues=4)
    await mq.update_offset("G1", "Elsewhere", 0, 0)
    await mq.update_offset("Skip", "CorrO", 0, 0)
    await mq.update_offset("G1", "CorrO", 0, 3)
    await mq.update_offset("G2", "CorrO", 1, 2)
    assert await correction(mq, "CorrO", "NoSuchGroup", "Skip") == {0: 3, 1: 2}


async def test_a_compare_offset_equal_to_the_lowest_keeps_the_lowest(broker, mq) -> None:
    # Only a lowest offset past the compare group's becomes Long.MAX_VALUE; one equal to it is answered as is.
    await mq.create_topic("CorrE", queues=4)
    for queue_id, offset in ((0, 2), (1, 2), (2, 2)):
        await mq.update_offset("Low", "CorrE", queue_id, offset)
    for queue_id, offset in ((0, 1), (1, 2), (2, 3)):
        await mq.update_offset("CorrE", "Cmp", queue_id, offset)  # under Cmp@CorrE, the key 4.9.7 compares
    assert await correction(mq, "CorrE", "Cmp") == {0: LONG_MAX, 1: 2, 2: 2}


async def test_requests_without_their_required_fields_are_refused(mq) -> None:
    for code, fields in ((RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "Src", "topic": "T"}),
                         (RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T"})):
        answer = await mq.client.invoke(mq.addr, RemotingCommand.request(code, fields), 5.0)
        assert answer.code == ResponseCode.SYSTEM_ERROR, answer
