"""GET_CONSUMER_RUNNING_INFO, which the broker forwards to the client and whose answer it relays: what an asker
that does not read, or many askers at once, make the broker hold and send (ClientCallGate)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from pocketmq.remoting.admin_header import GetConsumerRunningInfoRequestHeader
from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel, parse_address

GROUP, CLIENT_ID = "GRunning", "127.0.0.1@running"
CLIENT_CALLS_AT_ONCE = 16  # RocketMQ's adminBrokerThreadPoolNums (client_call_gate.CLIENT_CALLS_AT_ONCE)
# An observation window: the broker forwards nothing more in it; the unbounded broker forwarded everything
# within a few milliseconds of reading the requests.
SETTLE = 0.3


class FakeConsumer:
    """A consumer's connection that answers GET_CONSUMER_RUNNING_INFO with ``body``, once ``answering`` is set."""

    def __init__(self, cluster: Any, broker: Any, body: bytes) -> None:
        self.mq = cluster.mq(broker)
        self.body = body
        self.asked = 0
        self.answering = asyncio.Event()
        self.answering.set()
        self.mq.client.register_processor(RequestCode.GET_CONSUMER_RUNNING_INFO, self._answer)

    async def _answer(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.asked += 1
        await self.answering.wait()
        return RemotingCommand.response(ResponseCode.SUCCESS, body=self.body)

    async def start(self) -> None:
        assert (await self.mq.heartbeat(CLIENT_ID, {GROUP: {"TopicRunning": "*"}})).code == ResponseCode.SUCCESS


def running_info_request() -> RemotingCommand:
    return RemotingCommand.request(
        RequestCode.GET_CONSUMER_RUNNING_INFO, GetConsumerRunningInfoRequestHeader(GROUP, CLIENT_ID, False)
    )


async def test_an_asker_that_does_not_read_has_one_forwarded_answer_held_for_it(cluster, poll) -> None:
    # The audit's case: K asks pipelined on a connection that reads nothing, each answered by the client with
    # megabytes. The broker held every answer (K x 8 MB) until the connection drained or closed.
    broker = await cluster.broker()
    body, asks = b"x" * (2 * 1024 * 1024), 20
    consumer = FakeConsumer(cluster, broker, body)
    await consumer.start()
    host, port = parse_address(broker.address)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock)
    try:
        writer.write(b"".join(encode(running_info_request()) for _ in range(asks)))
        local = "{}:{}".format(*writer.get_extra_info("sockname")[:2])
        await poll(lambda: any(c.remote_address == local and c.write_paused for c in broker.remoting_server.channels))
        (asker,) = [c for c in broker.remoting_server.channels if c.remote_address == local]
        await asyncio.sleep(SETTLE)
        # The client is asked again only once the asker has taken the previous answer: what the kernel's socket
        # buffers take (up to 4 MiB here, tcp_wmem) counts as taken, then one answer waits in the transport.
        assert consumer.asked <= 3
        assert asker.unwritten_bytes < len(body) + broker.broker_config.write_buffer_high_water_mark + 256 * 1024
        # The asker reads: every ask is answered in turn, none refused.
        decoder, answers = FrameDecoder(), []
        while len(answers) < asks:
            decoder.receive_data(await reader.read(1024 * 1024))
            answers += list(decoder)
        assert [(a.code, len(a.body or b"")) for a in answers] == [(ResponseCode.SUCCESS, len(body))] * asks
        assert consumer.asked == asks
    finally:
        writer.close()


async def test_the_broker_has_at_most_sixteen_calls_out_to_clients_at_once(cluster, poll) -> None:
    # RocketMQ runs these on its admin pool (16 threads): more askers than that wait for their turn.
    broker = await cluster.broker()
    consumer = FakeConsumer(cluster, broker, b"{}")
    consumer.answering.clear()
    await consumer.start()
    askers = [cluster.mq(broker) for _ in range(CLIENT_CALLS_AT_ONCE + 4)]
    header = GetConsumerRunningInfoRequestHeader(GROUP, CLIENT_ID, False)
    calls = [asyncio.ensure_future(a.invoke(RequestCode.GET_CONSUMER_RUNNING_INFO, header)) for a in askers]
    await poll(lambda: consumer.asked >= CLIENT_CALLS_AT_ONCE)
    await asyncio.sleep(SETTLE)
    assert consumer.asked == CLIENT_CALLS_AT_ONCE
    consumer.answering.set()
    answers = await asyncio.gather(*calls)
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * len(askers)
    assert consumer.asked == len(askers)


async def test_a_client_that_does_not_answer_in_time_is_consume_msg_timeout(cluster) -> None:
    # RocketMQ tells a slow client from a failed one by the code (AdminBrokerProcessor.callConsumer).
    broker = await cluster.broker(call_client_timeout=0.3)
    consumer = FakeConsumer(cluster, broker, b"{}")
    consumer.answering.clear()
    await consumer.start()
    answer = await cluster.mq(broker).client.invoke(broker.address, running_info_request(), 5.0)
    consumer.answering.set()
    assert consumer.asked == 1
    assert answer.code == ResponseCode.CONSUME_MSG_TIMEOUT
    assert (answer.remark or "").startswith(f"consumer <{GROUP}> <{CLIENT_ID}> Timeout: "), answer.remark


async def test_a_client_that_goes_away_while_asked_is_system_error(cluster, poll) -> None:
    # The connection to the client closes under the call: not a timeout, so RocketMQ's other branch and its remark.
    broker = await cluster.broker()
    consumer = FakeConsumer(cluster, broker, b"{}")
    consumer.answering.clear()
    await consumer.start()
    call = asyncio.ensure_future(cluster.mq(broker).client.invoke(broker.address, running_info_request(), 5.0))
    await poll(lambda: consumer.asked == 1)
    consumer.mq.client.close_channel(broker.address)
    answer = await call
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert (answer.remark or "").startswith(f"invoke consumer <{GROUP}> <{CLIENT_ID}> Exception: "), answer.remark
