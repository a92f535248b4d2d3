"""The bodies test_differential_fuzz_admin_5.py sends, in the JSON 5.5.0's broker reads with fastjson2: topic
lists (UPDATE_AND_CREATE_TOPIC_LIST), group lists (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST), QUERY_ASSIGNMENT's
and SET_MESSAGE_REQUEST_MODE's, each field valid, odd or absent, and bodies that are no JSON object at all.

Every name a body creates starts with the module's own prefixes (``own_names`` builds them), so no
other module's topic or group on the session's Apache is ever written."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from .differential import mostly

# Values fastjson2 casts, or refuses, for an int or a boolean field. pocketmq reads bodies as fastjson 1.2.69 does
# (4.9.x's); left out are the values the two read apart (docs/compatibility.md): an object or an array where a
# number goes (fastjson2: none), null, "" or "null" (fastjson2: Java's 0 or false, not the field's initial value), a
# number other than 0 and 1 where a boolean goes (fastjson2: false for 1.5), a decimal in text where an int goes
# (fastjson2: "1.5" is 1), a boolean where an int goes, true, false, "true" or "false" (fastjson2: 1 or 0 for a
# long too)
ODD_JSON = ["5", "abc", "1", "0", " 1", "1.x", 1.5, -1.5, 2.0, -1]
odd_json: st.SearchStrategy[Any] = st.one_of(st.sampled_from(ODD_JSON), st.integers(-(2**31), 2**31 - 1))
odd_bool_json = st.sampled_from(["true", "false", "TRUE", "1", "0", 1, 0, "abc"])
# ... for a topic's numbers: none that reads as a negative count or a perm past 15, which pocketmq refuses and 5.5.0
# stores (docs/compatibility.md, "admin input")
odd_topic_json = st.sampled_from([v for v in ODD_JSON if not isinstance(v, (int, float)) or 0 <= v < 8])
# ... for an enum: no ordinal as text ("0") or as a decimal (2.0), which 5.5.0's fastjson2 reads as the enum, and
# pocketmq's fastjson 1.2.69 as a name it does not know or refuses
odd_enum_json = st.sampled_from([v for v in ODD_JSON if not (isinstance(v, str) and v.strip().isdigit())
                                  and not isinstance(v, float)])
# Topic names either broker refuses to create before it writes anything: system topics, never another module's
# (5.5.0's validateSystemTopicWhenUpdateTopic, on by default, refuses them)
SYSTEM_TOPICS = ["TBW102", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "rmq_sys_x"]
suffixes = st.one_of(st.just(""), st.text("abcXYZ09_-%|", max_size=12),
                     st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF), max_size=6),
                     st.integers(100, 140).map(lambda n: "x" * n))  # past the 127 characters of a topic name
ATTRIBUTES = {"+message.type": ["NORMAL", "FIFO", "DELAY", "TRANSACTION", "PRIORITY", "MIXED"],
              "+queue.type": ["SimpleCQ", "BatchCQ"], "+cleanup.policy": ["DELETE", "COMPACTION"]}
# Modifications the creation of a topic fails on. Only a list's first topic has them: 5.5.0 creates the topics
# before the one it fails on, pocketmq none of the list (docs/compatibility.md)
FAILING_ATTRIBUTES = {"+message.type": ["x"], "+queue.type": ["x"], "+cleanup.policy": ["x"], "-message.type": [""],
                      "+unknown.key": ["1"], "message.type": ["NORMAL"]}


# The odd values of the enum fields. No topicFilterType but SINGLE_TAG and MULTI_TAG, no mode but PULL and POP:
# 5.5.0's fastjson2 reads another name as null, then keeps the topic or the mode (a topic config without a filter
# type, assignments without a mode), which pocketmq refuses (docs/compatibility.md); a messageModel it does not
# know both refuse
ENUM_ODD: dict[str, st.SearchStrategy[Any] | None] = {"topicFilterType": None, "messageModel": odd_enum_json,
                                                      "mode": None}
# RocketMQ 5's group fields 4.9.x has not: pocketmq keeps a value that reads as an int and skips another, as
# 4.9.x's fastjson skips the field; 5.5.0 refuses an int it cannot read (docs/compatibility.md)
FIVE_ONLY = frozenset({"groupSysFlag", "consumeTimeoutMinute"})
BOOLEANS = frozenset({"order", "consumeEnable", "consumeFromMinEnable", "consumeBroadcastEnable",
                      "consumeMessageOrderly", "notifyConsumerIdsChangedEnable"})


def own_names(prefix: str, most: int = 255) -> st.SearchStrategy[str]:
    """Names starting with ``prefix``, valid or not, of at most ``most`` characters, and blank ones."""
    return st.one_of(st.sampled_from(["", " "]), suffixes.map(lambda s: (prefix + s)[:most]))


def fields(draw: Any, valid: dict[str, st.SearchStrategy[Any]], odd: st.SearchStrategy[Any] | None = odd_json
           ) -> dict[str, Any]:
    """Each of ``valid``'s fields: its valid value mostly, an ``odd`` one or absent."""
    out: dict[str, Any] = {}
    for key, values in valid.items():
        if draw(st.integers(0, 5)):
            odd_values = (None if odd is None or key in FIVE_ONLY else odd_bool_json if key in BOOLEANS
                          else ENUM_ODD.get(key, odd))
            out[key] = draw(values if odd_values is None else mostly(values, odd_values))
    return out


