"""The POP family's answers to edge-case requests, as Apache RocketMQ 5.5.0 gives them (the same requests sent to
both: tests/apache/test_differential_pop_5.py): a queue id below -1 is every queue; a batch ack without acks; the
TOPIC_NOT_EXIST and SUBSCRIPTION_GROUP_NOT_EXIST remarks with 5.x's FAQ address; a pop of more than 32 messages or
with an expression that does not parse; a change of invisible time at or past the queue's end, and one taken; a
peek's pop time and rest count; the header fields a refusal still carries."""

from __future__ import annotations

import asyncio
import time

from broker_harness import MQ, Cluster
from pop_wire import PopClient

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode_all
from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.pop_header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from pocketmq.remoting.wire_protocol import WireProtocol

FAQ_5 = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
UNSET = "not set any response code"
BLANK_POP = {"popTime": 0, "invisibleTime": 0, "reviveQid": 0, "restNum": 0}
BLANK_CHANGE = {"popTime": 0, "invisibleTime": 0, "reviveQid": 0}


def client(cluster: Cluster, broker: BrokerController, protocol: WireProtocol = WireProtocol.MSGPACK) -> PopClient:
    rc = RemotingClient(wire_protocol=protocol)
    cluster.clients.append(rc)
    return PopClient(MQ(rc, broker.address), broker.broker_config.broker_name, protocol == WireProtocol.NATIVE)


async def send(pc: PopClient, topic: str, bodies: list[bytes], queue_id: int = 0) -> None:
    for body in bodies:
        assert (await pc.mq.send(topic, body, queue_id=queue_id)).code == ResponseCode.SUCCESS


async def dispatched(broker: BrokerController) -> None:
    assert await asyncio.to_thread(broker.store.wait_dispatched, 5.0)


def _now() -> int:
    return time.time_ns() // 1_000_000


def _handle(topic: str, offset: int) -> str:
    return build_extra_info(offset, _now(), 60_000, 0, topic, "broker", 0, offset)


async def test_a_queue_id_below_minus_one_is_every_queue_for_pop_notification_and_peek(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Below", 4)
    await send(pc, "Below", [b"q0"], queue_id=0)
    await send(pc, "Below", [b"q2"], queue_id=2)
    await dispatched(broker)
    note = await pc.mq.invoke(RequestCode.NOTIFICATION, NotificationRequestHeader("GN", "Below", -2, 0, _now()))
    assert (note.code, note.remark) == (ResponseCode.SUCCESS, UNSET)
    assert note.decode_header(NotificationResponseHeader).has_msg is True
    peek = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("Below", -5, 32, "GN"))
    assert peek.code == ResponseCode.SUCCESS
    popped = await pc.pop("G", "Below", -2)
    assert sorted(popped.bodies) == [b"q0", b"q2"]
    await pc.ack_all("G", "Below", popped)


async def test_a_parked_pop_of_a_queue_id_below_minus_one_is_woken_by_an_arrival(cluster: Cluster) -> None:
    # (5.5.0 parks it under its own queue id, which no arrival names: it waits out its poll time)
    broker = await cluster.broker()
    pc = client(cluster, broker)
    producer = client(cluster, broker)
    await pc.mq.create_topic("Parked", 4)
    started = time.monotonic()
    parked = asyncio.ensure_future(pc.pop("G", "Parked", -3, poll=20_000))
    await asyncio.sleep(0.3)
    await send(producer, "Parked", [b"late"], queue_id=1)
    popped = await parked
    assert popped.bodies == [b"late"] and time.monotonic() - started < 10


async def test_a_batch_ack_without_acks_is_no_message_without_a_remark(cluster: Cluster) -> None:
    broker = await cluster.broker()
    for protocol, bodies in ((WireProtocol.NATIVE, (None, b"", b"{}", b'{"brokerName":"broker","acks":[]}')),
                             (WireProtocol.MSGPACK, (None, b"", b"\x80"))):
        pc = client(cluster, broker, protocol)
        for body in bodies:
            answer = await pc.mq.invoke(RequestCode.BATCH_ACK_MESSAGE, None, body)
            assert (answer.code, answer.remark) == (ResponseCode.NO_MESSAGE, None), (protocol, body, answer)


