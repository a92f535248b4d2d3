"""ClientManageProcessor: HEART_BEAT (34), UNREGISTER_CLIENT (35) and CHECK_CLIENT_CONFIG (46)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pocketmq.common import mix_all
from pocketmq.remoting.client_body import CheckClientRequestBody, HeartbeatData
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode, TopicSysFlag
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.header import UnregisterClientRequestHeader
from pocketmq.remoting.transport import Channel

from ..client.client_channel_info import ClientChannelInfo
from ..filter import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    SubscriptionParseError,
    compile_sql92_subscription,
)
from .base import BrokerProcessor, log, response

if TYPE_CHECKING:
    from ..broker_controller import BrokerController


class ClientManageProcessor(BrokerProcessor):
    def __init__(self, controller: BrokerController) -> None:
        super().__init__(controller)
        self.handlers[RequestCode.HEART_BEAT] = self.heart_beat
        self.handlers[RequestCode.UNREGISTER_CLIENT] = self.unregister_client
        self.handlers[RequestCode.CHECK_CLIENT_CONFIG] = self.check_client_config

    async def heart_beat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        heartbeat = request.decode_body(HeartbeatData)
        c = self.controller
        info = ClientChannelInfo(channel, heartbeat.client_id, request.language, request.version)
        channel.attrs["clientId"] = heartbeat.client_id
        for data in heartbeat.consumer_data_set:
            sgc = c.subscription_group_manager.find_subscription_group_config(data.group_name)
            notify = True
            if sgc is not None:
                notify = sgc.notify_consumer_ids_changed_enable
                topic_sys_flag = TopicSysFlag.FLAG_UNIT_SUB if data.unit_mode else 0
                # Each consumer group gets its retry topic at its first heartbeat.
                c.topic_config_manager.create_topic_in_send_message_back_method(
                    mix_all.get_retry_topic(data.group_name),
                    sgc.retry_queue_nums,
                    PermName.PERM_WRITE | PermName.PERM_READ,
                    topic_sys_flag,
                )
            changed = c.consumer_manager.register_consumer(
                data.group_name,
                info,
                data.consume_type,
                data.message_model,
                data.consume_from_where,
                data.subscription_data_set,
                notify,
            )
            if changed:
                log.info(
                    "registered consumer group %s: %s from %s",
                    data.group_name,
                    heartbeat.client_id,
                    channel.remote_address,
                )
        for pdata in heartbeat.producer_data_set:
            c.producer_manager.register_producer(pdata.group_name, info)
        problems = _malformed_sql92(heartbeat)
        if problems:
            # Registered all the same (as RocketMQ does: one bad subscription must not expire the client's other
            # groups); the code tells the client now rather than at every pull.
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "; ".join(problems))
        return response(request)

    async def unregister_client(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = request.decode_header(UnregisterClientRequestHeader)
        c = self.controller
        info = ClientChannelInfo(channel, header.client_id, request.language, request.version)
        if header.producer_group is not None:
            c.producer_manager.unregister_producer(header.producer_group, info)
        if header.consumer_group is not None:
            sgc = c.subscription_group_manager.find_subscription_group_config(header.consumer_group)
            notify = sgc.notify_consumer_ids_changed_enable if sgc is not None else True
            c.consumer_manager.unregister_consumer(header.consumer_group, info, notify)
        return response(request)


    async def check_client_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """Whether this broker can serve a subscription: a consumer asks before it starts (RocketMQ's
        checkClientInBroker), so a SQL92 filter a broker cannot apply fails the start, not every pull."""
        raw = request.decode_body()
        if raw is None or raw == []:  # (the body "null" or "[]", which fastjson reads as null: nothing to check)
            return response(request)
        sub = CheckClientRequestBody.from_dict(raw).subscription_data
        if sub is None or (sub.expression_type or EXPRESSION_TYPE_TAG) == EXPRESSION_TYPE_TAG:
            return response(request)
        if not self.controller.broker_config.enable_property_filter:
            return response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )
        if sub.expression_type != EXPRESSION_TYPE_SQL92:
            # (RocketMQ's FilterFactory has no filter of the type: compiling with none fails as a parse does)
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                            f"no filter for the expression type {sub.expression_type}")
        try:
            compile_sql92_subscription(sub.sub_string)
        except SubscriptionParseError as e:
            return response(request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(e))
        return response(request)


def _malformed_sql92(heartbeat: HeartbeatData) -> list[str]:
    problems = []
    for data in heartbeat.consumer_data_set:
        for sub in data.subscription_data_set:
            if sub.expression_type == EXPRESSION_TYPE_SQL92:
                try:
                    compile_sql92_subscription(sub.sub_string)
                except SubscriptionParseError as e:
                    problems.append(f"group {data.group_name} topic {sub.topic}: {e}")
    return problems
