"""Bodies exchanged between clients and brokers: heartbeats, queue locks, consumer lists.

Same conventions as ``body``: msgpack maps with RocketMQ's JSON field names, Java sets sent as lists, enum
values as their Java names (``"CLUSTERING"``, ``"CONSUME_PASSIVELY"`` ...). From Java's JSON an enum may also
come as its ordinal (the C++ client's heartbeat has ``"consumeType":1``): the tuples below list the names in
ordinal order, as RocketMQ 4.9.8 declares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .body import Reader, now_millis
from .errors import BodyError
from .group_retry_policy import GroupRetryPolicy

CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
# The deprecated values still hold ordinals 1-3.
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)


@dataclass(frozen=True, slots=True)
class MessageQueue:
    """RocketMQ's MessageQueue: one queue of a topic on one broker."""

    topic: str
    broker_name: str
    queue_id: int
    # Queues key the client's tables (process queues, offsets), looked up several times per consumed message:
    # the hash is computed once, not from a new tuple each time.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.topic, self.broker_name, self.queue_id)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple[type[MessageQueue], tuple[str, str, int]]:
        # Pickled without the cached hash: another process hashes strings with another seed.
        return MessageQueue, (self.topic, self.broker_name, self.queue_id)

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "brokerName": self.broker_name, "queueId": self.queue_id}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> MessageQueue:
        r = Reader(obj, path)
        return cls(r.str("topic"), r.str("brokerName"), r.int("queueId"))


def _mq_set(r: Reader, key: str) -> set[MessageQueue]:
    return set(r.objects(key, MessageQueue, []))


def _lenient_mq(obj: object, path: str) -> MessageQueue:
    r = Reader(obj, path)
    return MessageQueue(r.str("topic", ""), r.str("brokerName", ""), r.int32("queueId", 0))


def _sorted_mqs(mqs: set[MessageQueue]) -> list[dict[str, Any]]:
    # Sorted so that equal sets encode to equal bytes.
    return [mq.to_dict() for mq in sorted(mqs, key=lambda q: (q.topic, q.broker_name, q.queue_id))]


@dataclass(slots=True)
class LockBatchRequestBody:
    """LOCK_BATCH_MQ request body; UNLOCK_BATCH_MQ uses the same shape (UnlockBatchRequestBody)."""

    consumer_group: str | None  # (None: missing, which RocketMQ's broker reads as null; the broker decides)
    client_id: str | None
    mq_set: set[MessageQueue] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {
            "consumerGroup": self.consumer_group,
            "clientId": self.client_id,
            "mqSet": _sorted_mqs(self.mq_set),
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> LockBatchRequestBody:
        r = Reader(obj, path)
        if isinstance(obj, dict) and "mqSet" in obj and obj["mqSet"] is None:
            raise BodyError(r.at("mqSet"), "is null")  # (RocketMQ's broker: its NullPointerException)
        queues = r.list("mqSet", [])
        # A queue's missing fields are Java's defaults (RocketMQ's broker locks whatever MessageQueue it reads)
        return cls(r.str("consumerGroup", None), r.str("clientId", None),
                   {_lenient_mq(q, f"{r.at('mqSet')}[{i}]") for i, q in enumerate(queues)})


UnlockBatchRequestBody = LockBatchRequestBody


@dataclass(slots=True)
class LockBatchResponseBody:
    """LOCK_BATCH_MQ (41) answer body: the queues the client now holds."""

    lock_ok_mq_set: set[MessageQueue] = field(default_factory=set)

    def to_dict(self) -> dict[str, Any]:
        return {"lockOKMQSet": _sorted_mqs(self.lock_ok_mq_set)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> LockBatchResponseBody:
        return cls(_mq_set(Reader(obj, path), "lockOKMQSet"))


@dataclass(slots=True)
class SubscriptionData:
    """RocketMQ's SubscriptionData: a consumer's subscription to one topic, with its filter expression."""

    topic: str
    sub_string: str = "*"
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)  # Java String.hashCode() of each tag
    sub_version: int = field(default_factory=now_millis)
    expression_type: str = "TAG"
    class_filter_mode: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "subString": self.sub_string,
            "tagsSet": list(self.tags_set),
            "codeSet": list(self.code_set),
            "subVersion": self.sub_version,
            "expressionType": self.expression_type,
            "classFilterMode": self.class_filter_mode,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "", topic_required: bool = True) -> SubscriptionData:
        r = Reader(obj, path)
        return cls(
            topic=r.str("topic") if topic_required else r.str("topic", ""),
            sub_string=r.str("subString", "*"),
            tags_set=r.str_list("tagsSet", []),
            code_set=r.int_list("codeSet", [], boxed=True),
            sub_version=r.int("subVersion", 0),
            expression_type=r.str("expressionType", "TAG"),
            class_filter_mode=r.bool("classFilterMode", False),
        )


