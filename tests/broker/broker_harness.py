"""Broker test harness: real brokers (small store files under tmp_path), real name servers, and ``MQ``, a
thin wire client over ``remoting.RemotingClient`` that speaks the broker's request codes. A module of its
own (not conftest) so that test files can import it: every test folder has a conftest."""


from __future__ import annotations

import time
from typing import Any

from pocketmq.broker import BrokerConfig, BrokerController
from pocketmq.common.codec import decode_all
from pocketmq.common.java_hash import java_string_hash
from pocketmq.common.message import properties_to_string
from pocketmq.common.message_batch import BatchItem, encode_message_batch
from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController
from pocketmq.remoting.body import TopicRouteData, decode_body, encode_body
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.client_body import (
    ConsumerData,
    HeartbeatData,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
)
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import (
    CreateTopicRequestHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    UpdateConsumerOffsetRequestHeader,
)

GUARD = 5.0  # generous bound for any single request; never a timing assertion

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4


def small_config(root: Any, **overrides: Any) -> BrokerConfig:
    params: dict[str, Any] = dict(
        store_path_root_dir=str(root),
        listen_port=0,
        mapped_file_size_commit_log=1024 * 1024,
        mapped_file_size_consume_queue=1000 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
        clean_resource_interval=3600.0,
        register_name_server_period=30.0,
    )
    params.update(overrides)
    return BrokerConfig(**params)


class MQ:
    """Requests to one broker over one RemotingClient (one connection)."""

    def __init__(self, client: RemotingClient, addr: str) -> None:
        self.client = client
        self.addr = addr

    async def invoke(
        self, code: int, header: Any = None, body: bytes | None = None, timeout: float = GUARD, addr: str | None = None
    ) -> RemotingCommand:
        return await self.client.invoke(addr or self.addr, RemotingCommand.request(code, header, body), timeout)

    async def oneway(self, code: int, header: Any = None, body: bytes | None = None) -> None:
        await self.client.invoke_oneway(self.addr, RemotingCommand.request(code, header, body, oneway=True))

    async def local_address(self) -> str:
        return (await self.client.get_channel(self.addr)).local_address

    @staticmethod
    def props(tags: str | None = None, keys: str | None = None, **extra: str) -> str:
        p: dict[str, str] = {}
        if tags is not None:
            p["TAGS"] = tags
        if keys is not None:
            p["KEYS"] = keys
        p.update(extra)
        return properties_to_string(p)

    async def send(
        self,
        topic: str,
        body: bytes | None = b"hello",
        *,
        queue_id: int = 0,
        tags: str | None = None,
        keys: str | None = None,
        properties: str | None = None,
        code: int = RequestCode.SEND_MESSAGE_V2,
        default_topic: str = "TBW102",
        default_topic_queue_nums: int = 4,
        sys_flag: int = 0,
        flag: int = 0,
        reconsume_times: int | None = None,
        max_reconsume_times: int | None = None,
    ) -> RemotingCommand:
        v1 = SendMessageRequestHeader(
            producer_group="PG",
            topic=topic,
            default_topic=default_topic,
            default_topic_queue_nums=default_topic_queue_nums,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=time.time_ns() // 1_000_000,
            flag=flag,
            properties=properties if properties is not None else self.props(tags, keys),
            reconsume_times=reconsume_times,
            max_reconsume_times=max_reconsume_times,
        )
        header = SendMessageRequestHeaderV2.from_v1(v1) if code != RequestCode.SEND_MESSAGE else v1
        return await self.invoke(code, header, body)

    async def send_batch(
        self, topic: str, items: list[BatchItem], *, queue_id: int = 0, properties: str | None = None
    ) -> RemotingCommand:
        v1 = SendMessageRequestHeader(
            producer_group="PG",
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=time.time_ns() // 1_000_000,
            flag=0,
            properties=properties if properties is not None else self.props(WAIT="true"),
            batch=True,
        )
        return await self.invoke(
            RequestCode.SEND_BATCH_MESSAGE, SendMessageRequestHeaderV2.from_v1(v1), encode_message_batch(items)
        )

    def pull_request(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        max_nums: int = 32,
        sys_flag: int = FLAG_SUBSCRIPTION,
        subscription: str | None = "*",
        expression_type: str | None = "TAG",
        suspend_ms: int = 0,
        commit_offset: int = 0,
        sub_version: int = 0,
    ) -> PullMessageRequestHeader:
        return PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=suspend_ms,
            sub_version=sub_version,
            subscription=subscription,
            expression_type=expression_type,
        )

    async def pull(
        self, group: str, topic: str, queue_id: int, offset: int, *, timeout: float = GUARD, **kwargs: Any
    ) -> RemotingCommand:
        header = self.pull_request(group, topic, queue_id, offset, **kwargs)
        return await self.invoke(RequestCode.PULL_MESSAGE, header, timeout=timeout)

    async def heartbeat(
        self,
        client_id: str,
        consumer_groups: dict[str, dict[str, str]] | None = None,
        producer_groups: tuple[str, ...] = (),
        message_model: str = "CLUSTERING",
        sub_version: int = 1,
    ) -> RemotingCommand:
        """``consumer_groups``: group -> {topic: subscription expression}."""
        consumers = []
        for group, subs in (consumer_groups or {}).items():
            sub_data = []
            for topic, expr in subs.items():
                tags = [t.strip() for t in expr.split("||")] if expr != "*" else []
                sub_data.append(SubscriptionData(topic, expr, tags, [java_string_hash(t) for t in tags], sub_version))
            consumers.append(ConsumerData(group, message_model=message_model, subscription_data_set=sub_data))
        hb = HeartbeatData(client_id, [ProducerData(g) for g in producer_groups], consumers)
        return await self.invoke(RequestCode.HEART_BEAT, body=encode_body(hb))

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6, **kwargs: Any) -> RemotingCommand:
        header = CreateTopicRequestHeader(topic, "TBW102", queues, queues, perm, **kwargs)
        return await self.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def query_offset(self, group: str, topic: str, queue_id: int) -> RemotingCommand:
        return await self.invoke(
            RequestCode.QUERY_CONSUMER_OFFSET, QueryConsumerOffsetRequestHeader(group, topic, queue_id)
        )

    async def create_group(self, group: str) -> None:
        body = encode_body(SubscriptionGroupConfig(group))
        resp = await self.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        assert resp.code == 0, resp

    async def update_offset(self, group: str, topic: str, queue_id: int, offset: int, oneway: bool = False) -> None:
        """Commits; a group or topic the broker does not know is created when the commit is refused for it (as a
        client's heartbeat creates its group): the broker keeps no offset for made-up ones."""
        header = UpdateConsumerOffsetRequestHeader(group, topic, queue_id, offset)
        if oneway:
            await self.oneway(RequestCode.UPDATE_CONSUMER_OFFSET, header)
            return
        resp = await self.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        for _ in range(2):
            if resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST:
                await self.create_group(group)
            elif resp.code == ResponseCode.TOPIC_NOT_EXIST:
                assert (await self.create_topic(topic, max(4, queue_id + 1))).code == 0
            else:
                break
            resp = await self.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        assert resp.code == 0, resp

    async def route(self, namesrv_addr: str, topic: str) -> RemotingCommand:
        return await self.invoke(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic), addr=namesrv_addr
        )

    async def route_data(self, namesrv_addr: str, topic: str) -> TopicRouteData | None:
        resp = await self.route(namesrv_addr, topic)
        return decode_body(resp.body, TopicRouteData) if resp.code == 0 else None


