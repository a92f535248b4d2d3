"""The broker's side of transactional messages, request by request over a raw connection, in both codecs: the
half message a prepared send stores, END_TRANSACTION's checks and writes, and the CHECK_TRANSACTION_STATE the
broker sends a producer of the group (in that producer's connection's codec)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from broker_harness import MQ, Cluster

from pocketmq.broker import BrokerController
from pocketmq.common.codec import decode, decode_all, decode_message_id
from pocketmq.common.constants import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TYPE_MASK,
)
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_HALF_TOPIC
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import HeartbeatData, ProducerData
from pocketmq.remoting.codes import RequestCode, ResponseCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingTimeoutError
from pocketmq.remoting.header import SendMessageResponseHeader
from pocketmq.remoting.transaction_header import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from pocketmq.remoting.transport import Channel
from pocketmq.remoting.wire_protocol import WireProtocol

PROTOCOLS = pytest.mark.parametrize("protocol", [WireProtocol.MSGPACK, WireProtocol.NATIVE])


def wire(cluster: Cluster, broker: BrokerController, protocol: WireProtocol) -> MQ:
    client = RemotingClient(wire_protocol=protocol)
    cluster.clients.append(client)
    return MQ(client, broker.address)


async def send_half(mq: MQ, topic: str, body: bytes = b"half", group: str = "TxnPG", queue_id: int = 1) -> Any:
    response = await mq.send(topic, body, queue_id=queue_id, sys_flag=TRANSACTION_PREPARED_TYPE,
                             properties=mq.props("T", UNIQ_KEY=f"U-{body.decode()}", TRAN_MSG="true", PGROUP=group))
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.decode_header(SendMessageResponseHeader)


def end(sent: Any, state: int, group: str = "TxnPG", **overrides: Any) -> EndTransactionRequestHeader:
    fields: dict[str, Any] = dict(
        producer_group=group, tran_state_table_offset=sent.queue_offset,
        commit_log_offset=decode_message_id(sent.msg_id)[1], commit_or_rollback=state, msg_id="U",
    )
    fields.update(overrides)
    return EndTransactionRequestHeader(**fields)


async def records(broker: BrokerController, topic: str, queue_id: int) -> list[Any]:
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    return decode_all(broker.store.get_message("t", topic, queue_id, 0, 100).body)


@PROTOCOLS
async def test_a_prepared_send_is_a_half_message_and_commit_writes_the_real_one(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker(transaction_check_interval=600)
    mq = wire(cluster, broker, protocol)
    assert (await mq.create_topic("TxnT", 4)).code == ResponseCode.SUCCESS
    sent = await send_half(mq, "TxnT", queue_id=3)
    assert sent.queue_id == 3  # the queue asked for, not the half queue's
    assert await records(broker, "TxnT", 3) == []
    [half] = await records(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert half.commit_log_offset == decode_message_id(sent.msg_id)[1] and half.queue_offset == sent.queue_offset
    assert (half.properties["REAL_TOPIC"], half.properties["REAL_QID"]) == ("TxnT", "3")
    assert half.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_NOT_TYPE

    answer = await mq.invoke(RequestCode.END_TRANSACTION, end(sent, TRANSACTION_COMMIT_TYPE))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    [real] = await records(broker, "TxnT", 3)
    assert (real.body, real.tags, real.uniq_key) == (b"half", "T", "U-half")
    assert real.sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_COMMIT_TYPE
    assert real.prepared_transaction_offset == half.commit_log_offset
    assert real.born_timestamp == half.born_timestamp


async def test_tran_msg_true_in_any_case_makes_a_half_message(cluster: Cluster) -> None:
    # Apache 4.9.7 reads TRAN_MSG with Boolean.parseBoolean: "TRUE" or "True" is a transactional send (a half
    # message), whatever the sysFlag says; any other text is none
    broker = await cluster.broker(transaction_check_interval=600)
    mq = wire(cluster, broker, WireProtocol.NATIVE)
    assert (await mq.create_topic("TxnCase", 4)).code == ResponseCode.SUCCESS
    for i, value in enumerate(["TRUE", "True", "yes", "1"]):
        props = mq.props("T", UNIQ_KEY=f"U-{i}", TRAN_MSG=value, PGROUP="TxnPG")
        answer = await mq.send("TxnCase", value.encode(), queue_id=1, properties=props)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert [m.body for m in await records(broker, "TxnCase", 1)] == [b"yes", b"1"]
    halves = await records(broker, RMQ_SYS_TRANS_HALF_TOPIC, 0)
    assert [(m.body, m.properties["REAL_TOPIC"]) for m in halves] == [(b"TRUE", "TxnCase"), (b"True", "TxnCase")]


@PROTOCOLS
async def test_end_transaction_refuses_what_does_not_match_the_half_message(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    broker = await cluster.broker(transaction_check_interval=600)
    mq = wire(cluster, broker, protocol)
    sent = await send_half(mq, "TxnT", queue_id=0)
    plain = (await mq.send("TxnT", b"plain")).decode_header(SendMessageResponseHeader)
    cases = [
        (end(sent, TRANSACTION_COMMIT_TYPE, group="OtherPG"), "The producer group wrong"),
        (end(sent, TRANSACTION_COMMIT_TYPE, tran_state_table_offset=7), "The transaction state table offset wrong"),
        (end(sent, TRANSACTION_ROLLBACK_TYPE, commit_log_offset=decode_message_id(plain.msg_id)[1]),
         "Find prepared transaction message failed"),  # (a record, but not a half message)
        (end(sent, TRANSACTION_COMMIT_TYPE, commit_log_offset=1 << 40), "Find prepared transaction message failed"),
        (end(sent, TRANSACTION_COMMIT_TYPE, commit_log_offset=-1), "Find prepared transaction message failed"),
        (end(sent, TRANSACTION_COMMIT_TYPE, commit_log_offset=decode_message_id(sent.msg_id)[1] + 5),
         "Find prepared transaction message failed"),  # (inside the record)
        (end(sent, 5), "commitOrRollback 5"),
    ]
    for header, remark in cases:
        answer = await mq.invoke(RequestCode.END_TRANSACTION, header)
        assert answer.code == ResponseCode.SYSTEM_ERROR and remark in (answer.remark or ""), (header, answer)
    assert [m.body for m in await records(broker, "TxnT", 0)] == [b"plain"]
    assert broker.end_transaction_processor.committed == broker.end_transaction_processor.rolled_back == 0
    # Rollback: no real message, an op record; the remark 4.9.7 leaves unset on its answer
    answer = await mq.invoke(RequestCode.END_TRANSACTION, end(sent, TRANSACTION_ROLLBACK_TYPE))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "not set any response code")
    assert [m.body for m in await records(broker, "TxnT", 0)] == [b"plain"]
    [op] = await records(broker, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0)
    assert (op.tags, op.body) == ("d", str(sent.queue_offset).encode())


@PROTOCOLS
async def test_the_broker_asks_a_producer_of_the_group_in_its_codec(
    cluster: Cluster, protocol: WireProtocol
) -> None:
    # The test runs the check rounds itself. A copy keeps its half's birth time, so every round asks about the
    # newest copy again until the commit's op record is dispatched (Apache's check does the same, each 60 s by
    # default: RocketMQ's at-least-once); on a loaded machine that took more rounds than any short interval allows.
    broker = await cluster.broker(transaction_timeout=0.5, transaction_check_interval=3600.0)
    check = broker.transactional_message_check_service
    mq = wire(cluster, broker, protocol)
    asked: asyncio.Queue[tuple[RemotingCommand, Channel]] = asyncio.Queue()

    async def on_check(channel: Channel, request: RemotingCommand) -> None:
        await asked.put((request, channel))

    mq.client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    heartbeat = encode_body(HeartbeatData("producer-1", [ProducerData("TxnPG")], []), mq.client.body_dialect)
    assert (await mq.invoke(RequestCode.HEART_BEAT, body=heartbeat)).code == ResponseCode.SUCCESS
    sent = await send_half(mq, "TxnT", b"ask", queue_id=2)
    while broker.transactional_message_service.checks_sent == 0:  # (a round asks once the half is 0.5 s old)
        await check.check_once()
        await asyncio.sleep(0.02)
    request, channel = await asyncio.wait_for(asked.get(), 5.0)
    # The request came in the producer connection's codec (a native frame is JSON or ROCKETMQ, never msgpack).
    assert (request.serialize_type == SerializeType.MSGPACK) == (protocol is WireProtocol.MSGPACK)
    assert channel.protocol is protocol
    header = request.decode_header(CheckTransactionStateRequestHeader)
    msg = decode(request.body or b"")
    # The broker asks about a new copy of the half message (offset 1), in the real topic and queue.
    assert header.tran_state_table_offset == sent.queue_offset + 1 == msg.queue_offset
    assert header.commit_log_offset == msg.commit_log_offset != decode_message_id(sent.msg_id)[1]
    assert header.msg_id == header.transaction_id == "U-ask"
    assert decode_message_id(header.offset_msg_id or "")[1] == header.commit_log_offset
    assert (msg.topic, msg.queue_id, msg.body) == ("TxnT", 2, b"ask")
    assert msg.properties["TRANSACTION_CHECK_TIMES"] == "1"
    answer = await mq.invoke(RequestCode.END_TRANSACTION, EndTransactionRequestHeader(
        producer_group="TxnPG", tran_state_table_offset=header.tran_state_table_offset,
        commit_log_offset=header.commit_log_offset, commit_or_rollback=TRANSACTION_COMMIT_TYPE,
        from_transaction_check=True, msg_id="U-ask", transaction_id=header.transaction_id))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    await asyncio.to_thread(broker.store.wait_dispatched, 10.0)  # (the commit's op record in the op queue)
    [real] = await records(broker, "TxnT", 2)
    assert real.body == b"ask" and real.prepared_transaction_offset == header.commit_log_offset
    # The copy's TRAN_PREPARED_QUEUE_OFFSET stays in the half queue, as Apache's committed message shows.
    assert "TRAN_PREPARED_QUEUE_OFFSET" not in real.properties and real.properties["TRANSACTION_CHECK_TIMES"] == "1"
    # Decided: asked no more, however many rounds pass.
    for _ in range(10):
        await check.check_once()
    assert asked.qsize() == 0 and broker.transactional_message_service.checks_sent == 1
    # The check's progress: past the first copy and the decided one, and past the one op record.
    offsets = broker.consumer_offset_manager
    assert offsets.query_offset("CID_RMQ_SYS_TRANS", RMQ_SYS_TRANS_HALF_TOPIC, 0) == 2
    assert offsets.query_offset("CID_RMQ_SYS_TRANS", "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0) == 1


async def test_reject_transaction_message_and_sends_that_claim_a_decision(cluster: Cluster) -> None:
    broker = await cluster.broker(reject_transaction_message=True)
    mq = cluster.mq(broker)
    refused = await mq.send("TxnT", b"x", sys_flag=TRANSACTION_PREPARED_TYPE,
                            properties=mq.props(TRAN_MSG="true", PGROUP="PG"))
    assert refused.code == ResponseCode.NO_PERMISSION and "transaction message is forbidden" in (refused.remark or "")
    for flag in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        claimed = await mq.send("TxnT", b"x", sys_flag=flag)
        assert claimed.code == ResponseCode.MESSAGE_ILLEGAL, claimed.remark
    assert (await mq.send("TxnT", b"plain")).code == ResponseCode.SUCCESS


async def test_reject_transaction_message_changes_at_run_time(cluster: Cluster) -> None:
    """An operator stops (and resumes) transactional sends with updateBrokerConfig, without a restart, as on
    RocketMQ 5; the reply, recall switches alike."""
    broker = await cluster.broker()
    mq = cluster.mq(broker)

    async def update(text: str) -> RemotingCommand:
        return await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, text.encode())

    async def half() -> RemotingCommand:
        return await mq.send("TxnT", b"x", sys_flag=TRANSACTION_PREPARED_TYPE,
                             properties=mq.props(TRAN_MSG="true", PGROUP="PG"))

    assert (await half()).code == ResponseCode.SUCCESS
    assert (await update("rejectTransactionMessage=true\n")).code == ResponseCode.SUCCESS
    refused = await half()
    assert refused.code == ResponseCode.NO_PERMISSION and "transaction message is forbidden" in (refused.remark or "")
    assert (await update("rejectTransactionMessage=false\n")).code == ResponseCode.SUCCESS
    assert (await half()).code == ResponseCode.SUCCESS
    switches = "storeReplyMessageEnable=false\nrecallMessageEnable=false\nallowRecallWhenBrokerNotWriteable=true\n"
    assert (await update(switches)).code == ResponseCode.SUCCESS
    bc = broker.broker_config
    assert (bc.store_reply_message_enable, bc.recall_message_enable, bc.allow_recall_when_broker_not_writeable) == (
        False, False, True)


async def test_an_unknown_state_is_not_answered_whatever_the_rest_of_the_header(cluster: Cluster) -> None:
    # (4.9.7 decodes what it can of the header, answers the unknown state with nothing and uses no other field; a
    # commit whose offset does not parse is refused)
    broker = await cluster.broker(transaction_check_interval=600)
    mq = cluster.mq(broker)
    ext = {"producerGroup": "PG", "tranStateTableOffset": "0", "commitLogOffset": "0x10", "msgId": "m"}
    for state in ("0", "+00"):
        with pytest.raises(RemotingTimeoutError):
            await mq.invoke(RequestCode.END_TRANSACTION, {**ext, "commitOrRollback": state}, timeout=0.3)
    refused = await mq.invoke(RequestCode.END_TRANSACTION, {**ext, "commitOrRollback": "8"})
    assert refused.code == ResponseCode.SYSTEM_ERROR and "commitLogOffset" in (refused.remark or "")
