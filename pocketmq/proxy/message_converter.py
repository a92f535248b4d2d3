"""5.x messages ⇄ 4.x records: SendMessageActivity.buildMessageProperty and GrpcConverter.buildMessage.

This is where both generations meet: the gRPC fields become the very properties a 4.x client writes (UNIQ_KEY,
TAGS, KEYS, __SHARDINGKEY, TIMER_DELIVER_MS, TRAN_MSG ...), so a 4.x consumer reads a 5.x producer's message with
the same id, tag, keys and properties, and the reverse.
"""

from __future__ import annotations

import hashlib
import ipaddress
import struct
import time
from dataclasses import dataclass
from typing import Any

from pocketmq.common.compression import InflateError, inflate_body
from pocketmq.common.constants import (
    COMPRESSED_FLAG,
    KEY_SEPARATOR,
    PROPERTY_BORN_HOST,
    PROPERTY_BORN_TIMESTAMP,
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_DLQ_ORIGIN_MESSAGE_ID,
    PROPERTY_DLQ_ORIGIN_TOPIC,
    PROPERTY_KEYS,
    PROPERTY_LITE_TOPIC,
    PROPERTY_POP_CK,
    PROPERTY_PRIORITY,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_SHARDING_KEY,
    PROPERTY_TAGS,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TRACE_CONTEXT,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    TRANSACTION_PREPARED_TYPE,
)
from pocketmq.common.java_text import is_blank, java_split, parse_integer
from pocketmq.common.message import MessageExt
from pocketmq.common.topic_attributes import message_priority

from .config import ProxyConfig
from .grpc_validator import contains_control_character, validate_lite_topic, validate_tag
from .proto_time import duration_seconds, timestamp_millis, timestamp_valid
from .protocol import load
from .proxy_exception import GrpcProxyException

pb = load()

# MessageConst.STRING_HASH_SET: names a user property may not take, and that are not user properties on the way
# back. (RocketMQ leaves __SHARDINGKEY, TRACE_CONTEXT and CHECK_IMMUNITY_TIME_IN_SECONDS out of it: a consumer
# sees them among the user properties too.)
SYSTEM_PROPERTY_NAMES = frozenset({
    "1ST_POP_TIME", "ARRIVE_TIME", "BORN_TIMESTAMP", "BUYER_ID", "CLUSTER", "CONSUME_START_TIME", "CORRECTION_FLAG",
    "CORRELATION_ID", "DELAY", "DLQ_ORIGIN_MESSAGE_ID", "DLQ_ORIGIN_TOPIC", "DUP_INFO", "EXTEND_UNIQ_INFO",
    "INNER_MULTI_QUEUE_OFFSET", "INSTANCE_ID", "KEYS", "MAX_OFFSET", "MAX_RECONSUME_TIMES", "MIN_OFFSET",
    "MQ2_FLAG", "MSG_REGION", "MSG_TYPE", "ORIGIN_MESSAGE_ID", "PGROUP", "POP_CK", "POP_CK_OFFSET",
    "PUSH_REPLY_TIME", "REAL_QID", "REAL_TOPIC", "RECONSUME_TIME", "REPLY_TO_CLIENT", "RETRY_TOPIC", "TAGS",
    "TIMER_DELAY_LEVEL", "TIMER_DELAY_MS", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_DEL_UNIQKEY",
    "TIMER_DEQUEUE_MS", "TIMER_ENQUEUE_MS", "TIMER_OUT_MS", "TIMER_ROLL_TIMES", "TRACE_ON", "TRANSFER_FLAG",
    "TRAN_MSG", "TRAN_PREPARED_QUEUE_OFFSET", "TTL", "UNIQ_KEY", "WAIT", "__BORNHOST", "__CRC32#",
    PROPERTY_PRIORITY, PROPERTY_LITE_TOPIC,
})


@dataclass(slots=True)
class BrokerMessage:
    """What SEND_MESSAGE_V2 carries for one 5.x message."""

    topic: str
    body: bytes
    properties: dict[str, str]
    sys_flag: int
    born_timestamp: int


def sys_flag_of(message: Any) -> int:
    """SendMessageActivity.buildSysFlag: body encoding and transaction type."""
    flag = 0
    props = message.system_properties
    if props.body_encoding == pb.Encoding.GZIP:
        flag |= COMPRESSED_FLAG
    if props.message_type == pb.MessageType.TRANSACTION:
        flag |= TRANSACTION_PREPARED_TYPE
    return flag


