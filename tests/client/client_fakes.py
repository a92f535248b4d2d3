"""Fake name server and brokers on real sockets (remoting.RemotingServer) for the client's unit tests.

Each fake records every request it gets and answers with scripted behaviour, so a test can assert what
went on the wire and steer the client through errors, timeouts and dropped connections.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

from pocketmq.common.message import pack_host
from pocketmq.remoting.body import BrokerData, QueueData, TopicRouteData, encode_body
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    GetMaxOffsetResponseHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetResponseHeader,
    SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    parse_send_message_request_header,
)
from pocketmq.remoting.server import RemotingServer
from pocketmq.remoting.transport import Channel

RW = PermName.PERM_READ | PermName.PERM_WRITE
Behaviour = Callable[[Channel, RemotingCommand], Awaitable[RemotingCommand | None]]


def free_dead_address() -> str:
    """An address nothing listens on (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class FakeNamesrv:
    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.routes: dict[str, TopicRouteData] = {}
        self.requested: list[str] = []
        self.server.register_processor(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._route)

    @property
    def address(self) -> str:
        return self.server.address

    async def _route(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        topic = request.decode_header(GetRouteInfoRequestHeader).topic
        self.requested.append(topic)
        route = self.routes.get(topic)
        if route is None:
            return RemotingCommand.response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        return RemotingCommand.response(body=encode_body(route))

    def set_route(self, topic: str, brokers: list[FakeBroker], queues: int = 4, perm: int = RW) -> None:
        self.routes[topic] = route_for(brokers, queues, perm)


def route_for(brokers: list[FakeBroker], queues: int = 4, perm: int = RW) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(b.name, queues, queues, perm) for b in brokers],
        broker_datas=[BrokerData("DefaultCluster", b.name, {0: b.address}) for b in brokers],
    )


class FakeBroker:
    """Answers sends with SUCCESS (increasing offsets) unless ``on_send`` says otherwise."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.server = RemotingServer("127.0.0.1", 0)
        self.requests: list[RemotingCommand] = []
        self.on_send: Behaviour | None = None
        self.on_pull: Behaviour | None = None
        self.offsets: dict[tuple[str, str, int], int] = {}  # (group, topic, queue) -> offset
        self.max_offset = 0
        self.min_offset = 0
        self.search_result = 0
        self._next_offset = 0
        for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
            self.server.register_processor(code, self._send)
        self.server.register_processor(RequestCode.PULL_MESSAGE, self._pull)
        self.server.register_default_processor(self._other)

    @property
    def address(self) -> str:
        return self.server.address

    def of_code(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]

    @property
    def sends(self) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)]

    def success(self, request: RemotingCommand, code: int = ResponseCode.SUCCESS) -> RemotingCommand:
        header = parse_send_message_request_header(request.code, request.ext_fields)
        offset = self._next_offset
        self._next_offset += 1
        msg_id = (pack_host("127.0.0.1", self.server.port) + offset.to_bytes(8, "big")).hex().upper()
        return RemotingCommand.response(
            code, ext_fields=SendMessageResponseHeader(msg_id, header.queue_id, offset)
        )

    async def _send(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(request)
        if self.on_send is not None:
            return await self.on_send(channel, request)
        return self.success(request)

    async def _pull(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(request)
        if self.on_pull is not None:
            return await self.on_pull(channel, request)
        return pull_response(ResponseCode.PULL_NOT_FOUND, 0)

    async def _other(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(request)
        code = request.code
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            h = request.decode_header(QueryConsumerOffsetRequestHeader)
            stored = self.offsets.get((h.consumer_group, h.topic, h.queue_id))
            if stored is None:
                return RemotingCommand.response(
                    ResponseCode.QUERY_NOT_FOUND, "Not found, maybe this group consumer boot first"
                )
            return RemotingCommand.response(ext_fields=QueryConsumerOffsetResponseHeader(stored))
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            h = request.decode_header(UpdateConsumerOffsetRequestHeader)
            self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
            return RemotingCommand.response()
        if code == RequestCode.GET_MAX_OFFSET:
            return RemotingCommand.response(ext_fields=GetMaxOffsetResponseHeader(self.max_offset))
        if code == RequestCode.GET_MIN_OFFSET:
            return RemotingCommand.response(ext_fields=GetMinOffsetResponseHeader(self.min_offset))
        if code == RequestCode.SEARCH_OFFSET_BY_TIMESTAMP:
            return RemotingCommand.response(ext_fields=SearchOffsetResponseHeader(self.search_result))
        if code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT):
            return RemotingCommand.response()
        return RemotingCommand.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"fake: {code}")


def pull_response(
    code: int, next_begin_offset: int, body: bytes | None = None, min_offset: int = 0, max_offset: int = 0,
    suggest: int = 0,
) -> RemotingCommand:
    return RemotingCommand.response(
        code, ext_fields=PullMessageResponseHeader(suggest, next_begin_offset, min_offset, max_offset), body=body
    )


def error(code: int, remark: str) -> Behaviour:
    async def answer(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(code, remark)

    return answer


async def never_answer(channel: Channel, request: RemotingCommand) -> None:
    await asyncio.Event().wait()


async def drop_connection(channel: Channel, request: RemotingCommand) -> None:
    channel.close()
