"""mqadmin's message queries, sends and consumes on pocketmq and on Apache RocketMQ 4.9.7, then its offset
commands (a reset the package's later modules see: conftest.py)."""

from __future__ import annotations

import pytest

from pocketmq.cli import main as pocketmq_main
from pocketmq.client import (
    Message,
    SyncProducer,
)
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.differential import call, request

from .sides import (
    ATTEMPTS,
    BROKER_ADDED,
    CLUSTER,
    GROUP,
    MESSAGES,
    QUEUES,
    SLOW_OK,
    SUFFIX,
    TOPIC,
    Mqadmin,
    Side,
    consumed,
    message_rows,
    properties,
    raw_properties,
    rows,
    wait_no_lag,
)

# --- messages -------------------------------------------------------------------------------------------------


def test_query_msg_by_id(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "queryMsgById", "-i", lambda s: s.offset_msg_ids[3])
    assert message_rows(pocket) == message_rows(apache)
    assert properties(pocket) == properties(apache) == {"KEYS": "key3", "UNIQ_KEY": "ID", "TAGS": "TagA"}
    # What properties() leaves out, as each broker stored it: 4.9.7 adds CLUSTER and drops the producer's WAIT
    # (its MSG_REGION and TRACE_ON go in the send's answer, not the message); pocketmq keeps WAIT as sent and
    # stamps the two as 5.x does.
    theirs, mine = (set(raw_properties(text)) & set(BROKER_ADDED) for text in (apache, pocket))
    assert theirs == {"CLUSTER"} and raw_properties(apache)["CLUSTER"] == CLUSTER
    assert mine == {"WAIT", "MSG_REGION", "TRACE_ON"} and raw_properties(pocket)["WAIT"] == "true"
    assert ["Queue", "ID:", "3"] in rows(pocket)
    track = rows(pocket)[-1]
    assert track[:2] == ["MessageTrack", "[consumerGroup=" + GROUP + ","]
    assert track[2] in ("trackType=CONSUMED,", "trackType=UNKNOWN,")  # UNKNOWN: a lookup that timed out


def test_query_msg_by_key_and_unique_key(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    apache, pocket = mqadmin.both(sides, "queryMsgByKey", "-t", TOPIC, "-k", "key5")
    assert rows(pocket) == rows(apache) == [["#Message", "ID", "#QID", "#Offset"], ["ID", "1", "1"]]
    apache, pocket = mqadmin.both(sides, "queryMsgByUniqueKey", "-t", TOPIC, "-i", lambda s: s.msg_ids[5])
    assert message_rows(pocket) == message_rows(apache)
    assert properties(pocket) == properties(apache)


def test_query_msg_by_key_lists_the_messages_in_log_order(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    # Apache's store sorts what the index finds (newest first) by commit-log offset, and mqadmin prints that order.
    topic = f"MqaKeys{SUFFIX}"
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "3")
    for side in sides:
        producer = side.clients[0]
        assert isinstance(producer, SyncProducer)
        for i in range(3):
            producer.send(Message(topic, f"shared {i}".encode(), keys="shared"),
                          selector=lambda mqs, _m, n: mqs[n], arg=i)
    for _ in range(ATTEMPTS):  # (each broker indexes a message after answering its send)
        apache, pocket = mqadmin.both(sides, "queryMsgByKey", "-t", topic, "-k", "shared")
        if len(rows(pocket)) == len(rows(apache)) == 4:
            break
    assert rows(pocket) == rows(apache) == [["#Message", "ID", "#QID", "#Offset"]] + [["ID", str(q), "0"]
                                                                                     for q in range(3)]


def test_send_message_and_consume_message(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    topic = f"MqaSend{SUFFIX}"
    mqadmin.both(sides, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "2", "-w", "2")
    apache, pocket = mqadmin.both(sides, "sendMessage", "-t", topic, "-p", "hello", "-k", "k1", "-c", "TagB",
                                  "-b", "broker-a", "-i", "1")
    assert rows(pocket) == rows(apache)
    assert rows(pocket)[1][:3] == ["broker-a", "1", "SEND_OK"]
    apache, pocket = mqadmin.both(sides, "consumeMessage", "-t", topic, "-g", f"MqaTools{SUFFIX}")

    assert consumed(pocket) == consumed(apache)
    assert "BODY: hello" in pocket and "queueId=1" in pocket


# --- offsets --------------------------------------------------------------------------------------------------


def test_reset_offset_by_time(sides: tuple[Side, Side], mqadmin: Mqadmin) -> None:
    # The consumer is online: each broker computes the offsets and pushes them to it.
    apache, pocket = mqadmin.both(sides, "resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0")
    assert sorted(rows(pocket)) == sorted(rows(apache))
    assert ["broker-a", "2", "0"] in rows(pocket)
    # Each consumer takes the new offsets after its settle time and consumes everything again; until then its
    # group shows no lag with the old offsets, and the package's later tests would read either.
    for side in sides:
        wait_no_lag(side, mqadmin, lambda side=side: len(side.consumed) >= 2 * MESSAGES)


def _offsets(side: Side, group: str) -> list[str]:
    """The group's offset of each queue of the topic (QUERY_CONSUMER_OFFSET at the side's broker)."""
    return [call(side.broker_addr, request(R.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": TOPIC,
                                                                     "queueId": q})).ext.get("offset", "none")
            for q in range(QUEUES)]


def test_clone_group_offset(sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]) -> None:
    """mqadmin's cloneGroupOffset (each queue of the source group's consume stats committed for the destination,
    UPDATE_CONSUMER_OFFSET): the same line and the same offsets on both servers. Then pocketmq's own command,
    which asks the topic's brokers to clone the topic (CLONE_GROUP_OFFSET), prints mqadmin's line and leaves the
    same offsets."""
    dest, own = f"MqaClone{SUFFIX}", f"MqaCloneOwn{SUFFIX}"
    try:
        for side in sides:
            wait_no_lag(side, mqadmin)  # (the source's offsets settled)
            # (pocketmq refuses a commit for a group it does not have, as 5.x: docs/compatibility.md)
            mqadmin.run(side.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", dest)
        apache, pocket = mqadmin.both(sides, "cloneGroupOffset", "-s", GROUP, "-d", dest, "-t", TOPIC)
        line = f"clone group offset success. srcGroup[{GROUP}], destGroup=[{dest}], topic[{TOPIC}]"
        assert pocket == apache == line  # (mqadmin ends it without a line break)
        cloned = [_offsets(side, dest) for side in sides]
        assert cloned[0] == cloned[1] and all(int(o) > 0 for o in cloned[0]), cloned  # (0: the answer for none)
        assert [_offsets(side, GROUP) for side in sides] == cloned
        capsys.readouterr()
        argv = ["cloneGroupOffset", "-n", sides[1].namesrv_addr, *SLOW_OK, "-s", GROUP, "-d", own, "-t", TOPIC]
        assert pocketmq_main(argv) == 0
        assert capsys.readouterr().out.replace(own, dest) == line + "\n"
        assert _offsets(sides[1], own) == cloned[1]
    finally:
        # The groups consume the topic now (QUERY_TOPIC_CONSUME_BY_WHO): mqadmin's queryMsgById would track the
        # message for them, and print the exception it gets for a group without a retry topic.
        for side, groups in zip(sides, ((dest,), (dest, own)), strict=True):
            for group in groups:
                mqadmin.run(side.namesrv_addr, "deleteSubGroup", "-b", side.broker_addr, "-g", group, "-r", "true")