def build_message(config: ProxyConfig, message: Any, producer_group: str, remote_address: str,
                  now_ms: int) -> BrokerMessage:
    """One 5.x message as the broker's record; GrpcProxyException with RocketMQ's code when it is not valid."""
    body = message.body
    if config.enable_message_body_empty_check and not body:
        raise GrpcProxyException(pb.Code.MESSAGE_BODY_EMPTY, "message body cannot be empty")
    if 0 < config.max_message_size < len(body):
        raise GrpcProxyException(pb.Code.MESSAGE_BODY_TOO_LARGE,
                                 f"message body cannot exceed the max {config.max_message_size}")
    props = build_message_property(config, message, producer_group, remote_address, now_ms)
    born = int(props.get(PROPERTY_BORN_TIMESTAMP) or now_ms)
    return BrokerMessage(message.topic.name, bytes(body), props, sys_flag_of(message), born)


def build_message_property(config: ProxyConfig, message: Any, producer_group: str, remote_address: str,
                           now_ms: int) -> dict[str, str]:
    """SendMessageActivity.buildMessageProperty, check for check, in its order."""
    props: dict[str, str] = {}
    user_size = _put_user_properties(config, message.user_properties, props)
    sp = message.system_properties
    tag = sp.tag
    validate_tag(tag)
    if tag:
        props[PROPERTY_TAGS] = tag
    user_size += len(tag.encode())
    for key in sp.keys:
        _validate_key(key)
        user_size += len(key.encode())
    if sp.keys:
        props[PROPERTY_KEYS] = KEY_SEPARATOR.join(sp.keys)
    if user_size > config.max_user_property_size:
        raise GrpcProxyException(pb.Code.MESSAGE_PROPERTIES_TOO_LARGE, "the total size of user property is too "
                                 f"large, max is {config.max_user_property_size}")
    if is_blank(sp.message_id):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_ID, "message id cannot be empty")
    props[PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    if sp.message_type == pb.MessageType.TRANSACTION:
        _put_transaction_properties(config, sp, props)
    if sp.HasField("delivery_timestamp"):
        deliver_ms = timestamp_millis(sp.delivery_timestamp)
        if 0 < config.max_delay_time_millis < deliver_ms - now_ms:
            raise GrpcProxyException(pb.Code.ILLEGAL_DELIVERY_TIME, "the max delay time of message is too large, "
                                     f"max is {config.max_delay_time_millis}")
        props[PROPERTY_TIMER_DELIVER_MS] = str(deliver_ms)
    if sp.HasField("priority"):
        if sp.priority < 0:
            # (5.5.0's Message.setPriority throws IllegalArgumentException: an internal error, its text)
            raise GrpcProxyException(pb.Code.INTERNAL_SERVER_ERROR, "The priority must be greater than or equal to 0. "
                                     "IllegalArgumentException")
        props[PROPERTY_PRIORITY] = str(sp.priority)
    props[PROPERTY_RECONSUME_TIME] = str(sp.delivery_attempt)
    props[PROPERTY_PRODUCER_GROUP] = producer_group
    if sp.message_group:
        _validate_message_group(config, sp.message_group)
        props[PROPERTY_SHARDING_KEY] = sp.message_group
    if sp.lite_topic:
        # (only to type the send: a lite message is then a type conflict, as pocketmq has no LITE topic)
        validate_lite_topic(sp.lite_topic, config.max_lite_topic_size)
        props[PROPERTY_LITE_TOPIC] = sp.lite_topic
    if sp.trace_context:
        props[PROPERTY_TRACE_CONTEXT] = sp.trace_context
    born_host = remote_address if is_blank(sp.born_host) else sp.born_host
    if not is_blank(born_host):
        props[PROPERTY_BORN_HOST] = born_host
    if sp.HasField("born_timestamp") and timestamp_valid(sp.born_timestamp):
        props[PROPERTY_BORN_TIMESTAMP] = str(timestamp_millis(sp.born_timestamp))
    return props


def _put_user_properties(config: ProxyConfig, user: Any, props: dict[str, str]) -> int:
    """The message's user properties, checked (no system name, no control character), into ``props``; their size
    in bytes, which counts towards max_user_property_size with the tag and keys."""
    if len(user) > config.user_property_max_num:
        raise GrpcProxyException(pb.Code.MESSAGE_PROPERTIES_TOO_LARGE,
                                 f"too many user properties, max is {config.user_property_max_num}")
    user_size = 0
    for key, value in user.items():
        if key in SYSTEM_PROPERTY_NAMES:
            raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}")
        if contains_control_character(key):
            raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                     "the key of property cannot contain control character")
        if contains_control_character(value):
            raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_PROPERTY_KEY,
                                     "the value of property cannot contain control character")
        user_size += len(key.encode()) + len(value.encode())
        props[key] = value
    return user_size


