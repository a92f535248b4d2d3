"""INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223), as RocketMQ 4.9.7's AdminBrokerProcessor.getConsumerStatus and
Broker2Client.getConsumeStatus answer it: the broker asks the group's consumers (or the one named) for their
offsets of a topic with GET_CONSUMER_STATUS_FROM_CLIENT (221) and answers what each said, by client id."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common.java_text import is_blank
from pocketmq.common.mq_version import V3_0_7_SNAPSHOT, version_desc
from pocketmq.remoting.admin_body import GetConsumerStatusBody
from pocketmq.remoting.admin_header import GetConsumerStatusRequestHeader
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import BodyError, RemotingError
from pocketmq.remoting.transport import Channel

from ..client.client_channel_info import ClientChannelInfo
from ..client_call_gate import ClientCallGate
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController

CALL_CLIENT_TIMEOUT = 5.0  # Broker2Client.getConsumeStatus's invokeSync: 5 s


class AdminConsumerStatusProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        # (RocketMQ asks the clients on its admin pool, shared with GET_CONSUMER_RUNNING_INFO; here each kind of
        # call to clients has its own bound of as many calls at once)
        self._client_calls = ClientCallGate()
        self.handlers[RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS] = self.get_consumer_status

    async def get_consumer_status(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(GetConsumerStatusRequestHeader)
        log.info("[get-consumer-status] asked by %s: topic=%s group=%s", channel.remote_address, header.topic,
                 header.group)
        info = self.controller.consumer_manager.get_consumer_group_info(header.group)
        # (4.9.7 fails with a NullPointerException for a group it has no record of, SYSTEM_ERROR all the same)
        if info is None or not info.channel_info_table:
            return response(request, ResponseCode.SYSTEM_ERROR,
                            f"No Any Consumer online in the consumer group: [{header.group}]")
        asked = _clients_to_ask(list(info.channel_info_table.values()), header.client_addr)
        if isinstance(asked, str):
            return response(request, ResponseCode.SYSTEM_ERROR, asked)
        table: dict[str, dict[MessageQueue, int]] = {}
        for client in asked:
            offsets = await self._ask(channel, client, header)
            if offsets is not None:
                table[client.client_id] = offsets
        return response(request, body=request.encode_body(GetConsumerStatusBody(consumer_table=table)))

    async def _ask(self, asker: Channel, client: ClientChannelInfo,
                   header: GetConsumerStatusRequestHeader) -> dict[MessageQueue, int] | None:
        """The client's offsets; None when it fails to answer, or answers anything but SUCCESS with a body (it is
        then left out of the answer, as RocketMQ leaves it out)."""
        ask = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                      GetConsumerStatusRequestHeader(header.topic, header.group))
        try:
            answer = await self._client_calls.call(asker, client.channel, ask, CALL_CLIENT_TIMEOUT)
            if answer.code != ResponseCode.SUCCESS or answer.body is None:
                return None
            return answer.decode_body(GetConsumerStatusBody).message_queue_table
        except (RemotingError, BodyError) as e:
            log.warning("[get-consumer-status] %s of group %s did not answer for topic %s: %s", client.client_id,
                        header.group, header.topic, e)
            return None


def _clients_to_ask(clients: list[ClientChannelInfo], client_id: str | None) -> list[ClientChannelInfo] | str:
    """The clients to ask, in the group's order: every one, or the one whose id is ``client_id``; or the refusal
    of a client too old to answer, met before that one (RocketMQ checks each client's version as it walks the
    group, until it has asked the one named)."""
    every = client_id is None or is_blank(client_id)
    asked = []
    for client in clients:
        if client.version < V3_0_7_SNAPSHOT:
            return f"the client does not support this feature. version={version_desc(client.version)}"
        if every or client.client_id == client_id:
            asked.append(client)
            if not every:
                break
    return asked
