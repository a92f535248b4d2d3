"""MessageUtil: the reply to a request message (what a consumer answering Producer.request sends back)."""

from __future__ import annotations

from collections.abc import Mapping

from pocketmq.common.constants import (
    PROPERTY_CLUSTER,
    PROPERTY_CORRELATION_ID,
    PROPERTY_MESSAGE_REPLY_TO_CLIENT,
    PROPERTY_MESSAGE_TTL,
    PROPERTY_MESSAGE_TYPE,
)
from pocketmq.common.mix_all import REPLY_MESSAGE_FLAG, get_reply_topic

from .exceptions import ClientErrorCode, MQClientException
from .message import Message


def create_reply_message(request_message: object, body: bytes) -> Message:
    """The reply to ``request_message`` (a received request) carrying ``body``: to ``<cluster>_REPLY_TOPIC``,
    with the request's CORRELATION_ID, REPLY_TO_CLIENT and TTL. Send it with any started Producer."""
    props: Mapping[str, str] | None = getattr(request_message, "properties", None)
    if props is None:
        raise MQClientException(
            "create reply message fail, requestMessage cannot be null.",
            response_code=ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION,
        )
    cluster = props.get(PROPERTY_CLUSTER)
    if not cluster:
        raise MQClientException(
            f"create reply message fail, requestMessage error, property[{PROPERTY_CLUSTER}] is null.",
            response_code=ClientErrorCode.CREATE_REPLY_MESSAGE_EXCEPTION,
        )
    reply = Message(get_reply_topic(cluster), body)
    reply.put_property(PROPERTY_MESSAGE_TYPE, REPLY_MESSAGE_FLAG)
    for name in (PROPERTY_CORRELATION_ID, PROPERTY_MESSAGE_REPLY_TO_CLIENT, PROPERTY_MESSAGE_TTL):
        value = props.get(name)
        if value:
            reply.put_property(name, value)
    return reply


def get_reply_to_client(msg: object) -> str | None:
    props: Mapping[str, str] = getattr(msg, "properties", {})
    return props.get(PROPERTY_MESSAGE_REPLY_TO_CLIENT)


class MessageUtil:
    """RocketMQ's class name for the same helpers: ``MessageUtil.create_reply_message(request, body)``."""

    create_reply_message = staticmethod(create_reply_message)
    get_reply_to_client = staticmethod(get_reply_to_client)