def _put_transaction_properties(config: ProxyConfig, sp: Any, props: dict[str, str]) -> None:
    """A half message, with the time before its first check when the producer names one."""
    props[PROPERTY_TRANSACTION_PREPARED] = "true"
    if sp.HasField("orphaned_transaction_recovery_duration"):
        seconds = duration_seconds(sp.orphaned_transaction_recovery_duration)
        if 0 < config.max_transaction_recovery_second < seconds:
            raise GrpcProxyException(pb.Code.BAD_REQUEST, "the max transaction recovery time of message is too "
                                     f"large, max is {config.max_transaction_recovery_second}")
        props[PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(seconds)


def _validate_key(key: str) -> None:
    if key and is_blank(key):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot be the char sequence of whitespace")
    if contains_control_character(key):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_KEY, "key cannot contain control character")


def _validate_message_group(config: ProxyConfig, group: str) -> None:
    if is_blank(group):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_GROUP,
                                 "message group cannot be the char sequence of whitespace")
    if 0 < config.max_message_group_size <= len(group.encode()):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_GROUP,
                                 f"message group exceed the max size {config.max_message_group_size}")
    if contains_control_character(group):
        raise GrpcProxyException(pb.Code.ILLEGAL_MESSAGE_GROUP, "message group cannot contain control character")


_TRANSACTION, _DELAY, _FIFO, _NORMAL = (int(pb.MessageType.TRANSACTION), int(pb.MessageType.DELAY),
                                        int(pb.MessageType.FIFO), int(pb.MessageType.NORMAL))
_PRIORITY, _LITE = int(pb.MessageType.PRIORITY), int(pb.MessageType.LITE)


def build_message_type(props: dict[str, str]) -> int:
    """GrpcConverter.buildMessageType: a received message's type, as the protocol's MessageType (a send's type,
    checked against its topic's, is common.topic_attributes.message_type_of, the broker's rule)."""
    if props.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return _TRANSACTION
    if (PROPERTY_DELAY_TIME_LEVEL in props or PROPERTY_TIMER_DELIVER_MS in props
            or PROPERTY_TIMER_DELAY_SEC in props):
        return _DELAY
    if PROPERTY_SHARDING_KEY in props:
        return _FIFO
    if PROPERTY_PRIORITY in props:
        return _PRIORITY
    if PROPERTY_LITE_TOPIC in props:
        return _LITE
    return _NORMAL


# The enum values a received message needs, read once: each read through the generated enum wrapper is a Python
# __getattr__ call, several per message.
_MD5, _GZIP, _IDENTITY = int(pb.DigestType.MD5), int(pb.Encoding.GZIP), int(pb.Encoding.IDENTITY)


def _set_timestamp(field: Any, millis: int) -> None:
    """A Timestamp field set in place (no message made and copied in)."""
    field.seconds, field.nanos = millis // 1000, (millis % 1000) * 1_000_000


def host_address(address: str) -> str:
    """InetAddress.getHostAddress of a decoded "ip:port" / "[ip]:port" (MessageExt.getBornHostString): the IP
    alone, an IPv6 one as Java writes it (eight groups, none shortened: 0:0:0:0:0:0:0:1), an IPv4-mapped one as
    the IPv4 address (Java's InetAddress.getByAddress makes it an Inet4Address)."""
    host = address.rpartition(":")[0] if ":" in address else address
    if not host.startswith("["):
        return host
    try:
        ip = ipaddress.IPv6Address(host[1:-1])
    except ValueError:
        return host[1:-1]
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return ":".join(f"{group:x}" for group in _GROUPS.unpack(ip.packed))


_GROUPS = struct.Struct(">8H")