async def test_the_pop_familys_topic_not_exist_remark_points_at_5x_faq(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, WireProtocol.NATIVE)
    missing = "NoSuchTopic"
    answers = {
        "pop": (await pc.pop("G", missing)).response,
        "peek": await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader(missing, -1, 32, "G")),
        "notification": await pc.mq.invoke(RequestCode.NOTIFICATION,
                                           NotificationRequestHeader("G", missing, -1, 0, _now())),
        "ack": await pc.mq.invoke(RequestCode.ACK_MESSAGE,
                                  AckMessageRequestHeader("G", missing, 0, _handle(missing, 0), 0)),
        "change": await pc.mq.invoke(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ChangeInvisibleTimeRequestHeader(
            "G", missing, 0, _handle(missing, 0), 0, 1000)),
    }
    for name, answer in answers.items():
        assert (answer.code, answer.remark) == (
            ResponseCode.TOPIC_NOT_EXIST, f"topic[{missing}] not exist, apply first please! {FAQ_5}"), name
    # (5.5.0 builds these answers from their header class first: a refusal carries its fields at 0 and false)
    assert _ints(answers["pop"]) == _ints(answers["peek"]) == BLANK_POP
    assert _ints(answers["change"]) == BLANK_CHANGE
    assert answers["notification"].ext_fields == {"hasMsg": "false", "pollingFull": "false"}
    assert answers["ack"].ext_fields == {}


async def test_a_pop_of_more_than_32_or_with_an_expression_that_does_not_parse_is_refused_as_5x(
    cluster: Cluster
) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Refused", 1)
    too_many = (await pc.pop("G", "Refused", max_nums=33)).response
    assert (too_many.code, too_many.remark) == (
        ResponseCode.INVALID_PARAMETER, "the broker[127.0.0.1] pop message's num is greater than 32")
    assert _ints(too_many) == BLANK_POP
    for exp, exp_type in (("a >>> 1", "SQL92"), ("||", "TAG")):
        bad = (await pc.pop("G", "Refused", exp=exp, exp_type=exp_type)).response
        assert (bad.code, bad.remark) == (
            ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"), exp


async def test_a_change_of_invisible_time_at_or_past_the_queues_end_is_no_message_with_no_remark_set(
    cluster: Cluster
) -> None:
    """5.5.0's ChangeInvisibleTimeProcessor sets NO_MESSAGE and no remark for offset >= maxOffset; an ack of the
    max offset is taken (it matches nothing), one past it refused with the offsets named."""
    broker = await cluster.broker()
    pc: PopClient = client(cluster, broker)
    await pc.mq.create_topic("End", 1)
    await send(pc, "End", [b"m0", b"m1"])
    await dispatched(broker)
    for offset in (2, 9, -1):
        answer = await pc.mq.invoke(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ChangeInvisibleTimeRequestHeader(
            "G", "End", 0, _handle("End", offset), offset, 1000))
        assert (answer.code, answer.remark, _ints(answer)) == (ResponseCode.NO_MESSAGE, UNSET, BLANK_CHANGE), offset
    acks = [await pc.mq.invoke(RequestCode.ACK_MESSAGE, AckMessageRequestHeader("G", "End", 0, _handle("End", o), o))
            for o in (2, 3)]
    assert [(a.code, a.remark) for a in acks] == [
        (ResponseCode.SUCCESS, None), (ResponseCode.NO_MESSAGE, "offset is illegal, key:End@0, commit:3, store:0~2")]


async def test_a_peek_answers_pop_time_0_and_what_the_queues_held_before_it(cluster: Cluster) -> None:
    """Nothing is popped by a peek: 5.5.0 sets no pop time, and counts the messages from the group's offsets on
    before it reads, those it returns included."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Peeked", 2)
    await send(pc, "Peeked", [b"a0", b"a1", b"a2"], queue_id=0)
    await send(pc, "Peeked", [b"b0"], queue_id=1)
    await dispatched(broker)

    async def peek(queue_id: int, max_nums: int) -> tuple[RemotingCommand, list[bytes]]:
        answer = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("Peeked", queue_id, max_nums,
                                                                                      "G"))
        return answer, [m.body for m in decode_all(answer.body)] if answer.body else []

    one, bodies = await peek(0, 1)
    assert (one.code, bodies, one.decode_header(PopMessageResponseHeader)) == (
        ResponseCode.SUCCESS, [b"a0"], PopMessageResponseHeader(0, 0, 0, 3))
    every, bodies = await peek(-1, 32)
    assert sorted(bodies) == [b"a0", b"a1", b"a2", b"b0"]
    assert every.decode_header(PopMessageResponseHeader) == PopMessageResponseHeader(0, 0, 0, 4)
    popped = await pc.pop("G", "Peeked", 0, max_nums=2)
    assert popped.bodies == [b"a0", b"a1"]
    after, bodies = await peek(-1, 32)
    assert sorted(bodies) == [b"a2", b"b0"]
    assert after.decode_header(PopMessageResponseHeader) == PopMessageResponseHeader(0, 0, 0, 2)
    await pc.ack_all("G", "Peeked", popped)
    await pc.ack_all("G", "Peeked", await pc.pop("G", "Peeked"))
    empty, bodies = await peek(-1, 32)
    assert (empty.code, bodies, empty.decode_header(PopMessageResponseHeader)) == (
        ResponseCode.PULL_NOT_FOUND, [], PopMessageResponseHeader(0, 0, 0, 0))


async def test_a_peek_of_0_or_more_than_32_messages_is_served_and_a_negative_count_refused(cluster: Cluster) -> None:
    """5.5.0's peek has no bound of 32 (a pop's): 33 or 2^31 - 1 are served, each queue read as far as the store
    reads at once; 0 reads nothing and still counts what is there (PULL_NOT_FOUND). Found by
    tests/apache/test_differential_fuzz_pop_5.py; pocketmq refused each with INVALID_PARAMETER."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("PeekMany", 2)
    await send(pc, "PeekMany", [b"a%d" % i for i in range(40)], queue_id=0)
    await send(pc, "PeekMany", [b"b0"], queue_id=1)
    await dispatched(broker)
    in_memory = broker.store.config.max_transfer_count_on_message_in_memory
    for max_nums in (33, 2**31 - 1):
        answer = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("PeekMany", -1, max_nums, "G"))
        assert answer.code == ResponseCode.SUCCESS
        assert len(decode_all(answer.body)) == min(max_nums, in_memory + 1)  # (queue 0's first read, queue 1's one)
        assert answer.decode_header(PopMessageResponseHeader) == PopMessageResponseHeader(0, 0, 0, 41)
    none = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("PeekMany", -1, 0, "G"))
    assert (none.code, none.body, none.decode_header(PopMessageResponseHeader)) == (
        ResponseCode.PULL_NOT_FOUND, None, PopMessageResponseHeader(0, 0, 0, 41))
    negative = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("PeekMany", -1, -1, "G"))
    assert negative.code == ResponseCode.INVALID_PARAMETER


