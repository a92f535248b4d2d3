"""ClientRemotingProcessor's admin requests: what a broker asks of a running consumer for an operator, a
consumer's running info (GET_CONSUMER_RUNNING_INFO) and an offset reset (RESET_CONSUMER_CLIENT_OFFSET)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pocketmq.remoting.admin_body import ResetOffsetBody
from pocketmq.remoting.admin_header import GetConsumerRunningInfoRequestHeader, ResetOffsetRequestHeader
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
