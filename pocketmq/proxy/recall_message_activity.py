"""RecallMessageActivity: RecallMessage as the broker's RECALL_MESSAGE (RocketMQ 5's RecallMessageActivity with
ProducerProcessor.recallMessage): the topic must be a DELAY topic (when types are checked), the handle must
decode, and the broker it names is asked to store the delete marker. Whether the recall is in time is the
broker's to say."""

from __future__ import annotations

from typing import Any

from pocketmq.client.exceptions import MQClientException
from pocketmq.common.recall_message_handle import RecallHandleError, decode_handle
from pocketmq.common.topic_attributes import TopicMessageType
from pocketmq.remoting.codes import ResponseCode
from pocketmq.remoting.recall_header import RecallMessageRequestHeader

from .cluster_service import ClusterService
from .config import ProxyConfig
from .grpc_validator import validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import PROXY_EXCEPTION, GrpcProxyException, ok
from .send_message_activity import check_message_type

pb = load()


class RecallMessageActivity:
    def __init__(self, config: ProxyConfig, cluster: ClusterService) -> None:
        self.config = config
        self.cluster = cluster

    async def recall_message(self, ctx: ProxyContext, request: Any) -> Any:
        topic = request.topic.name
        validate_topic(topic)
        if self.config.enable_topic_message_type_check:
            check_message_type(topic, await self.topic_type(topic), TopicMessageType.DELAY)
        try:
            handle = decode_handle(request.recall_handle)
        except RecallHandleError as e:
            raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, PROXY_EXCEPTION + str(e)) from e
        addr = await self.broker_addr(handle.broker_name)
        header = RecallMessageRequestHeader(topic=topic, recall_handle=request.recall_handle,
                                            broker_name=handle.broker_name)
        message_id = await self.cluster.recall_message(addr, header)
        return pb.RecallMessageResponse(status=ok(), message_id=message_id)

    async def topic_type(self, topic: str) -> str | None:
        """The topic's message type; a topic the name server does not know is UNSPECIFIED, as RocketMQ's metadata
        service has it, so its recall is a type conflict, not TOPIC_NOT_FOUND."""
        try:
            route = await self.cluster.route(topic)
        except MQClientException as e:
            if e.response_code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            return "UNSPECIFIED"
        return await self.cluster.topic_message_type(topic, route)

    async def broker_addr(self, broker_name: str) -> str:
        """The master of ``broker_name``, found by the route of the topic every broker names after itself
        (TopicRouteService.getBrokerAddr); BAD_REQUEST (INVALID_BROKER_NAME) when there is none."""
        try:
            addr = self.cluster.master_addr(await self.cluster.route(broker_name), broker_name)
        except Exception:
            addr = None
        if addr is None:
            raise GrpcProxyException(pb.Code.BAD_REQUEST, f"{PROXY_EXCEPTION}cannot find broker {broker_name}")
        return addr