class Cluster:
    """Starts name servers, brokers and clients for one test and stops them all at teardown."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.namesrvs: list[NamesrvController] = []
        self.brokers: list[BrokerController] = []
        self.clients: list[RemotingClient] = []
        self._n = 0

    async def namesrv(self, **settings: Any) -> NamesrvController:
        """A name server on a free port; ``settings`` are NamesrvConfig fields."""
        ns = NamesrvController(NamesrvConfig(listen_port=0, **settings))
        await ns.start()
        self.namesrvs.append(ns)
        return ns

    def config(self, name: str = "broker", **overrides: Any) -> BrokerConfig:
        return small_config(self.root / name, **overrides)

    async def broker(self, name: str = "broker", **overrides: Any) -> BrokerController:
        b = BrokerController(self.config(name, **overrides))
        await b.start()
        self.brokers.append(b)
        return b

    async def restart(self, broker: BrokerController, **overrides: Any) -> BrokerController:
        await broker.shutdown()
        params = {**vars(broker.broker_config), **overrides}
        b = BrokerController(BrokerConfig(**params))
        await b.start()
        self.brokers.append(b)
        return b

    def mq(self, broker: BrokerController | str) -> MQ:
        client = RemotingClient()
        self.clients.append(client)
        return MQ(client, broker if isinstance(broker, str) else broker.address)

    async def close(self) -> None:
        for c in self.clients:
            await c.close()
        for b in self.brokers:
            await b.shutdown()
        for ns in self.namesrvs:
            await ns.shutdown()


async def pull_all(mq: MQ, topic: str, queue_id: int, start: int = 0) -> list[tuple[int, bytes]]:
    """(queue offset, body) of every message of one queue from `start`, pulled over the socket."""
    out: list[tuple[int, bytes]] = []
    offset = start
    while True:
        resp = await mq.pull("G", topic, queue_id, offset, max_nums=32)
        if resp.code != ResponseCode.SUCCESS:
            return out
        msgs = decode_all(resp.body)
        if not msgs:
            return out
        out += [(m.queue_offset, m.body) for m in msgs]
        offset = msgs[-1].queue_offset + 1
