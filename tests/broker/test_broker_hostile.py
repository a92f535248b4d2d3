"""What a careless or hostile client sends a real broker over real sockets (issue 18): refused with RocketMQ's codes,
nothing stored, the broker serving on."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

import pytest

from pocketmq.broker import BrokerConfig
from pocketmq.broker.config import BrokerConfigError
from pocketmq.common.codec import decode_all
from pocketmq.common.message_batch import BatchItem
from pocketmq.remoting.codec import encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.connection_limits import ConnectionLimits
from pocketmq.remoting.transport import parse_address


async def test_an_empty_body_is_message_illegal_and_stores_nothing(broker, mq, dispatched) -> None:
    for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        for body in (b"", None):
            resp = await mq.send("TopicEmpty", body, code=code)
            assert resp.code == ResponseCode.MESSAGE_ILLEGAL, (code, body)
            assert "body length is zero" in resp.remark
    batch = [BatchItem(0, b"one", ""), BatchItem(0, b"", ""), BatchItem(0, b"three", "")]
    resp = await mq.send_batch("TopicEmpty", batch)
    assert resp.code == ResponseCode.MESSAGE_ILLEGAL and "message 1 of the batch" in resp.remark
    assert (await mq.send("TopicEmpty", b"not empty")).code == ResponseCode.SUCCESS
    await dispatched(broker)
    resp = await mq.pull("G", "TopicEmpty", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"not empty"]


async def test_a_pull_of_zero_messages_reads_one(broker, mq, dispatched) -> None:
    """As Apache RocketMQ's store, whose batch is never full before its first message: the Go client's pull
    consumer sends maxMsgNums 0 unless given a batch size. (A negative count: test_broker_pull.py.)"""
    for i in range(3):
        assert (await mq.send("TopicMaxNums", b"m%d" % i)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    for offset in range(3):
        resp = await mq.pull("G", "TopicMaxNums", 0, offset, max_nums=0)
        assert resp.code == ResponseCode.SUCCESS
        assert [m.body for m in decode_all(resp.body)] == [b"m%d" % offset]


async def test_a_consumer_that_does_not_read_its_pulls_costs_the_broker_a_bounded_buffer(
    cluster, poll, dispatched
) -> None:
    # The case: a client pipelines pulls of 256 KiB answers and never reads them (it cost ~470 MB). The
    # broker stops reading that connection once its answers pass the write high-water mark; everyone else is
    # served; the connection, stuck, is closed by the idle timeout.
    broker = await cluster.broker(server_channel_max_idle_time=0.5)
    mq = cluster.mq(broker)
    for i in range(32):
        assert (await mq.send("TopicGreedy", bytes([65 + i % 26]) * 8000)).code == ResponseCode.SUCCESS
    await dispatched(broker)
    answer = await mq.pull("G", "TopicGreedy", 0, 0)
    assert len(answer.body) > 250_000  # one pull's answer: 32 records of 8 KB
    host, port = parse_address(broker.address)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    pulls = [
        RemotingCommand.request(RequestCode.PULL_MESSAGE, mq.pull_request("G", "TopicGreedy", 0, 0))
        for _ in range(1000)
    ]
    writer.write(b"".join(encode(p) for p in pulls))  # 1,000 x 256 KiB = 250 MiB of answers
    local = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
    await poll(lambda: any(c.remote_address == local and c._reading_paused for c in broker.remoting_server.channels))
    (ch,) = [c for c in broker.remoting_server.channels if c.remote_address == local]
    limit = broker.broker_config.write_buffer_high_water_mark + 256 * 1024 + 2 * len(answer.body)
    assert ch.unwritten_bytes < limit, ch.unwritten_bytes
    assert (await mq.send("TopicGreedy", b"others are served")).code == ResponseCode.SUCCESS
    assert ch.unwritten_bytes < limit and ch._reading_paused
    await poll(lambda: ch.closed)  # idle: nothing read or written since
    writer.close()
    # (A new client: mq's own connection may have sat idle as long meanwhile, and been closed for it too.)
    assert (await cluster.mq(broker).pull("G", "TopicGreedy", 0, 0)).code == ResponseCode.SUCCESS


def test_connection_limits_load_from_a_broker_conf() -> None:
    config = BrokerConfig.from_properties_text(
        "writeBufferHighWaterMark=131072\nwriteBufferLowWaterMark=65536\nserverChannelMaxIdleTimeSeconds=30\n"
        "serverFrameReadTimeoutMillis=2500\nserverMaxInflightRequests=64\n"
    )
    assert config.connection_limits == ConnectionLimits(131072, 65536, 2.5, 30.0)
    assert config.server_max_inflight_requests == 64
    with pytest.raises(BrokerConfigError, match="water marks"):
        BrokerConfig.from_properties_text("writeBufferHighWaterMark=1000\nwriteBufferLowWaterMark=2000\n")


async def native_request(addr: str, code: int, ext: dict[str, str]) -> dict:
    """One request in RocketMQ's JSON header form, written by hand: the escapes in it reach the broker as sent."""
    header = json.dumps({"code": code, "language": "JAVA", "version": 0, "opaque": 1, "flag": 0,
                         "extFields": ext}).encode()  # (ensure_ascii: a lone surrogate goes as "\ud800")
    reader, writer = await asyncio.open_connection(*parse_address(addr))
    try:
        writer.write(struct.pack(">II", 4 + len(header), len(header)) + header)
        length = struct.unpack(">I", await reader.readexactly(4))[0]
        frame = await reader.readexactly(length)
        return json.loads(frame[4: 4 + (struct.unpack(">I", frame[:4])[0] & 0xFFFFFF)])
    finally:
        writer.close()


async def test_a_group_name_with_a_lone_surrogate_does_not_stop_the_offsets_file(cluster) -> None:
    # Java's strings hold one (a JSON "\ud800"), and UTF-8 cannot encode it: every later write of
    # consumerOffset.json failed, for every group, and the broker's shutdown stopped before the store's.
    broker = await cluster.broker()
    await cluster.mq(broker).create_group("good")
    for group, offset, code in (("bad\ud800", 7, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST),
                                ("good", 5, ResponseCode.SUCCESS)):
        answer = await native_request(broker.address, RequestCode.UPDATE_CONSUMER_OFFSET,
                                      {"consumerGroup": group, "topic": "TBW102", "queueId": "0",
                                       "commitOffset": str(offset)})
        assert answer["code"] == code, answer
    # No request creates such a group (names are checked), but a subscriptionGroup.json written by hand can hold
    # one, and its pulls commit: the offset table gets the name that way.
    broker.consumer_offset_manager.commit_offset("test", "bad\ud800", "TBW102", 0, 7)
    await broker.consumer_offset_manager.persist()
    broker = await cluster.restart(broker)
    offsets = broker.consumer_offset_manager
    assert (offsets.query_offset("good", "TBW102", 0), offsets.query_offset("bad\ud800", "TBW102", 0)) == (5, 7)
