"""Topic validation gives one answer whether the name was cached or not, and never caches an invalid name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import validators
from pocketmq.common.validators import VALID_TOPICS, InvalidTopicError, check_topic, topic_error

NAMES = ["TopicA", "%RETRY%group-1", "a|b", "x" * 127, "", "bad topic", "tópico", "a/b", "x" * 128, "..", "a\x00b"]


def _uncached(topic: object) -> str | None:
    """The rule with nothing remembered."""
    return validators._reason(topic)


@pytest.mark.parametrize("topic", NAMES)
def test_a_cached_and_an_uncached_answer_agree(topic: str) -> None:
    VALID_TOPICS.pop(topic, None)
    first = topic_error(topic)  # a miss: asks the rule
    second = topic_error(topic)  # a hit when valid
    assert first == second == _uncached(topic)
    assert (topic in VALID_TOPICS) == (first is None)


def test_an_invalid_name_is_never_cached_as_valid() -> None:
    for topic in ("bad topic", "", "x" * 128, "ü"):
        for _ in range(2):
            with pytest.raises(InvalidTopicError) as e:
                check_topic(topic)
            assert str(e.value) == _uncached(topic)
        assert topic not in VALID_TOPICS


def test_values_that_are_not_str_are_never_looked_up() -> None:
    class Odd(str):
        def __hash__(self) -> int:  # hashes as a valid, cached name
            return hash("TopicA")

    check_topic("TopicA")
    assert topic_error(Odd("bad topic")) == _uncached("bad topic")
    assert topic_error(None) == topic_error(b"TopicA") == "the topic name is blank"
    assert topic_error(["TopicA"]) == "the topic name is blank"  # (unhashable: not a cache key either)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ09_-%|. /é\x00"), max_size=130), st.booleans())
def test_any_name_gets_the_rules_answer_cached_or_not(topic: str, seen_before: bool) -> None:
    if seen_before:
        topic_error(topic)
    else:
        VALID_TOPICS.pop(topic, None)
    assert topic_error(topic) == _uncached(topic)
    assert topic not in VALID_TOPICS or _uncached(topic) is None


def test_the_cache_is_bounded() -> None:
    assert VALID_TOPICS.maxsize == 100_000


@pytest.mark.parametrize(("topic", "stored"), [
    ("prod.eu", True), ("rmq_sys_REVIVE_LOG_prod.eu", True), ("prod.eu_REPLY_TOPIC", True), (".hidden", True),
    ("%RETRY%G+T", True), ("%RETRY%G_" + "t" * 240, True), ("x" * 127, True),
    (".", False), ("..", False), ("...", False), ("../x", False), ("a/b", False), ("", False), ("a b", False),
    ("x" * 128, False), ("%RETRY%G+T+U", False), ("%RETRY%" + "t" * 249, False), ("pr\u00f6d", False)])
def test_the_store_takes_a_dot_a_client_may_not_send(topic: str, stored: bool) -> None:
    # RocketMQ names topics after its cluster ("prod.eu" makes rmq_sys_REVIVE_LOG_prod.eu): its store takes them,
    # while TopicValidator refuses a "." in what a client sends; names of dots alone would leave consumequeue/.
    assert (validators.store_topic_error(topic) is None) is stored
    if "." in topic:
        assert topic_error(topic) is not None


@pytest.mark.parametrize(("topic", "why"), [
    ("..", "made of dots alone"), ("...", "made of dots alone"),
    ("../x", "outside ^[%|a-zA-Z0-9_.-]+$"), ("a b", "outside ^[%|a-zA-Z0-9_.-]+$")])
def test_the_store_says_which_of_its_rules_a_name_breaks(topic: str, why: str) -> None:
    # The store takes a "." a client may not send, so its refusal names its own rule, not TopicValidator's.
    reason = validators.store_topic_error(topic)
    assert reason is not None and why in reason