async def test_a_bad_count_or_time_is_refused_after_the_topic_queue_group_and_filter_checks(cluster: Cluster) -> None:
    """pocketmq's own refusals of a pop's count and times, and of a peek's negative count, come where 5.5.0 fails
    or parks on them: after its checks, so a missing topic, a queue past the topic's or a filter that does not
    parse answers as on 5.5.0. Found by tests/apache/test_differential_fuzz_pop_5.py."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Counted", 1)
    now = _now()
    bad_pops = [PopMessageRequestHeader("G", "Counted", 0, 0, 60_000, 0, now, 0),
                PopMessageRequestHeader("G", "Counted", 0, 1, -1, 0, now, 0),
                PopMessageRequestHeader("G", "Counted", 0, -1, 60_000, -1, now, 0)]
    for header in bad_pops:
        assert (await pc.mq.invoke(RequestCode.POP_MESSAGE, header)).code == ResponseCode.INVALID_PARAMETER
        header.topic = "NoSuchCounted"
        assert (await pc.mq.invoke(RequestCode.POP_MESSAGE, header)).code == ResponseCode.TOPIC_NOT_EXIST
        header.topic, header.queue_id = "Counted", 1
        assert (await pc.mq.invoke(RequestCode.POP_MESSAGE, header)).code == ResponseCode.INVALID_PARAMETER
        header.queue_id, header.exp, header.exp_type = 0, "a >>> 1", "SQL92"
        assert (await pc.mq.invoke(RequestCode.POP_MESSAGE, header)).code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    peek = await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("NoSuchCounted", 0, -1, "G"))
    assert peek.code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_handle_that_does_not_parse_is_refused_after_the_topic_queue_and_offset_checks(cluster: Cluster
                                                                                              ) -> None:
    """5.5.0 reads an ack's or a change's receipt handle only after checking the topic, the queue id and the offset
    (and fails on one that does not parse: SYSTEM_ERROR; pocketmq's INVALID_PARAMETER). Found by
    tests/apache/test_differential_fuzz_pop_5.py: pocketmq refused the handle first."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Handled", 1)
    await send(pc, "Handled", [b"m"])
    await dispatched(broker)
    await pc.mq.create_topic("Unwritten", 1)
    for bad in ("", "1 2 3", "a b c d e f g h"):
        expected = {("NoSuchHandled", 0, 0): ResponseCode.TOPIC_NOT_EXIST,
                    ("Handled", 1, 0): ResponseCode.MESSAGE_ILLEGAL,
                    ("Handled", 0, 5): ResponseCode.NO_MESSAGE,
                    ("Unwritten", 0, -1): ResponseCode.NO_MESSAGE,  # (a queue never written to holds 0 to 0)
                    ("Handled", 0, 0): ResponseCode.INVALID_PARAMETER}
        for (topic, queue_id, offset), code in expected.items():
            ack = await pc.mq.invoke(RequestCode.ACK_MESSAGE, AckMessageRequestHeader("G", topic, queue_id, bad,
                                                                                       offset))
            change = await pc.mq.invoke(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, ChangeInvisibleTimeRequestHeader(
                "G", topic, queue_id, bad, offset, 1_000))
            assert (ack.code, change.code) == (code, code), (bad, topic, queue_id, offset)


