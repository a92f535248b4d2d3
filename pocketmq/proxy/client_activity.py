"""ClientActivity: Heartbeat, NotifyClientTermination and the Settings exchange of Telemetry."""

from __future__ import annotations

import logging
from typing import Any

from pocketmq.remoting.codes import LanguageCode

from .cluster_service import ClusterService
from .grpc_channel_manager import GrpcChannelManager, GrpcClientChannel
from .grpc_client_settings_manager import GrpcClientSettingsManager
from .grpc_validator import validate_consumer_group, validate_topic
from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import GrpcProxyException, ok, status

pb = load()
log = logging.getLogger(__name__)

_CONSUMERS = (pb.ClientType.PUSH_CONSUMER, pb.ClientType.SIMPLE_CONSUMER)
NO_SETTINGS = "cannot find client settings for this client"
# The names of RocketMQ 5.5.0's LanguageCode (NODE_JS among them, which the remoting protocol's codes do not need):
# its proxy reads `x-mq-language` with LanguageCode.valueOf wherever it registers or unregisters a client, and
# fails on any other (no header too), an internal error. The SDKs send one of these (the Go SDK GO, Node's HTTP).
LANGUAGES = frozenset(code.name for code in LanguageCode) | {"NODE_JS"}


def check_language(ctx: ProxyContext) -> None:
    if ctx.language not in LANGUAGES:
        raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, "No enum constant org.apache.rocketmq.remoting."
                                 f"protocol.LanguageCode.{ctx.language}. IllegalArgumentException")


class ClientActivity:
    def __init__(self, settings: GrpcClientSettingsManager, channels: GrpcChannelManager,
                 cluster: ClusterService) -> None:
        self.settings = settings
        self.channels = channels
        self.cluster = cluster

    async def heartbeat(self, ctx: ProxyContext, request: Any) -> Any:
        settings = self.settings.client_settings(ctx.client_id)
        if settings is None:
            return pb.HeartbeatResponse(status=status(pb.Code.UNRECOGNIZED_CLIENT_TYPE, NO_SETTINGS))
        if settings.client_type == pb.ClientType.PRODUCER:
            if settings.publishing.topics:  # (RocketMQ registers the client per topic)
                check_language(ctx)
            channel = self._touch(ctx)
            new = {t.name for t in settings.publishing.topics} - channel.producer_topics
            if new:
                channel.producer_topics |= new
                self.cluster.heartbeat_soon()
        elif settings.client_type in _CONSUMERS:
            validate_consumer_group(request.group.name)
            check_language(ctx)
            self._touch(ctx)
        else:
            return pb.HeartbeatResponse(status=status(pb.Code.UNRECOGNIZED_CLIENT_TYPE,
                                                      pb.ClientType.Name(settings.client_type)))
        return pb.HeartbeatResponse(status=ok())

    def _touch(self, ctx: ProxyContext) -> GrpcClientChannel:
        return self.channels.touch(ctx.client_id, ctx.language, ctx.client_version, ctx.remote_address)

    async def notify_client_termination(self, ctx: ProxyContext, request: Any) -> Any:
        check_language(ctx)  # (before anything is removed, as RocketMQ)
        settings = self.settings.remove_client_settings(ctx.client_id)
        if settings is None:
            return pb.NotifyClientTerminationResponse(status=status(pb.Code.UNRECOGNIZED_CLIENT_TYPE, NO_SETTINGS))
        if settings.client_type in _CONSUMERS:
            validate_consumer_group(request.group.name)
        elif settings.client_type != pb.ClientType.PRODUCER:
            return pb.NotifyClientTerminationResponse(status=status(pb.Code.UNRECOGNIZED_CLIENT_TYPE,
                                                                    pb.ClientType.Name(settings.client_type)))
        channel = self.channels.remove_channel(ctx.client_id)
        if channel is not None and channel.producer_topics:
            self.cluster.heartbeat_soon()
        return pb.NotifyClientTerminationResponse(status=ok())

    async def read_group_config(self, command: Any) -> None:
        """A consumer's group config read before its Settings are answered: the reply carries the group's fifo and
        retries (mergeSubscriptionData)."""
        settings = command.settings
        if settings.WhichOneof("pub_sub") != "subscription" or not settings.subscription.subscriptions:
            return
        try:
            await self.cluster.subscription_group_config(settings.subscription.group.name,
                                                         settings.subscription.subscriptions[0].topic.name)
        except Exception as e:
            log.debug("group config of %s: %s", settings.subscription.group.name, e)

    def process_client_settings(self, ctx: ProxyContext, channel: GrpcClientChannel, command: Any) -> Any:
        """processAndWriteClientSettings: register the client, store its Settings, answer with the merged ones.
        Raises GrpcProxyException for a bad topic or group; returns None when Settings has neither publishing nor
        subscription (the stream then ends with INVALID_ARGUMENT)."""
        settings = command.settings
        which = settings.WhichOneof("pub_sub")
        if which == "publishing":
            if len(settings.publishing.topics) > self.cluster.config.max_producer_topics:
                raise GrpcProxyException(pb.Code.BAD_REQUEST, f"a producer may publish to at most "
                                         f"{self.cluster.config.max_producer_topics} topics in its settings, not "
                                         f"{len(settings.publishing.topics)}")
            for topic in settings.publishing.topics:
                validate_topic(topic.name)
                check_language(ctx)
            topics = {t.name for t in settings.publishing.topics}
            if topics - channel.producer_topics:
                self.cluster.heartbeat_soon()
            channel.producer_topics = topics
        elif which == "subscription":
            validate_consumer_group(settings.subscription.group.name)
            check_language(ctx)
            check_not_lite(settings)
        else:
            return None
        self.settings.update_client_settings(ctx.client_id, settings)
        merged = self.settings.client_settings(ctx.client_id)
        return pb.TelemetryCommand(status=ok(), settings=merged)


def check_not_lite(settings: Any) -> None:
    """5.5.0's refusals of its lite consumers (ClientProcessor.validateLiteMode, buildConsumeType): a lite push
    consumer needs a lite group (``lite.bind.topic``), which pocketmq, having no lite topics, never has; 5.5.0
    registers no lite simple consumer at all."""
    if settings.client_type == pb.ClientType.LITE_PUSH_CONSUMER:
        raise GrpcProxyException(pb.Code.ILLEGAL_CONSUMER_GROUP,
                                 f"regular group cannot use LITE mode: {settings.subscription.group.name}")
    if settings.client_type == pb.ClientType.LITE_SIMPLE_CONSUMER:
        raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR,
                                 "Client type is not consumer, type: LITE_SIMPLE_CONSUMER")


def telemetry_error(error: GrpcProxyException) -> bool:
    """processTelemetryException: a client's mistake (4xxxx) ends the stream with INVALID_ARGUMENT, anything else
    with INTERNAL."""
    return int(pb.Code.BAD_REQUEST) <= error.code < int(pb.Code.INTERNAL_ERROR)
