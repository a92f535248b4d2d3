"""ClientRemotingProcessor's admin requests: what a broker asks of a running consumer for an operator, a
consumer's running info (GET_CONSUMER_RUNNING_INFO), its offsets (GET_CONSUMER_STATUS_FROM_CLIENT) and an offset
reset (RESET_CONSUMER_CLIENT_OFFSET)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pocketmq.remoting.admin_body import GetConsumerStatusBody, ResetOffsetBody
from pocketmq.remoting.admin_header import (
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError, HeaderError
from pocketmq.remoting.transport import Channel

if TYPE_CHECKING:
    from .mq_client_instance import MQClientInstance

log = logging.getLogger(__name__)


class ClientAdminProcessor:
    def __init__(self, instance: MQClientInstance) -> None:
        self.instance = instance

    def register(self) -> None:
        client = self.instance.mq_client_api.remoting_client
        client.register_processor(RequestCode.GET_CONSUMER_RUNNING_INFO, self.get_consumer_running_info)
        client.register_processor(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self.reset_offset)
        client.register_processor(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self.get_consume_status)

    async def get_consumer_running_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            header = request.decode_header(GetConsumerRunningInfoRequestHeader)
        except HeaderError as e:
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, f"bad request: {e}")
        consumer: Any = self.instance.consumer_table.get(header.consumer_group)
        running_info = getattr(consumer, "running_info", None)
        if running_info is None:
            return RemotingCommand.response_to(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer Group <{header.consumer_group}> not exist in this consumer",
            )
        info = running_info()
        return RemotingCommand.response_to(request, body=request.encode_body(info))

    async def get_consume_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        try:
            header = request.decode_header(GetConsumerStatusRequestHeader)
        except HeaderError as e:
            return RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR, f"bad request: {e}")
        offsets = self.consumer_status(header.topic, header.group)
        return RemotingCommand.response_to(request, body=request.encode_body(GetConsumerStatusBody(offsets)))

    def consumer_status(self, topic: str, group: str) -> dict[MessageQueue, int]:
        """MQClientInstance.getConsumerStatus: the offsets of ``topic`` the group's consumer here holds, for the
        push and pull consumers; nothing for the others (the lite pull, simple and popping push consumers), nor
        for a group this client does not run, as RocketMQ's client answers."""
        consumer: Any = self.instance.consumer_table.get(group)
        status = getattr(consumer, "consumer_status", None)
        return status(topic) if status is not None else {}

    async def reset_offset(self, channel: Channel, request: RemotingCommand) -> None:
        try:
            header = request.decode_header(ResetOffsetRequestHeader)
            body = request.decode_body(ResetOffsetBody)
        except (HeaderError, BodyError) as e:
            log.warning("bad RESET_CONSUMER_CLIENT_OFFSET from %s: %s", channel.remote_address, e)
            return None
        log.info("invoke reset offset operation from broker %s: %s@%s at %d", channel.remote_address,
                 header.topic, header.group, header.timestamp)
        consumer: Any = self.instance.consumer_table.get(header.group)
        reset = getattr(consumer, "reset_offset", None)
        if reset is None:
            log.info("[reset-offset] group %s has no push consumer here", header.group)
            return None
        await reset(header.topic, body.offset_table)
        return None
