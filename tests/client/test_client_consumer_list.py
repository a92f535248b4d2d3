"""MQClientInstance.find_consumer_id_list, which every rebalance asks: the group's members from one broker of the
topic, another when that one fails."""

from __future__ import annotations

from client_fakes import FakeBroker, FakeNamesrv, never_answer

from pocketmq.client import Producer
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import GetConsumerListByGroupResponseBody
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel


async def test_a_broker_that_never_answers_does_not_stop_the_group_s_rebalancing(
    namesrv: FakeNamesrv, broker_a: FakeBroker, broker_b: FakeBroker
) -> None:
    """broker-a, first in the route, accepts and never answers (a hung broker stays routed until the name server
    drops it, 120 s): the members come from broker-b, whichever broker is asked first."""

    async def members(channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.response(body=encode_body(GetConsumerListByGroupResponseBody(["c1", "c2"])))

    broker_a.server.register_processor(RequestCode.GET_CONSUMER_LIST_BY_GROUP, never_answer)
    broker_b.server.register_processor(RequestCode.GET_CONSUMER_LIST_BY_GROUP, members)
    namesrv.set_route("Spread", [broker_a, broker_b])
    async with Producer("PG", namesrv.address, instance_name="members", mq_client_api_timeout=0.2) as producer:
        for _ in range(8):  # (a random broker first, as RocketMQ's findBrokerAddrByTopic)
            assert await producer.instance.find_consumer_id_list("Spread", "G") == ["c1", "c2"]
