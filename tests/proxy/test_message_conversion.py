"""What a message becomes between the generations, field by field where Apache's GrpcConverter and
SendMessageActivity decide it: a 4.x producer's keys, delay and born host as a 5.x consumer receives them, the
entries a send answers with, and the whitespace rule of the send checks (Java's, not Python's)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.client import Message, Producer
from pocketmq.proxy.message_converter import host_address

from .conftest import D, S, create_topic, metadata, start_proxy
from .test_grpc_consumption import FAST, receive_request, received


@contextlib.asynccontextmanager
async def cluster_and_stub(root: Any) -> AsyncIterator[tuple[Any, Any]]:
    # (a timer precision of 100 ms: a message delayed 1 s comes within about that second)
    async with embedded.EmbeddedCluster(root, revive_interval=0.05, timer_precision_ms=100) as cluster:
        proxy = await start_proxy(cluster, **FAST)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                yield cluster, service_pb2_grpc.MessagingServiceStub(channel)
        finally:
            await proxy.stop()


async def test_a_4x_message_s_keys_delay_and_born_host_as_a_5x_consumer_reads_them(tmp_path: Any) -> None:
    async with cluster_and_stub(tmp_path) as (cluster, stub):
        await create_topic(cluster, "Conv", queues=1)
        async with Producer("ConvProducer", cluster.namesrv_addr) as producer:
            await producer.send(Message("Conv", b"keys", tags="K", keys="k1 k2 "))
            delayed = Message("Conv", b"delayed", tags="S")
            delayed.delay_time_sec = 1
            await producer.send(delayed)
        asked_at = time.time_ns() // 1_000_000
        got = {m.system_properties.tag: m for m in await received(stub, receive_request("Conv"), 2)}
    keys, delayed_msg = got["K"].system_properties, got["S"].system_properties
    # Java's split drops the trailing empty string (Python's kept it: ['k1', 'k2', '']).
    assert list(keys.keys) == ["k1", "k2"]
    # A 4.x producer sets no __BORNHOST: the record's born address, as getBornHostString writes it (no port).
    assert keys.born_host == "127.0.0.1"
    # TIMER_DELAY_SEC: due its delay from the time it is handed out, as Apache's proxy says.
    assert delayed_msg.message_type == D.MessageType.DELAY
    assert delayed_msg.HasField("delivery_timestamp")
    assert delayed_msg.delivery_timestamp.ToMilliseconds() >= asked_at + 1000


def test_the_born_host_fallback_is_the_ip_as_java_writes_it() -> None:
    assert host_address("10.1.2.3:51234") == "10.1.2.3"
    assert host_address("[::1]:51234") == "0:0:0:0:0:0:0:1"
    assert host_address("[fe80::1:0:0:abcd]:7") == "fe80:0:0:0:1:0:0:abcd"
    assert host_address("[::ffff:10.1.2.3]:7") == "10.1.2.3"  # (InetAddress.getByAddress: an Inet4Address)


def grpc_message(message_id: str, topic: str = "Ids", **system: Any) -> Any:
    system = {"message_type": D.MessageType.NORMAL, "body_encoding": D.Encoding.IDENTITY, **system}
    return D.Message(topic=D.Resource(name=topic), body=b"x",
                     system_properties=D.SystemProperties(message_id=message_id, **system))


async def test_a_send_answers_one_entry_per_message_with_its_own_id(tmp_path: Any) -> None:
    async with cluster_and_stub(tmp_path) as (cluster, stub):
        await create_topic(cluster, "Ids")
        single = await stub.SendMessage(S.SendMessageRequest(messages=[grpc_message("id-a,b")]),
                                        metadata=metadata())
        batch = await stub.SendMessage(S.SendMessageRequest(messages=[grpc_message("id-x"), grpc_message("id-y")]),
                                       metadata=metadata())
        half = grpc_message("txn-a,b", message_type=D.MessageType.TRANSACTION)
        sent_half = await stub.SendMessage(S.SendMessageRequest(messages=[half]), metadata=metadata())
        committed = await stub.EndTransaction(S.EndTransactionRequest(
            topic=D.Resource(name="Ids"), message_id="txn-a,b", transaction_id=sent_half.entries[0].transaction_id,
            resolution=D.TransactionResolution.COMMIT, source=D.TransactionSource.SOURCE_CLIENT), metadata=metadata())
    # One message, one entry, whatever its id holds (two made the SDK send it again).
    assert [(e.status.code, e.message_id, e.transaction_id) for e in single.entries] == \
        [(D.Code.OK, "id-a,b", "id-a,b")]
    assert [(e.status.code, e.message_id) for e in batch.entries] == [(D.Code.OK, "id-x"), (D.Code.OK, "id-y")]
    # The half message's transaction id is its whole id, and ends the transaction.
    assert [(e.status.code, e.message_id, e.transaction_id) for e in sent_half.entries] == \
        [(D.Code.OK, "txn-a,b", "txn-a,b")]
    assert committed.status.code == D.Code.OK, committed.status


NBSP, NEL = "\u00a0", "\x85"


# (fields, the answer): U+00A0 is no whitespace to Java, U+3000 and U+2028 are; U+0085 is a control character, not
# whitespace, so a tag of it is refused for that.
WHITESPACE_CASES: list[tuple[dict[str, Any], tuple[int, str]]] = [
    ({"tag": NBSP}, (D.Code.OK, "OK")),
    ({"keys": [NBSP]}, (D.Code.OK, "OK")),
    ({"message_id": NBSP}, (D.Code.OK, "OK")),
    ({"message_group": NBSP}, (D.Code.OK, "OK")),
    ({"tag": " \t"}, (D.Code.ILLEGAL_MESSAGE_TAG, "tag cannot be the char sequence of whitespace")),
    ({"keys": ["\u3000"]}, (D.Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")),
    ({"message_id": "\u2028"}, (D.Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")),
    ({"tag": NEL}, (D.Code.ILLEGAL_MESSAGE_TAG, "tag cannot contain control character")),
]


async def test_the_send_checks_take_java_s_whitespace(tmp_path: Any) -> None:
    answers = []
    async with cluster_and_stub(tmp_path) as (cluster, stub):
        await create_topic(cluster, "Ids")
        for n, (system, _) in enumerate(WHITESPACE_CASES):
            kwargs = {"message_id": f"0102FC0000000171190B1C3CCC{n:08X}", **system}
            answer = await stub.SendMessage(S.SendMessageRequest(messages=[grpc_message(**kwargs)]),
                                            metadata=metadata())
            answers.append((answer.status.code, answer.status.message))
    assert answers == [expected for _, expected in WHITESPACE_CASES]
