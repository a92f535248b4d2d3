"""A name server that is hung, not dead (it accepts connections and never answers): clients ask the next one
once its share of the timeout is spent, instead of failing the call (RocketMQ's client moves on only when
connecting fails)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from pocketmq.client import Message, Producer
from pocketmq.client.client_config import ClientConfig
from pocketmq.client.impl.mq_client_api import MQClientAPIImpl
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingTimeoutError

embedded = pytest.importorskip("pocketmq.embedded")
_names = itertools.count()


@pytest.fixture
async def hung_namesrv() -> AsyncIterator[str]:
    """A real listening socket whose server reads every request and answers none."""
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"127.0.0.1:{port}"
    server.close()


async def test_new_producers_first_send_succeeds_with_one_of_two_name_servers_hung(tmp_path, hung_namesrv) -> None:
    async with embedded.EmbeddedCluster(tmp_path) as cluster:
        topic = "HungNsT"
        await cluster.broker.register_broker_all()
        for order in range(6):
            # Both orders of the list, and each new producer starts at a random one of them. The route lookup
            # and the send share one budget, as with RocketMQ's defaults (3 s each).
            addrs = [hung_namesrv, cluster.namesrv_addr]
            namesrv_addr = ";".join(addrs if order % 2 else addrs[::-1])
            async with Producer(f"HungNsPG{order}", namesrv_addr, instance_name=f"hung{next(_names)}",
                                mq_client_api_timeout=0.6, send_timeout=0.6) as producer:
                result = await producer.send(Message(topic, b"x%d" % order))
                assert result.send_status.name == "SEND_OK"


async def test_the_hung_name_server_is_asked_last_after_it_timed_out(tmp_path, hung_namesrv) -> None:
    async with embedded.EmbeddedCluster(tmp_path) as cluster:
        api = MQClientAPIImpl(ClientConfig(f"{hung_namesrv};{cluster.namesrv_addr}"))
        try:
            api._namesrv_index = len(api.namesrv_addr_list) - 1  # the next call starts at the hung one
            topics = await api.get_topic_list_from_name_server(0.6)
            assert "TBW102" in topics
            # The one that answered is asked first from now on: no call waits on the hung one again.
            for _ in range(4):
                assert "TBW102" in await api.get_topic_list_from_name_server(0.6)
                assert api._namesrv_chosen == cluster.namesrv_addr
        finally:
            await api.shutdown()


async def test_every_name_server_hung_is_a_timeout_naming_them(hung_namesrv) -> None:
    api = MQClientAPIImpl(ClientConfig(hung_namesrv))
    try:
        request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        with pytest.raises(RemotingTimeoutError) as caught:
            await api.invoke_namesrv(request, 0.2)
        assert hung_namesrv in str(caught.value)
    finally:
        await api.shutdown()