@dataclass(slots=True)
class ProducerData:
    """RocketMQ's ProducerData: a producer group in a HEART_BEAT body."""

    group_name: str

    def to_dict(self) -> dict[str, Any]:
        return {"groupName": self.group_name}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ProducerData:
        return cls(Reader(obj, path).str("groupName"))


@dataclass(slots=True)
class ConsumerData:
    """RocketMQ's ConsumerData: a consumer group in a HEART_BEAT body, how it consumes and what it subscribes to."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"  # push consumer; CONSUME_ACTIVELY = pull consumer
    message_model: str = "CLUSTERING"  # or BROADCASTING
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "groupName": self.group_name,
            "consumeType": self.consume_type,
            "messageModel": self.message_model,
            "consumeFromWhere": self.consume_from_where,
            "subscriptionDataSet": [s.to_dict() for s in self.subscription_data_set],
            "unitMode": self.unit_mode,
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> ConsumerData:
        r = Reader(obj, path)
        return cls(
            group_name=r.str("groupName"),
            consume_type=r.enum("consumeType", CONSUME_TYPES, "CONSUME_PASSIVELY"),
            message_model=r.enum("messageModel", MESSAGE_MODELS, "CLUSTERING"),
            consume_from_where=r.enum("consumeFromWhere", CONSUME_FROM_WHERE, "CONSUME_FROM_LAST_OFFSET"),
            subscription_data_set=r.collection("subscriptionDataSet", SubscriptionData),
            unit_mode=r.bool("unitMode", False),
        )


@dataclass(slots=True)
class HeartbeatData:
    """HEART_BEAT (34) body."""

    client_id: str
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "clientID": self.client_id,
            "producerDataSet": [p.to_dict() for p in self.producer_data_set],
            "consumerDataSet": [c.to_dict() for c in self.consumer_data_set],
        }

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> HeartbeatData:
        r = Reader(obj, path)
        producers = r.collection("producerDataSet", ProducerData)
        client_id = r.str("clientID", None)
        if client_id is None and producers:
            # (RocketMQ's broker keys its producers' connections by client id: it fails on a null one)
            raise BodyError(r.at("clientID"), "is missing, and a producer needs one")
        return cls(
            client_id=client_id or "",  # (none: RocketMQ's broker takes the heartbeat, its client id null)
            producer_data_set=producers,
            consumer_data_set=r.collection("consumerDataSet", ConsumerData),
        )


@dataclass(slots=True)
class CheckClientRequestBody:
    """CHECK_CLIENT_CONFIG (46) body: one subscription a consumer is about to use, checked by each broker."""

    client_id: str
    group: str
    subscription_data: SubscriptionData | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clientId": self.client_id, "group": self.group}
        if self.subscription_data is not None:
            out["subscriptionData"] = self.subscription_data.to_dict()
        return out

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> CheckClientRequestBody:
        r = Reader(obj, path)
        sub = r.map("subscriptionData", None)
        # (the topic may be missing: RocketMQ's check reads the expression alone)
        data = SubscriptionData.from_dict(sub, r.at("subscriptionData"), False) if sub is not None else None
        return cls(r.str("clientId", ""), r.str("group", ""), data)


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody:
    """GET_CONSUMER_LIST_BY_GROUP (38) answer body."""

    consumer_id_list: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"consumerIdList": list(self.consumer_id_list)}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> GetConsumerListByGroupResponseBody:
        return cls(Reader(obj, path).str_list("consumerIdList", []))


@dataclass(slots=True)
class SubscriptionGroupConfig:
    """A consumer group's broker-side settings: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) body and the
    values of subscriptionGroup.json (RocketMQ 4.9.8 fields and defaults, and RocketMQ 5's
    ``consumeMessageOrderly``, written only when set so a 4.9.8 group reads and writes as before, and
    ``groupRetryPolicy``, always written as RocketMQ 5 writes it; 4.9.8's fastjson skips it)."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    # RocketMQ 5: the group consumes FIFO (its pops are orderly; the 5.x SDKs read it from the proxy's Settings).
    consume_message_orderly: bool = False
    # RocketMQ 5: the backoff of the group's retries (the 5.x SDKs read it from the proxy's Settings).
    group_retry_policy: GroupRetryPolicy = field(default_factory=GroupRetryPolicy)
    # RocketMQ 5's, kept and written when set (4.9.8 has neither)
    group_sys_flag: int = 0
    consume_timeout_minute: int = 15

    def to_dict(self) -> dict[str, Any]:
        out = {
            "groupName": self.group_name,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "retryQueueNums": self.retry_queue_nums,
            "retryMaxTimes": self.retry_max_times,
            "brokerId": self.broker_id,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "groupRetryPolicy": self.group_retry_policy.to_dict(),
        }
        if self.consume_message_orderly:
            out["consumeMessageOrderly"] = True
        if self.group_sys_flag:
            out["groupSysFlag"] = self.group_sys_flag
        if self.consume_timeout_minute != 15:
            out["consumeTimeoutMinute"] = self.consume_timeout_minute
        return out

    def to_dict_5(self) -> dict[str, Any]:
        """As RocketMQ 5 writes it (GET_SUBSCRIPTIONGROUP_CONFIG): every field, and no attributes."""
        return {**self.to_dict(), "consumeMessageOrderly": self.consume_message_orderly,
                "groupSysFlag": self.group_sys_flag, "consumeTimeoutMinute": self.consume_timeout_minute,
                "attributes": {}}

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> SubscriptionGroupConfig:
        r = Reader(obj, path)
        policy = r.map("groupRetryPolicy", None)
        return cls(
            group_name=r.str("groupName"),
            consume_enable=r.bool("consumeEnable", True),
            consume_from_min_enable=r.bool("consumeFromMinEnable", True),
            consume_broadcast_enable=r.bool("consumeBroadcastEnable", True),
            retry_queue_nums=r.int32("retryQueueNums", 1),
            retry_max_times=r.int32("retryMaxTimes", 16),
            broker_id=r.int("brokerId", 0),
            which_broker_when_consume_slowly=r.int("whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=r.bool("notifyConsumerIdsChangedEnable", True),
            consume_message_orderly=r.bool("consumeMessageOrderly", False),
            group_retry_policy=(GroupRetryPolicy() if policy is None
                                else GroupRetryPolicy.from_dict(policy, r.at("groupRetryPolicy"))),
            group_sys_flag=_lenient_int32(r, "groupSysFlag", 0),
            consume_timeout_minute=_lenient_int32(r, "consumeTimeoutMinute", 15),
        )


def _lenient_int32(r: Reader, key: str, default: int) -> int:
    """A 5.x field 4.9.8 does not have: its value when it reads as an int, else the default (4.9.8's fastjson
    skips the field, whatever it holds)."""
    try:
        value = r.int32(key, default)
    except BodyError:
        return default
    return value if isinstance(value, int) else default
