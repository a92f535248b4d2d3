"""RESUME_CHECK_HALF_MESSAGE (323), as RocketMQ 4.9.7's AdminBrokerProcessor.resumeCheckHalfMessage answers it: the
message an offsetMsgId names is written to the half queue again with TRANSACTION_CHECK_TIMES 0, so the check asks
its producer about it again. A real TransactionProducer on a real cluster whose check runs every 20 ms."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from pocketmq.broker.processor.admin_transaction_processor import NOT_FOUND, PUT_FAILED
from pocketmq.client import (
    LocalTransactionState,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PullStatus,
    TransactionProducer,
)
from pocketmq.client.admin.mq_admin_ext import MQAdminExt
from pocketmq.common.codec import commit_log_offset_of, decode_all, decode_message_id
from pocketmq.common.constants import (
    COMPRESSED_FLAG,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
)
from pocketmq.common.message import MessageExt as StoredMessage
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transaction_header import ResumeCheckHalfMessageRequestHeader

TOPIC, PRODUCER_GROUP = "ResumeT", "ResumePG"
CHECK_MAX = 2
GUARD = 30.0
UNKNOW, COMMIT = LocalTransactionState.UNKNOW, LocalTransactionState.COMMIT_MESSAGE


@pytest.fixture
async def cluster(tmp_path: Any) -> AsyncIterator[EmbeddedCluster]:
    # A half message is due at once, a check pass every 20 ms, and given up on after two questions.
    async with EmbeddedCluster(tmp_path, transaction_timeout=0.0, transaction_check_interval=0.02,
                               transaction_check_max=CHECK_MAX) as c:
        assert c.broker is not None
        c.broker.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 1, 1, 6))
        await c.broker.register_broker_all()
        yield c


class Listener:
    """Leaves every transaction undecided until ``check`` says otherwise; counts the questions."""

    def __init__(self) -> None:
        self.check = UNKNOW
        self.checked: list[bytes] = []

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.checked.append(msg.body)
        return self.check


async def until(predicate: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + GUARD
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def stored(cluster: EmbeddedCluster, topic: str) -> list[StoredMessage]:
    await cluster.wait_dispatched()
    return decode_all(cluster.store.get_message("test", topic, 0, 0, 1000).body)


async def delivered(cluster: EmbeddedCluster) -> list[bytes]:
    async with PullConsumer("ResumeCG", cluster.namesrv_addr, instance_name="resume-c") as consumer:
        [mq] = await consumer.fetch_subscribe_message_queues(TOPIC)
        result = await consumer.pull(mq, "*", 0, 32)
        return [m.body for m in result.msg_found_list] if result.pull_status is PullStatus.FOUND else []


async def resume(cluster: EmbeddedCluster, msg_id: str | None) -> RemotingCommand:
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.RESUME_CHECK_HALF_MESSAGE,
                                          ResumeCheckHalfMessageRequestHeader(msg_id))
        return await client.invoke(cluster.broker_addr, request, GUARD)
    finally:
        await client.close()


async def test_a_half_message_the_check_gave_up_on_is_checked_again_after_its_resume(
        cluster: EmbeddedCluster) -> None:
    broker = cluster.broker
    assert broker is not None
    service, checks = broker.transactional_message_service, broker.transactional_message_check_service
    listener = Listener()
    async with TransactionProducer(PRODUCER_GROUP, cluster.namesrv_addr, listener, instance_name="resume-p",
                                   heartbeat_broker_interval=0.1) as producer:
        await producer.send_message_in_transaction(Message(TOPIC, b"undecided"))
        # (a pass puts its copy back before it asks: the last question may still be on its way)
        await until(lambda: service.discarded == 1 and len(listener.checked) == CHECK_MAX)
        rounds = checks.rounds
        await until(lambda: checks.rounds >= rounds + 5)
        assert len(listener.checked) == CHECK_MAX  # given up on: never asked again by itself
        [kept] = await stored(cluster, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        listener.check = COMMIT
        async with MQAdminExt(cluster.namesrv_addr) as admin:
            assert await admin.resume_check_half_message(kept.offset_msg_id)
        # Asked again, the producer commits it: delivered. (A pass 20 ms later may ask again before the commit's
        # op is dispatched and commit a second copy, RocketMQ's at-least-once check: one delivery per answer.)
        await until(lambda: len(listener.checked) >= CHECK_MAX + 1)
        for _ in range(200):
            if await delivered(cluster):
                break
            await asyncio.sleep(0.02)
        bodies = await delivered(cluster)
        assert bodies and set(bodies) == {b"undecided"} and set(listener.checked) == {b"undecided"}
        assert len(bodies) <= len(listener.checked) - CHECK_MAX
        # (service.discarded may have grown: a pass's own put-back copy of a message committed meanwhile is given up
        # on when its op comes later than the pass, as in RocketMQ; what counts is the delivery above)


async def test_the_copy_is_the_message_with_its_check_count_at_zero(tmp_path: Any) -> None:
    # No check of the broker's own here (an hour apart): the copy is the last record of the half queue.
    async with EmbeddedCluster(tmp_path, transaction_check_interval=3600.0) as cluster:
        async with TransactionProducer(PRODUCER_GROUP, cluster.namesrv_addr, Listener(),
                                       instance_name="resume-copy") as producer:
            sent = await producer.send_message_in_transaction(Message(TOPIC, b"half", tags="TagH", keys="K1"))
        [half] = await stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
        assert sent.offset_msg_id == half.offset_msg_id
        assert (await resume(cluster, half.offset_msg_id)).code == ResponseCode.SUCCESS
        first, copy = await stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)
        assert first.offset_msg_id == half.offset_msg_id
        assert copy.properties == {**half.properties, "TRANSACTION_CHECK_TIMES": "0"}
        assert (copy.topic, copy.queue_id, copy.queue_offset) == (RMQ_SYS_TRANS_HALF_TOPIC, 0, 1)
        assert (copy.body, copy.flag, copy.sys_flag, copy.born_timestamp, copy.born_host, copy.store_host) == (
            half.body, half.flag, half.sys_flag, half.born_timestamp, half.born_host, half.store_host)
        # Any message is taken, as by RocketMQ (nothing says it was a half message): a plain one too.
        async with Producer("ResumePlainPG", cluster.namesrv_addr, instance_name="resume-plain") as plain:
            result = await plain.send(Message(TOPIC, b"plain"))
        assert (await resume(cluster, result.offset_msg_id)).code == ResponseCode.SUCCESS
        assert [m.body for m in await stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC)] == [b"half", b"half", b"plain"]


async def test_a_compressed_half_message_is_delivered_whole_after_its_resume(cluster: EmbeddedCluster) -> None:
    # The producer compresses a body past 4 KiB: the copy keeps the body as stored, compressed, with its flag.
    # (4.9.7's copy has the body inflated and the flag kept: its consumers cannot read the committed message.)
    broker = cluster.broker
    assert broker is not None
    body = b"a compressible body " * 1000
    listener = Listener()
    async with TransactionProducer(PRODUCER_GROUP, cluster.namesrv_addr, listener, instance_name="resume-zip",
                                   heartbeat_broker_interval=0.1) as producer:
        await producer.send_message_in_transaction(Message(TOPIC, body))
        await until(lambda: broker.transactional_message_service.discarded == 1)
        [kept] = await stored(cluster, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC)
        assert kept.sys_flag & COMPRESSED_FLAG and kept.body != body
        listener.check = COMMIT
        assert (await resume(cluster, kept.offset_msg_id)).code == ResponseCode.SUCCESS
        for _ in range(500):
            if await delivered(cluster):
                break
            await asyncio.sleep(0.02)
        bodies = await delivered(cluster)  # (twice when a second pass asks before the commit's op, as in RocketMQ)
        assert bodies and set(bodies) == {body} and len(bodies) <= len(listener.checked) - CHECK_MAX


async def test_a_message_resumed_on_a_broker_without_a_half_queue_is_checked(cluster: EmbeddedCluster) -> None:
    # No half message was ever sent here, so the broker has no half topic yet: RocketMQ's check makes it at its
    # next pass and finds the copy there. A plain message naming a producer group is asked about as a half one.
    broker = cluster.broker
    assert broker is not None
    assert broker.topic_config_manager.select_topic_config(RMQ_SYS_TRANS_HALF_TOPIC) is None
    listener = Listener()
    listener.check = COMMIT
    async with TransactionProducer(PRODUCER_GROUP, cluster.namesrv_addr, listener, instance_name="resume-nohalf",
                                   heartbeat_broker_interval=0.1):
        async with Producer("ResumeOrphanPG", cluster.namesrv_addr, instance_name="resume-orphan") as plain:
            msg = Message(TOPIC, b"orphan")
            msg.properties.update({PROPERTY_PRODUCER_GROUP: PRODUCER_GROUP, PROPERTY_REAL_TOPIC: TOPIC,
                                   PROPERTY_REAL_QUEUE_ID: "0"})
            result = await plain.send(msg)
        assert (await resume(cluster, result.offset_msg_id)).code == ResponseCode.SUCCESS
        await until(lambda: b"orphan" in listener.checked)
        # Committed: published to its real topic again, after the plain message itself.
        for _ in range(200):
            if len(await delivered(cluster)) >= 2:
                break
            await asyncio.sleep(0.02)
        bodies = await delivered(cluster)
        assert len(bodies) >= 2 and set(bodies) == {b"orphan"}


def offset_msg_id(offset: int, port: int = 10911, ip: str = "7F000001") -> str:
    return f"{ip}{port:08X}{offset:016X}"


async def test_an_id_that_names_no_message_is_refused(cluster: EmbeddedCluster) -> None:
    async with Producer("ResumePlainPG", cluster.namesrv_addr, instance_name="resume-refused") as plain:
        result = await plain.send(Message(TOPIC, b"plain"))
    _, offset = decode_message_id(result.offset_msg_id)
    refused = [
        None, "", "nonsense", result.offset_msg_id[:-1],  # no id, or one too short to read
        offset_msg_id(offset + 1),  # inside the message
        offset_msg_id(2**40),  # past the commit log
        offset_msg_id(-1 & 0xFFFFFFFFFFFFFFFF),  # a negative offset
        offset_msg_id(offset, port=70000),  # a port out of range
    ]
    for msg_id in refused:
        answer = await resume(cluster, msg_id)
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, NOT_FOUND), msg_id
    assert await stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC) == []


async def test_a_copy_the_store_cannot_take_is_refused(cluster: EmbeddedCluster) -> None:
    # Properties just under the store's limit: the count the copy adds takes them over it.
    async with Producer("ResumeBigPG", cluster.namesrv_addr, instance_name="resume-big") as producer:
        pad = 32767 - 40
        while True:
            msg = Message(TOPIC, b"big")
            msg.properties["PAD"] = "x" * pad
            try:
                result = await producer.send(msg)
                break
            except Exception:  # noqa: BLE001 (too big for the store: one byte less)
                pad -= 1
    answer = await resume(cluster, result.offset_msg_id)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, PUT_FAILED)
    assert await stored(cluster, RMQ_SYS_TRANS_HALF_TOPIC) == []


@pytest.mark.parametrize(("msg_id", "offset"), [
    ("7F00000100002A9F0000000000001234", 0x1234),  # IPv4: 32 characters
    ("7f00000100002a9f0000000000001234", 0x1234),  # lower case
    ("7F00000100002A9F0000000000001234" + "ZZ", None),  # 34 characters: read as IPv6, too short
    ("00" * 16 + "00002A9F" + "0000000000005678" + "tail", 0x5678),  # IPv6, the text after it ignored
    ("ZZZZZZZZ00002A9F0000000000000042", 0x42),  # an address that is no hex: ignored, as the broker is
    ("7F000001FFFFFFFF0000000000000042", None),  # port -1
    ("7F00000100002A9FZZ00000000000042", -0xFFFFFFFFFFFFBE),  # no hex digit reads as -1 in the offset
])
def test_the_offset_is_read_from_an_id_as_rocketmq_reads_it(msg_id: str, offset: int | None) -> None:
    assert commit_log_offset_of(msg_id) == offset
