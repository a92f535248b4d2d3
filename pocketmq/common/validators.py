"""Topic-name rules (TopicValidator): checked before a name touches the file system."""

import re

from .constants import TOPIC_MAX_LENGTH

_TOPIC_RE = re.compile(r"[%|a-zA-Z0-9_-]+")


class InvalidTopicError(ValueError):
    pass


# Names that passed: every put, send and pull asks again (the store, the broker and the client all use this
# rule), and a set lookup costs a fraction of the regex. Bounded; names that fail are never kept.
_VALID: set[str] = set()


def topic_error(topic: object) -> str | None:
    """Return why `topic` is not a valid topic name, or None when it is."""
    if topic.__class__ is str and topic in _VALID:
        return None
    if not isinstance(topic, str) or not topic:
        return "the topic name is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"the topic name is longer than {TOPIC_MAX_LENGTH} characters"
    if not _TOPIC_RE.fullmatch(topic):
        return f"the topic name {topic!r} contains characters outside ^[%|a-zA-Z0-9_-]+$"
    if len(_VALID) < 100_000:
        _VALID.add(topic)
    return None


def check_topic(topic: object) -> str:
    reason = topic_error(topic)
    if reason is not None:
        raise InvalidTopicError(reason)
    return topic  # type: ignore[return-value]