def _set_delivery_timestamp(sp: Any, props: dict[str, str]) -> None:
    """GrpcConverter.buildSystemProperties: a TIMER_DELAY_SEC message is due its delay from now (the time of this
    answer, not of the send: what Apache's proxy says), ahead of any TIMER_DELIVER_MS; a value that is no number
    gives none (Apache's fails the receive)."""
    delay_sec = props.get(PROPERTY_TIMER_DELAY_SEC)
    try:
        if delay_sec is not None:
            _set_timestamp(sp.delivery_timestamp, time.time_ns() // 1_000_000 + parse_integer(delay_sec) * 1000)
        elif PROPERTY_TIMER_DELIVER_MS in props:
            _set_timestamp(sp.delivery_timestamp, parse_integer(props[PROPERTY_TIMER_DELIVER_MS]))
    except ValueError:
        pass


def inflate_to_send(msg: MessageExt, limit: int) -> MessageExt:
    """A popped record whose body is still as stored, inflated right before it is written to its stream: one
    inflated body at a time per stream, at most ``limit`` bytes (the largest body a producer may send, so a body
    that inflates past it is no producer's: a few KB of deflate bombs were GBs of the endpoint's memory). A body
    that does not inflate, within the limit, goes as stored (GZIP), as Apache's proxy sends every compressed one."""
    if msg.sys_flag & COMPRESSED_FLAG and msg.body_inflate_error is None:
        try:
            msg.body = inflate_body(msg.body, msg.sys_flag, limit)
        except InflateError as e:
            msg.body_inflate_error = str(e)
    return msg


def to_grpc_message(msg: MessageExt) -> Any:
    """GrpcConverter.buildMessage: a stored record as the SDKs receive it."""
    props = msg.properties
    out = pb.Message(body=msg.body)
    out.topic.name = msg.topic
    sp = out.system_properties  # filled in place: a SystemProperties passed to Message() would be copied
    tag = props.get(PROPERTY_TAGS)
    if tag is not None:
        sp.tag = tag
    keys = props.get(PROPERTY_KEYS)
    if keys is not None:
        sp.keys.extend(java_split(keys, KEY_SEPARATOR))  # ("k1 k2 " is two keys, as Java's split has it)
    sp.message_id = props.get(PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.offset_msg_id
    digest = sp.body_digest
    digest.type, digest.checksum = _MD5, hashlib.md5(msg.body).hexdigest().upper()
    # The encoding says what the sent bytes are. pocketmq's client inflates a compressed body as it decodes the POP
    # answer (decodeDecompressBody), so that body goes out as IDENTITY: GZIP on inflated bytes makes the Go SDK
    # discard the message as corrupted and the Python SDK fail to inflate it. Only a body that did not inflate is
    # still the stored zlib stream, and says so: the decoder's mark, which no producer can set (a property named
    # BODY_INFLATE_ERROR is a user's like any other).
    stored_bytes = msg.body_inflate_error is not None
    sp.body_encoding = _GZIP if msg.sys_flag & COMPRESSED_FLAG and stored_bytes else _IDENTITY
    sp.message_type = build_message_type(props)
    _set_timestamp(sp.born_timestamp, msg.born_timestamp)
    born_host = props.get(PROPERTY_BORN_HOST)
    if born_host is None or is_blank(born_host):
        born_host = host_address(msg.born_host)
    if not is_blank(born_host):
        sp.born_host = born_host
    _set_timestamp(sp.store_timestamp, msg.store_timestamp)
    sp.store_host = msg.store_host
    _set_delivery_timestamp(sp, props)
    priority = message_priority(props)
    if priority >= 0:
        sp.priority = priority
    if PROPERTY_SHARDING_KEY in props:
        sp.message_group = props[PROPERTY_SHARDING_KEY]
    if PROPERTY_LITE_TOPIC in props:
        sp.lite_topic = props[PROPERTY_LITE_TOPIC]
    if PROPERTY_POP_CK in props:
        sp.receipt_handle = props[PROPERTY_POP_CK]
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    sp.delivery_attempt = msg.reconsume_times + 1
    if PROPERTY_TRACE_CONTEXT in props:
        sp.trace_context = props[PROPERTY_TRACE_CONTEXT]
    origin_topic, origin_id = props.get(PROPERTY_DLQ_ORIGIN_TOPIC), props.get(PROPERTY_DLQ_ORIGIN_MESSAGE_ID)
    if origin_topic is not None and origin_id is not None:
        dlq = sp.dead_letter_queue
        dlq.topic, dlq.message_id = origin_topic, origin_id
    out.user_properties.update({k: v for k, v in props.items() if k not in SYSTEM_PROPERTY_NAMES})
    return out
