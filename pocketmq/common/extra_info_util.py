"""ExtraInfoUtil: the strings a pop answer and a receipt handle are made of.

A receipt handle (the ``POP_CK`` extra info) is ``ckQueueOffset popTime invisibleTime reviveQid topicType
brokerName queueId queueOffset``, space-separated; topicType is 0 for a normal topic, 1 for a v1 pop retry topic
(``%RETRY%group_topic``), 2 for a v2 one. A pop answer's header lists, per queue it read, ``topicType queueId
startOffset`` (startOffsetInfo), ``topicType queueId offset,offset,...`` (msgOffsetInfo) and, for orderly pops,
``topicType qo<queueId>%<offset> count`` and ``topicType queueId count`` (orderCountInfo), entries joined by ";".
"""

from __future__ import annotations

from dataclasses import dataclass

from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX

from .pop_ack_constants import POP_ORDER_REVIVE_QUEUE, build_pop_retry_topic, is_pop_retry_topic_v2

NORMAL_TOPIC = "0"
RETRY_TOPIC = "1"
RETRY_TOPIC_V2 = "2"
_QUEUE_OFFSET = "qo"


class ExtraInfoError(ValueError):
    """A receipt handle or offset info that does not parse."""


def topic_type(topic: str) -> str:
    """getRetry: "0" normal, "1" v1 retry, "2" v2 retry."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, retry: str) -> str:
    """The topic a handle's message was read from: ``topic`` itself or the group's pop retry topic of it."""
    if retry == RETRY_TOPIC:
        return build_pop_retry_topic(topic, group)
    if retry == RETRY_TOPIC_V2:
        return build_pop_retry_topic(topic, group, v2=True)
    return topic


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """A parsed receipt handle."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int = -1

    @property
    def is_order(self) -> bool:
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    def real_topic(self, topic: str, group: str) -> str:
        return real_topic(topic, group, self.retry)

    def __str__(self) -> str:
        parts = [self.ck_queue_offset, self.pop_time, self.invisible_time, self.revive_qid, self.retry,
                 self.broker_name, self.queue_id]
        if self.queue_offset >= 0:
            parts.append(self.queue_offset)
        return " ".join(map(str, parts))


def build_extra_info(ck_queue_offset: int, pop_time: int, invisible_time: int, revive_qid: int, topic: str,
                     broker_name: str, queue_id: int, queue_offset: int = -1) -> str:
    return str(ExtraInfo(ck_queue_offset, pop_time, invisible_time, revive_qid, topic_type(topic), broker_name,
                         queue_id, queue_offset))


def parse_extra_info(text: str) -> ExtraInfo:
    """Raises ExtraInfoError on anything but 7 or 8 well-formed fields (a client's garbage is a clear error)."""
    parts = text.split(" ")
    if len(parts) not in (7, 8):
        raise ExtraInfoError(f"extraInfo {text[:80]!r} has {len(parts)} fields, not 7 or 8")
    try:
        numbers = [int(parts[i]) for i in (0, 1, 2, 3, 6)]
        queue_offset = int(parts[7]) if len(parts) == 8 else -1
    except ValueError:
        raise ExtraInfoError(f"extraInfo {text[:80]!r} has a field that is not a number") from None
    if parts[4] not in (NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2):
        raise ExtraInfoError(f"extraInfo {text[:80]!r}: topic type {parts[4]!r} is not 0, 1 or 2")
    return ExtraInfo(numbers[0], numbers[1], numbers[2], numbers[3], parts[4], parts[5], numbers[4], queue_offset)


def build_start_offset_info(out: list[str], topic: str, queue_id: int, start_offset: int) -> None:
    out.append(f"{topic_type(topic)} {queue_id} {start_offset}")


def build_msg_offset_info(out: list[str], topic: str, queue_id: int, offsets: list[int]) -> None:
    out.append(f"{topic_type(topic)} {queue_id} {','.join(map(str, offsets))}")


def build_queue_id_order_count_info(out: list[str], topic: str, queue_id: int, count: int) -> None:
    out.append(f"{topic_type(topic)} {queue_id} {count}")


def build_queue_offset_order_count_info(out: list[str], topic: str, queue_id: int, offset: int, count: int) -> None:
    out.append(f"{topic_type(topic)} {queue_offset_key(queue_id, offset)} {count}")


def queue_offset_key(queue_id: int, offset: int) -> str:
    return f"{_QUEUE_OFFSET}{queue_id}%{offset}"


def start_offset_info_key(topic: str, queue_id: int, pop_ck: str | None = None) -> str:
    """The key of startOffsetInfo's and msgOffsetInfo's maps: ``topicType@queueId``; a message that carries its
    own POP_CK (one read from a retry topic) takes the type from it."""
    kind = parse_extra_info(pop_ck).retry if pop_ck else topic_type(topic)
    return f"{kind}@{queue_id}"


def queue_offset_map_key(topic: str, queue_id: int, offset: int) -> str:
    return f"{topic_type(topic)}@{queue_offset_key(queue_id, offset)}"


def _entries(info: str | None, what: str) -> list[tuple[str, str]]:
    if not info:
        return []
    out = []
    seen = set()
    for one in info.split(";"):
        parts = one.split(" ")
        if len(parts) != 3:
            raise ExtraInfoError(f"{what} entry {one[:80]!r} has {len(parts)} fields, not 3")
        key = f"{parts[0]}@{parts[1]}"
        if key in seen:
            raise ExtraInfoError(f"{what} has {key} twice")
        seen.add(key)
        out.append((key, parts[2]))
    return out


def _int(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ExtraInfoError(f"{what}: {text[:40]!r} is not a number") from None


def parse_start_offset_info(info: str | None) -> dict[str, int]:
    return {k: _int(v, "startOffsetInfo") for k, v in _entries(info, "startOffsetInfo")}


def parse_msg_offset_info(info: str | None) -> dict[str, list[int]]:
    return {k: [_int(o, "msgOffsetInfo") for o in v.split(",")] for k, v in _entries(info, "msgOffsetInfo")}


def parse_order_count_info(info: str | None) -> dict[str, int]:
    return {k: _int(v, "orderCountInfo") for k, v in _entries(info, "orderCountInfo")}


def receipt_handle(topic: str, queue_id: int, queue_offset: int, pop_ck: str | None, start_offsets: dict[str, int],
                   pop_time: int, invisible_time: int, revive_qid: int, broker_name: str) -> str:
    """A popped message's receipt handle, as RocketMQ's client makes it: its own POP_CK when the broker set one
    (messages of a retry topic), else built from the answer's startOffsetInfo and pop fields."""
    if pop_ck:
        return pop_ck
    start = start_offsets.get(start_offset_info_key(topic, queue_id))
    if start is None:
        raise ExtraInfoError(f"startOffsetInfo has no entry for {topic} queue {queue_id}")
    return build_extra_info(start, pop_time, invisible_time, revive_qid, topic, broker_name, queue_id, queue_offset)
