"""Topic-name rules (TopicValidator): checked before a name touches the file system."""

import re

from .bounded_cache import BoundedCache
from .constants import RETRY_OR_DLQ_TOPIC_MAX_LENGTH, TOPIC_MAX_LENGTH

_TOPIC_RE = re.compile(r"[%|a-zA-Z0-9_-]+")


class InvalidTopicError(ValueError):
    pass


def _reason(topic: object) -> str | None:
    """Why ``topic`` is not a valid topic name, or None: the rule itself, with nothing remembered."""
    if not isinstance(topic, str) or not topic:
        return "the topic name is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"the topic name is longer than {TOPIC_MAX_LENGTH} characters"
    if not _TOPIC_RE.fullmatch(topic):
        return f"the topic name {topic!r} contains characters outside ^[%|a-zA-Z0-9_-]+$"
    return None


def _valid(topic: str) -> bool:
    """True for a valid name; raises for any other, so that a cache of it holds valid names only."""
    reason = _reason(topic)
    if reason is not None:
        raise InvalidTopicError(reason)
    return True


# Names that passed: every put, send and pull asks again (the store, the broker and the client all use this rule),
# and a lookup costs a fraction of the regex. A name that fails is never remembered (_valid raises), and one that
# is remembered was checked by the same rule, so a hit and a miss give the same answer.
VALID_TOPICS: BoundedCache[str, bool] = BoundedCache(_valid, 100_000)


def topic_error(topic: object) -> str | None:
    """Return why `topic` is not a valid topic name, or None when it is."""
    if topic.__class__ is not str:  # (a str subclass may hash and compare as it likes: never looked up)
        return _reason(topic)
    if topic in VALID_TOPICS:
        return None
    try:
        VALID_TOPICS[topic]
    except InvalidTopicError as e:
        return str(e)
    return None


def check_topic(topic: object) -> str:
    reason = topic_error(topic)
    if reason is not None:
        raise InvalidTopicError(reason)
    return topic  # type: ignore[return-value]


# RocketMQ 5's POP retry topic with enableRetryTopicV2, %RETRY%<group>+<topic>: its one "+" is RocketMQ's separator.
_POP_RETRY_V2_RE = re.compile(r"%RETRY%[%|a-zA-Z0-9_-]+\+[%|a-zA-Z0-9_-]+")
# The broker names topics after its cluster (the cluster's own, rmq_sys_REVIVE_LOG_<cluster>, <cluster>_REPLY_TOPIC),
# and RocketMQ takes any cluster name: "prod.eu" is a common one. RocketMQ's store checks a topic's length only
# (HookUtils.checkBeforePutMessage); this one also keeps the name a safe directory name: a "." is harmless unless
# the name is nothing but dots ("." and ".." would leave consumequeue/).
_STORE_TOPIC_RE = re.compile(r"[%|a-zA-Z0-9_.-]+")


def store_topic_error(topic: object) -> str | None:
    """topic_error for a name the store keeps (a put, a consume-queue directory): RocketMQ 5's TopicValidator lets
    a retry or dead-letter topic (%RETRY%, %DLQ%) have up to 255 characters (RETRY_OR_DLQ_TOPIC_MAX_LENGTH),
    e.g. a POP retry topic %RETRY%<group>_<topic>, or %RETRY%<group>+<topic> with enableRetryTopicV2; other
    topics keep 127. A "." is taken too (a broker's topics named after a cluster such as "prod.eu"), though a
    client may not send to such a name (topic_error), as in RocketMQ."""
    reason = topic_error(topic)
    if reason is None or not isinstance(topic, str) or not topic:
        return reason
    retry = topic.startswith(("%RETRY%", "%DLQ%"))
    if len(topic) > (RETRY_OR_DLQ_TOPIC_MAX_LENGTH if retry else TOPIC_MAX_LENGTH):
        return (f"the retry or dead-letter topic name is longer than {RETRY_OR_DLQ_TOPIC_MAX_LENGTH} characters"
                if retry else reason)
    if retry and _POP_RETRY_V2_RE.fullmatch(topic):
        return None
    if not _STORE_TOPIC_RE.fullmatch(topic):
        return f"the topic name {topic!r} contains characters outside ^[%|a-zA-Z0-9_.-]+$"
    if not topic.strip("."):
        return f"the topic name {topic!r} is made of dots alone (its consume-queue folder would leave the store)"
    return None


def _stored_reason(topic_b: bytes) -> str | None:
    """store_topic_error for the bytes of a record's TOPIC, with nothing remembered."""
    try:
        topic = topic_b.decode()
    except UnicodeDecodeError:
        return f"the topic name {topic_b[:60]!r}{'...' if len(topic_b) > 60 else ''} is not UTF-8"
    return store_topic_error(topic)


def _valid_stored(topic_b: bytes) -> bool:
    """True for the bytes of a topic the store keeps; raises for any other (so a cache of it holds those only)."""
    reason = _stored_reason(topic_b)
    if reason is not None:
        raise InvalidTopicError(reason)
    return True


# The TOPIC bytes of records that passed: dispatch's reference twin asks for every record it reads, and a lookup
# costs a fraction of a decode and the rule. As VALID_TOPICS, a name that fails is never remembered.
VALID_STORED_TOPICS: BoundedCache[bytes, bool] = BoundedCache(_valid_stored, 100_000)


def stored_topic_error(topic_b: bytes) -> str | None:
    """store_topic_error for a topic as a commit-log record holds it (its UTF-8 bytes): why a store could never
    have written it (not UTF-8, or a name it refuses at put: too long, a character such as ``/``, or a name of
    dots alone, either of which would take a consume-queue path out of the store), or None."""
    if topic_b in VALID_STORED_TOPICS:
        return None
    try:
        VALID_STORED_TOPICS[topic_b]
    except InvalidTopicError as e:
        return str(e)
    return None
