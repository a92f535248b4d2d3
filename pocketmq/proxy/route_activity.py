"""RouteActivity: QueryRoute and QueryAssignment, from the name server's route of the topic.

Every queue's broker is the proxy itself, at the address the client asked (RocketMQ's proxy answers with the
request's endpoints): the SDKs send everything else to the same place."""

from __future__ import annotations

from typing import Any

from pocketmq.remoting.body import QueueData
from pocketmq.remoting.codes import PermName

from .cluster_service import ClusterService
from .config import ProxyConfig
from .grpc_validator import validate_consumer_group, validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import ok, status

pb = load()

_ALL_TYPES = [pb.MessageType.NORMAL, pb.MessageType.FIFO, pb.MessageType.DELAY, pb.MessageType.TRANSACTION]


def accept_message_types(topic_message_type: str | None) -> list[int]:
    """The types QueryRoute lists for a topic's ``message.type``. An untyped topic accepts every type here (its
    broker checks nothing either); RocketMQ 5 reads a topic without the attribute as NORMAL."""
    if topic_message_type is None or topic_message_type == "MIXED":
        return list(_ALL_TYPES)
    names = pb.MessageType.keys()
    return [pb.MessageType.Value(topic_message_type) if topic_message_type in names else 0]


def permission(perm: int) -> int:
    readable, writeable = PermName.is_readable(perm), PermName.is_writeable(perm)
    if readable and writeable:
        return int(pb.Permission.READ_WRITE)
    if readable:
        return int(pb.Permission.READ)
    if writeable:
        return int(pb.Permission.WRITE)
    return int(pb.Permission.NONE)


def queues_of(qd: QueueData, topic: Any, broker: Any, types: list[int]) -> list[Any]:
    """genMessageQueueFromQueueData: read-only queues first, then write-only, then read-write, numbered from 0."""
    r = w = rw = n = 0
    readable, writeable = PermName.is_readable(qd.perm), PermName.is_writeable(qd.perm)
    if readable and writeable:
        rw = min(qd.write_queue_nums, qd.read_queue_nums)
        r, w = qd.read_queue_nums - rw, qd.write_queue_nums - rw
    elif writeable:
        w = qd.write_queue_nums
    elif readable:
        r = qd.read_queue_nums
    elif not qd.perm & (PermName.PERM_READ | PermName.PERM_WRITE):
        n = max(1, qd.write_queue_nums, qd.read_queue_nums)
    perms = ([pb.Permission.READ] * r + [pb.Permission.WRITE] * w + [pb.Permission.READ_WRITE] * rw
             + [pb.Permission.NONE] * n)
    return [pb.MessageQueue(topic=topic, id=i, permission=p, broker=broker, accept_message_types=types)
            for i, p in enumerate(perms)]


class RouteActivity:
    def __init__(self, config: ProxyConfig, cluster: ClusterService) -> None:
        self.config = config
        self.cluster = cluster

    def _endpoints(self, requested: Any) -> Any:
        """The request's addresses with the proxy's own port (useEndpointPortFromRequest off)."""
        port = self.config.grpc_server_port
        addresses = [pb.Address(host=a.host, port=port) for a in requested.addresses]
        if not addresses:
            addresses = [pb.Address(host=self.config.grpc_host, port=port)]
        return pb.Endpoints(scheme=requested.scheme or pb.AddressScheme.IPv4, addresses=addresses)

    async def query_route(self, ctx: ProxyContext, request: Any) -> Any:
        validate_topic(request.topic.name)
        route = await self.cluster.route(request.topic.name)
        types = accept_message_types(await self.cluster.topic_message_type(request.topic.name, route))
        endpoints = self._endpoints(request.endpoints)
        queues = []
        brokers = {bd.broker_name: bd for bd in route.broker_datas}
        for qd in route.queue_datas:
            bd = brokers.get(qd.broker_name)
            if bd is None:
                break  # (RocketMQ's proxy stops at the first queue data without broker data too)
            for broker_id in sorted(bd.broker_addrs):
                broker = pb.Broker(name=qd.broker_name, id=broker_id, endpoints=endpoints)
                queues.extend(queues_of(qd, request.topic, broker, types))
        return pb.QueryRouteResponse(status=ok(), message_queues=queues)

    async def query_assignment(self, ctx: ProxyContext, request: Any) -> Any:
        validate_topic(request.topic.name)
        validate_consumer_group(request.group.name)
        route = await self.cluster.route(request.topic.name)
        endpoints = self._endpoints(request.endpoints)
        # A FIFO group (consumeMessageOrderly) gets one assignment per queue, any other group the broker-wide -1.
        config = await self.cluster.subscription_group_config(request.group.name, request.topic.name)
        fifo = config is not None and config.consume_message_orderly
        assignments = []
        brokers = {bd.broker_name: bd for bd in route.broker_datas}
        for qd in route.queue_datas:
            if not PermName.is_readable(qd.perm) or qd.read_queue_nums <= 0:
                continue
            bd = brokers.get(qd.broker_name)
            if bd is None or 0 not in bd.broker_addrs:
                continue
            broker = pb.Broker(name=qd.broker_name, id=0, endpoints=endpoints)
            for queue_id in range(qd.read_queue_nums) if fifo else (-1,):
                mq = pb.MessageQueue(topic=request.topic, id=queue_id, permission=permission(qd.perm), broker=broker)
                assignments.append(pb.Assignment(message_queue=mq))
        if not assignments:
            return pb.QueryAssignmentResponse(status=status(pb.Code.FORBIDDEN, "no readable queue"))
        return pb.QueryAssignmentResponse(status=ok(), assignments=assignments)
