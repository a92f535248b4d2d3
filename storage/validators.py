"""Topic-name rules (TopicValidator): checked before a name touches the file system."""

import re

from .constants import TOPIC_MAX_LENGTH

_TOPIC_RE = re.compile(r"[%|a-zA-Z0-9_-]+")


class InvalidTopicError(ValueError):
    pass


def topic_error(topic: object) -> str | None:
    """Return why `topic` is not a valid topic name, or None when it is."""
    if not isinstance(topic, str) or not topic:
        return "the topic name is blank"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"the topic name is longer than {TOPIC_MAX_LENGTH} characters"
    if not _TOPIC_RE.fullmatch(topic):
        return f"the topic name {topic!r} contains characters outside ^[%|a-zA-Z0-9_-]+$"
    return None


def check_topic(topic: object) -> str:
    reason = topic_error(topic)
    if reason is not None:
        raise InvalidTopicError(reason)
    return topic  # type: ignore[return-value]