def attributes(draw: Any, failing: bool) -> dict[str, str]:
    table = {k: ATTRIBUTES.get(k, []) + (FAILING_ATTRIBUTES.get(k, []) if failing else [])
             for k in ATTRIBUTES.keys() | (FAILING_ATTRIBUTES.keys() if failing else set())}
    keys = draw(st.lists(st.sampled_from(sorted(table)), max_size=2, unique=True))
    return {k: draw(st.sampled_from(table[k])) for k in keys}


TOPIC_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "readQueueNums": st.integers(0, 16), "writeQueueNums": st.integers(0, 16), "perm": st.sampled_from([2, 4, 6, 7]),
    "topicFilterType": st.sampled_from(["SINGLE_TAG", "MULTI_TAG", "SINGLE_TAG"]), "topicSysFlag": st.integers(0, 3),
    "order": st.booleans()}
GROUP_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "consumeEnable": st.booleans(), "consumeFromMinEnable": st.booleans(), "consumeBroadcastEnable": st.booleans(),
    "consumeMessageOrderly": st.booleans(), "retryQueueNums": st.integers(0, 8), "retryMaxTimes": st.integers(-1, 32),
    "brokerId": st.integers(0, 3), "whichBrokerWhenConsumeSlowly": st.integers(0, 3),
    "notifyConsumerIdsChangedEnable": st.booleans(), "groupSysFlag": st.integers(0, 3),
    "consumeTimeoutMinute": st.integers(1, 30)}


def topic_config(draw: Any, names: st.SearchStrategy[str], first: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"topicName": draw(names)} if draw(st.integers(0, 9)) else {}
    config.update(fields(draw, TOPIC_FIELDS, odd_topic_json))
    if draw(st.booleans()):
        config["attributes"] = attributes(draw, first)
    return config


def group_config(draw: Any, names: st.SearchStrategy[str], first: bool) -> dict[str, Any]:
    config: dict[str, Any] = {"groupName": draw(names)} if draw(st.integers(0, 9)) else {}
    config.update(fields(draw, GROUP_FIELDS))
    if draw(st.integers(0, 4)) == 0:
        # (no type but these two: as for a topic's filter type, ENUM_ODD)
        config["groupRetryPolicy"] = draw(st.sampled_from([
            {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 2000]}},
            {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 2}},
            {}]))
    if draw(st.integers(0, 4)) == 0:
        # (none but {}: 5.5.0's group attributes, priority.factor and its lite.* ones, are not pocketmq's,
        # docs/compatibility.md)
        config["attributes"] = {}
    return config


def not_json_objects(draw: Any) -> bytes | None:
    return draw(st.one_of(st.none(), st.binary(max_size=24),
                          st.sampled_from([b"", b"null", b"[]", b"1", b'"x"', b"{", b"{}", b" ", b"\xff"])))


def listing(draw: Any, key: str, item: Callable[[Any, bool], dict[str, Any]]) -> bytes | None:
    """A body ``{key: [items]}``, its list odd at times, or no JSON object; ``item(draw, first)`` draws one."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return not_json_objects(draw)
    if kind == 1:
        return json.dumps({key: draw(st.sampled_from([None, [], {}, "x", [None], [1]]))}).encode()
    items = [item(draw, i == 0) for i in range(draw(st.integers(0, 3)))]
    if key == "topicConfigList":
        # (a topic named twice only once: 5.5.0 stores the list, then fails, where pocketmq refuses it unwritten,
        # docs/compatibility.md)
        items = list({str(i.get("topicName")): i for i in items}.values())
    return json.dumps({key: items}).encode()


def json_body(draw: Any, valid: dict[str, st.SearchStrategy[Any]]) -> bytes | None:
    if draw(st.integers(0, 9)) == 0:
        return not_json_objects(draw)
    return json.dumps(fields(draw, valid, odd_json if draw(st.integers(0, 3)) == 0 else None)).encode()