async def test_the_pop_familys_group_not_exist_remark_points_at_5x_faq(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, WireProtocol.NATIVE)
    await pc.mq.create_topic("Grouped", 1)
    bad = "Bad!Group"  # (no group character: not created, though unknown groups are)
    answers = {
        "pop": (await pc.pop(bad, "Grouped")).response,
        "peek": await pc.mq.invoke(RequestCode.PEEK_MESSAGE, PeekMessageRequestHeader("Grouped", -1, 32, bad)),
        "notification": await pc.mq.invoke(RequestCode.NOTIFICATION,
                                           NotificationRequestHeader(bad, "Grouped", -1, 0, _now())),
        "polling info": await pc.mq.invoke(RequestCode.POLLING_INFO, PollingInfoRequestHeader(bad, "Grouped", 0)),
    }
    for name, answer in answers.items():
        assert (answer.code, answer.remark) == (
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{bad}] does not exist, {FAQ_5}"), name


async def test_a_change_of_invisible_time_taken_keeps_5x_unset_remark(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("Taken", 1)
    await send(pc, "Taken", [b"n0", b"n1"])
    await dispatched(broker)
    normal = await pc.pop("G", "Taken", max_nums=1)
    answer, _ = await pc.change_invisible("G", "Taken", normal.handles[0], 30_000)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, UNSET)
    assert answer.decode_header(ChangeInvisibleTimeResponseHeader).invisible_time == 30_000
    orderly = await pc.pop("GO", "Taken", max_nums=1, order=True)
    assert orderly.bodies == [b"n0"]
    answer, _ = await pc.change_invisible("GO", "Taken", orderly.handles[0], 30_000)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, UNSET)


async def test_a_polling_info_refusal_carries_polling_num_0(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, WireProtocol.NATIVE)
    await pc.mq.create_topic("Polled", 1)
    await pc.mq.create_topic("PolledWriteOnly", 1, perm=2)
    refused = [await pc.mq.invoke(RequestCode.POLLING_INFO, PollingInfoRequestHeader(group, topic, queue_id))
               for group, topic, queue_id in (("G", "NoSuchTopic", 0), ("G", "Polled", 1), ("Bad!Group", "Polled", 0),
                                              ("G", "PolledWriteOnly", 0))]
    assert [a.code for a in refused] == [ResponseCode.TOPIC_NOT_EXIST, ResponseCode.INVALID_PARAMETER,
                                         ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, ResponseCode.NO_PERMISSION]
    assert [a.ext_fields for a in refused] == [{"pollingNum": "0"}] * 4


def _ints(answer: RemotingCommand) -> dict[str, int]:
    return {k: int(str(v)) for k, v in answer.ext_fields.items()}


async def test_a_polling_info_answered_keeps_5x_unset_remark(cluster: Cluster) -> None:
    broker = await cluster.broker()
    pc = client(cluster, broker, WireProtocol.NATIVE)
    await pc.mq.create_topic("PolledOk", 1)
    answer = await pc.mq.invoke(RequestCode.POLLING_INFO, PollingInfoRequestHeader("G", "PolledOk", 0))
    assert (answer.code, answer.remark, answer.ext_fields) == (ResponseCode.SUCCESS, UNSET, {"pollingNum": "0"})


async def test_an_orderly_change_of_invisible_time_of_an_acked_offset_answers_every_field_0(cluster: Cluster) -> None:
    """5.5.0 changes nothing for an offset below the group's and answers its response header as built."""
    broker = await cluster.broker()
    pc = client(cluster, broker)
    await pc.mq.create_topic("OrderAcked", 1)
    await send(pc, "OrderAcked", [b"o0", b"o1"])
    await dispatched(broker)
    popped = await pc.pop("GO", "OrderAcked", max_nums=1, order=True)
    assert popped.bodies == [b"o0"]
    await pc.ack_all("GO", "OrderAcked", popped)
    answer, _ = await pc.change_invisible("GO", "OrderAcked", popped.handles[0], 30_000)
    assert (answer.code, answer.remark, _ints(answer)) == (ResponseCode.SUCCESS, UNSET, BLANK_CHANGE)
