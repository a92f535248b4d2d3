"""test_differential_fuzz.py's fuzzing, with Apache RocketMQ 4.9.7 as the oracle, of the broker's configuration
and of an operator's reads: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with random and partly valid SubscriptionGroupConfig
bodies (the config stored then compared too), the GET_ALL_* listings, the broker's config and runtime info,
VIEW_BROKER_STATS_DATA, GET_BROKER_CONSUME_STATS, GET_TOPIC_STATS_INFO of topics whose queues both hold alike,
INVOKE_BROKER_TO_RESET_OFFSET, UPDATE_BROKER_CONFIG with nothing to change, and codes 4.9.7 does not know
(GET_CONSUMER_STATUS_FROM_CLIENT, 5.x's QUERY_TOPICS_BY_CONSUMER and QUERY_SUBSCRIPTION_BY_CONSUMER), each with
random header fields and bodies where the request takes none.

The answers must agree in their code, and where both are deterministic in their remark and in their body's shape
(the keys a listing has; a table's entries for this module's own topic and groups). Everything changed is this
module's own (names ending in RUN) and is deleted at its end. A fixed, derandomized set of examples by default;
FUZZ_EXAMPLES=n draws n anew each run. Cases that differ on purpose (docs/compatibility.md) are left out of the
strategies, each with the reason."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common.properties_text import parse_properties
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, call, java_longs, mask, mostly, optional, request
from .test_differential_fuzz import EXAMPLES, bodies, flags, foreign_names

# Never TBW102 nor %RETRY%g either: other modules send to them on the session's Apache (test_differential.py's
# cases, the fuzz's send kind), so their stats and offsets there are not this module's pocketmq's
names = foreign_names.filter(lambda n: n not in ("TBW102", "%RETRY%g"))
RUN = uuid.uuid4().hex[:6]
TOPIC = f"FuzzCfg{RUN}"  # 4 queues; queue 0 holds one message, pulled once by GROUP
GROUP = f"cgCfg{RUN}"  # offsets of all four of TOPIC's queues
OWN_GROUP = f"cgCfgOwn{RUN}"  # the groups UPDATE_AND_CREATE_SUBSCRIPTIONGROUP creates all start with it
EMPTY_TOPIC = f"FuzzCfgEmpty{RUN}"  # 2 queues, never written
CLUSTER = "<cluster>"  # stands for each broker's own cluster name (BROKER_PUT_NUMS' key)
# 4.9.7's BrokerStatsManager items (those pocketmq counts and some it does not) and odd names
STATS_NAMES = ("TOPIC_PUT_NUMS", "TOPIC_PUT_SIZE", "GROUP_GET_NUMS", "GROUP_GET_SIZE", "SNDBCK_PUT_NUMS",
               "BROKER_PUT_NUMS", "BROKER_GET_NUMS", "GROUP_GET_FROM_DISK_NUMS", "GROUP_GET_LATENCY", "")
# SubscriptionGroupConfig's fields, with a valid value each
GROUP_FIELDS = {"consumeEnable": st.booleans(), "consumeFromMinEnable": st.booleans(),
                "consumeBroadcastEnable": st.booleans(), "retryQueueNums": st.integers(0, 8),
                "retryMaxTimes": st.integers(-1, 32), "brokerId": st.integers(0, 3),
                "whichBrokerWhenConsumeSlowly": st.integers(0, 3), "notifyConsumerIdsChangedEnable": st.booleans()}
# Values fastjson casts, or refuses, for an int or a boolean field
ODD_JSON = ["5", "abc", "", "true", "TRUE", "Y", "y", "T", "t", "N", "n", "F", "f", "0", "1", " 1", "+5", "1.5", "1.0",
            "1,000", "null", "NULL", "Null", 1.5, -1.5, 2.0, 0.5, 2147483648.0, 4294967297.0, 2**31, -(2**31) - 1,
            2**63, -1, None, [], {}, [1]]
odd_json: st.SearchStrategy[Any] = st.one_of(st.sampled_from(ODD_JSON), st.booleans(), st.integers(),
                                             st.floats(allow_nan=False, allow_infinity=False))
# 5.x's fields pocketmq keeps and writes, 4.9.7 does not know
FIVE_ONLY = frozenset({"groupRetryPolicy", "consumeMessageOrderly", "groupSysFlag", "consumeTimeoutMinute"})
# Group names with characters topic names may not have are left out: 4.9.7 stores any name, pocketmq refuses one
# that could not name the group's retry topic (docs/compatibility.md, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP").
group_suffixes = st.one_of(st.just(""), st.text("abcXYZ09_-%|", max_size=12))


def group_config_json(draw: Any) -> Any:
    """A SubscriptionGroupConfig: each field valid, odd or absent, and fields 4.9.7 does not have."""
    config: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        config["groupName"] = OWN_GROUP + draw(group_suffixes)
    for key, valid in GROUP_FIELDS.items():
        if draw(st.booleans()):
            config[key] = draw(mostly(valid, odd_json))
    if draw(st.integers(0, 4)) == 0:
        config[draw(st.sampled_from(["unknownField", "subscriptionDataSet", "attributes", "groupSysFlag"]))] = draw(
            odd_json)
    return config


def group_bodies(draw: Any) -> bytes | None:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.one_of(st.none(), st.binary(max_size=40),
                              st.sampled_from([b"", b"null", b"[]", b"1", b'"x"', b"{", b"{}", b" ", b"\xff"])))
    return json.dumps(group_config_json(draw)).encode()


def reads(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    """The requests that take no header field and no body, with random ones (4.9.7 ignores both)."""
    code = draw(st.sampled_from([R.GET_ALL_TOPIC_CONFIG, R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                                 R.GET_ALL_CONSUMER_OFFSET, R.GET_ALL_DELAY_OFFSET, R.GET_BROKER_CONFIG,
                                 R.GET_BROKER_RUNTIME_INFO, R.GET_CONSUMER_STATUS_FROM_CLIENT, 343, 345]))
    ext = optional(draw, {}, draw(st.sampled_from(["topic", "consumerGroup", "group", "x"])), names)
    return code, ext, draw(bodies)


def stats(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    """VIEW_BROKER_STATS_DATA of items both brokers counted alike (TOPIC's put, GROUP's get of it), of ones
    neither did, and odd names and keys."""
    keys = st.one_of(st.sampled_from([TOPIC, f"{TOPIC}@{GROUP}", f"{GROUP}@{TOPIC}", f"{TOPIC}@", "", CLUSTER]), names)
    ext = {"statsName": draw(st.one_of(st.sampled_from(STATS_NAMES), names)), "statsKey": draw(keys)}
    return R.VIEW_BROKER_STATS_DATA, ext, draw(bodies)


def broker_consume_stats(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    # isOrder is a primitive 4.9.7's header requires: always sent (a header without it is a difference on purpose,
    # test_differential_fuzz.py)
    return R.GET_BROKER_CONSUME_STATS, {"isOrder": draw(flags)}, draw(bodies)


def topic_stats(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    """GET_TOPIC_STATS_INFO of topics whose queues hold the same on both (this module's; never other modules',
    see names)."""
    topic = draw(st.one_of(st.sampled_from([TOPIC, EMPTY_TOPIC, f"NoSuch{RUN}", "", " "]), names))
    return R.GET_TOPIC_STATS_INFO, {"topic": topic}, draw(bodies)


def reset_offsets(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    """INVOKE_BROKER_TO_RESET_OFFSET of this module's topics and groups; no consumer of them is online, so 4.9.7
    changes nothing (its resets are pushed to consumers) and pocketmq neither. Never with 5.x's queueId: 4.9.7
    ignores it, 5.x and pocketmq set that queue's offset. Never of a group holding offsets of some of the topic's
    queues only: 4.9.7 refuses the whole reset, pocketmq resets (docs/compatibility.md,
    "INVOKE_BROKER_TO_RESET_OFFSET")."""
    topic = draw(st.sampled_from([TOPIC, EMPTY_TOPIC, f"NoSuch{RUN}", "", " ", "TBW102"]))
    group = draw(st.sampled_from([GROUP, OWN_GROUP, f"NoSuch{RUN}", "", " "]))
    # (a timestamp that is no Java long 4.9.7 reads as 0, where pocketmq refuses: docs/compatibility.md, "a header
    # number that does not parse")
    ext = {"topic": topic, "group": group, "timestamp": draw(java_longs), "isForce": draw(flags)}
    return R.INVOKE_BROKER_TO_RESET_OFFSET, ext, draw(bodies)


@st.composite
def requests(draw: Any, same_config: dict[str, str]) -> tuple[int, dict[str, Any], bytes | None]:
    kind = draw(st.sampled_from(["group", "read", "stats", "consume", "topic", "reset", "config"]))
    if kind == "group":
        return R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, group_bodies(draw)
    if kind == "read":
        return reads(draw)
    if kind == "stats":
        return stats(draw)
    if kind == "consume":
        return broker_consume_stats(draw)
    if kind == "topic":
        return topic_stats(draw)
    if kind == "reset":
        return reset_offsets(draw)
    return R.UPDATE_BROKER_CONFIG, {}, config_body(draw, same_config)


def config_body(draw: Any, same_config: dict[str, str]) -> bytes | None:
    """UPDATE_BROKER_CONFIG that changes nothing on the session's Apache, which other tests share: no body, no
    key, keys both brokers change at run time set to the value both have (spelt with the escapes and line
    continuations of properties text), or a malformed \\uXXXX escape, for which both refuse the whole body. Left
    out: unknown keys, and values that do not parse as their key's type (4.9.7 answers SUCCESS, the setting as it
    was, a boolean false; pocketmq refuses, docs/compatibility.md), and 4.9.7's keys that pocketmq refuses at run
    time (its answer names the keys it changes)."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.sampled_from([None, b"", b"\n", b"# comment\n! other\n", b"   \n\t\n"]))
    keys = draw(st.lists(st.sampled_from(sorted(same_config)), min_size=1, max_size=3))
    lines = [spelt(draw, key) + draw(st.sampled_from(["=", " = ", ":", " ", "\t"])) + same_config[key]
             for key in keys]
    if kind == 1:
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["x=\\u00", "\\uzzzz=1", "y=\\u12G4"])))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["# a comment", "", "! other", "  "])))
    return "\n".join(lines).encode()


def spelt(draw: Any, key: str) -> str:
    """``key`` as properties text may write it: as it is, a letter escaped, broken over two lines."""
    how, at = draw(st.integers(0, 3)), draw(st.integers(1, len(key) - 1))
    if how == 1:
        return f"{key[:at]}\\u{ord(key[at]):04x}{key[at + 1:]}"
    if how == 2 and key[at] not in "tnrfu":  # (those escaped are a tab, a line end... or \\uXXXX)
        return f"{key[:at]}\\{key[at:]}"
    if how == 3:
        return f"{key[:at]}\\\n   {key[at:]}"
    return key


# --- what must agree ---

_SMALL_OBJECT = re.compile(r"\{[^{}]*\}")
# codes whose remarks are deterministic on both, and the request codes whose remarks are compared
REMARKED = {R.VIEW_BROKER_STATS_DATA, R.INVOKE_BROKER_TO_RESET_OFFSET, R.GET_TOPIC_STATS_INFO,
            R.GET_CONSUMER_STATUS_FROM_CLIENT, 343, 345}


def queue_table(raw: bytes | None) -> list[list[Any]]:
    """A table keyed by MessageQueue (fastjson writes the key as an object, no JSON, in its HashMap's order): its
    (queue id, value) pairs by queue id."""
    text = (raw or b"").decode("utf-8", "replace")
    objects = [json.loads(m) for m in _SMALL_OBJECT.findall(text)]
    pairs = zip(objects[::2], objects[1::2], strict=True)
    return sorted(([key.get("queueId"), key.get("topic"), value] for key, value in pairs), key=lambda p: p[0])


def entry_of(text: str, opening: str) -> str:
    """The list that ``opening`` opens in ``text``, to its closing bracket ("" when it is not there)."""
    start = text.find(opening)
    if start < 0:
        return ""
    depth = 0
    end = opened = start + len(opening) - 1
    for end in range(opened, len(text)):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    return text[start + len(opening):end]


def shape(code: int, answer: Answer, own: set[str]) -> Any:
    """What of a successful answer's body both must have."""
    body = answer.body
    if code == R.GET_BROKER_CONFIG:
        return sorted(answer.ext)  # (the version; the keys of the properties text differ: pocketmq has its own)
    if code == R.GET_TOPIC_STATS_INFO:
        return mask(queue_table(answer.raw_body))
    if code == R.GET_BROKER_CONSUME_STATS:
        # (its ConsumeStats are tables keyed by MessageQueue, no JSON: the keys named, and GROUP's entry there)
        text = (answer.raw_body or b"").decode("utf-8", "replace")
        keys = sorted(set(re.findall(r'"(brokerAddr|consumeStatsList|totalDiff)"', text)))
        return keys, mask(queue_table(entry_of(text, f'"{GROUP}":[').encode()))
    if code == R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG:
        table = body.get("subscriptionGroupTable", {})
        return sorted(body), {g: {k: v for k, v in c.items() if k not in FIVE_ONLY} for g, c in table.items()
                              if g in own}
    if code == R.GET_ALL_TOPIC_CONFIG:
        return sorted(body), {t: c for t, c in body.get("topicConfigTable", {}).items() if t in own}
    if code == R.GET_ALL_CONSUMER_OFFSET:
        return sorted(body), {k: v for k, v in body.get("offsetTable", {}).items() if k.split("@")[-1] in own}
    if code == R.VIEW_BROKER_STATS_DATA:  # (the counts of the minute depend on when each took its snapshot)
        return {k: sorted(v) for k, v in body.items()}
    if isinstance(body, dict):
        return mask(sorted(body) if code in (R.GET_BROKER_RUNTIME_INFO, R.GET_ALL_DELAY_OFFSET) else body)
    return body


def view(code: int, answer: Answer, own: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"code": answer.code}
    if code in REMARKED or answer.code == C.REQUEST_CODE_NOT_SUPPORTED:
        out["remark"] = answer.remark
    if answer.code == C.SUCCESS:
        out["body"] = shape(code, answer, own)
    return out


def stored_group(addr: str, group: str) -> Any:
    table = call(addr, request(R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body["subscriptionGroupTable"]
    config = table.get(group)
    return config and {k: v for k, v in config.items() if k not in FIVE_ONLY}


Servers = tuple[dict[str, str], dict[str, str], dict[str, str]]  # addresses, same config values, cluster names


@pytest.fixture(scope="module")
def servers(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    from .differential_requests import commit, create_group, create_topic, pull, send_v2
    with ThreadedCluster(tmp_path_factory.mktemp("fuzzcfg")) as pocket:
        sides = {"apache": apache_rocketmq.broker_addr, "pocketmq": pocket.broker_addr}
        # 4.9.7 fails GET_BROKER_RUNTIME_INFO until its store's first sampling, a second after its start
        # (NoSuchElementException): asked from then on
        while call(apache_rocketmq.broker_addr, request(R.GET_BROKER_RUNTIME_INFO)).code != 0:
            time.sleep(0.1)
        configs = {}
        for name, addr in sides.items():
            for step in (create_topic(TOPIC), create_topic(EMPTY_TOPIC, queues=2), create_group(GROUP),
                         send_v2(TOPIC, b"fixture")):
                assert call(addr, step).code == 0, (name, step)
            for _ in range(200):  # until the message is in queue 0's consume queue, then pulled once
                found = call(addr, pull(TOPIC, sys_flag=4, consumerGroup=GROUP))
                if found.code == 0:
                    break
                time.sleep(0.05)
            assert found.code == 0, found
            for queue_id in range(4):
                assert call(addr, commit(GROUP, TOPIC, queue_id, int(queue_id == 0))).code == 0
            text = call(addr, request(R.GET_BROKER_CONFIG)).raw_body or b""
            configs[name] = parse_properties(text.decode("utf-8"))
        # The keys pocketmq changes at run time that both have at the same value: the values UPDATE_BROKER_CONFIG
        # sets, so that nothing changes (and nothing must be put back)
        from pocketmq.broker.processor.broker_config_processor import RUNTIME_KEYS
        same = {k: v for k, v in configs["apache"].items()
                if k in RUNTIME_KEYS and configs["pocketmq"].get(k) == v and v.strip() == v and v}
        assert same, configs
        clusters = {name: config["brokerClusterName"] for name, config in configs.items()}
        yield sides, same, clusters
    after = parse_properties((call(apache_rocketmq.broker_addr, request(R.GET_BROKER_CONFIG)).raw_body or b"").decode())
    assert {k: after.get(k) for k in same} == same  # nothing changed on the session's Apache
    groups = call(apache_rocketmq.broker_addr, request(R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body
    for group in list(groups["subscriptionGroupTable"]):
        if group.startswith((OWN_GROUP, GROUP)):
            call(apache_rocketmq.broker_addr, request(R.DELETE_SUBSCRIPTIONGROUP,
                                                      {"groupName": group, "removeOffset": True}))
    for topic in (TOPIC, EMPTY_TOPIC):
        call(apache_rocketmq.broker_addr, request(R.DELETE_TOPIC_IN_BROKER, {"topic": topic}))
        call(apache_rocketmq.namesrv_addr, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic}))


@settings(max_examples=EXAMPLES or 50, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.data())
def test_same_answer_as_apache(servers: Servers, data: st.DataObject) -> None:
    sides, same_config, clusters = servers
    code, ext, body = data.draw(requests(same_config))
    answers = {name: call(addr, request(code, own_values(ext, clusters[name]), body), 5.0)
               for name, addr in sides.items()}
    own = {TOPIC, EMPTY_TOPIC, GROUP} | {g for g in [_group_name(body)] if g}
    views = {name: view(code, a, own) for name, a in answers.items()}
    assert views["pocketmq"] == views["apache"], (code, ext, body, answers)
    group = _group_name(body)
    if code == R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP and group and answers["apache"].code == C.SUCCESS:
        stored = {name: stored_group(addr, group) for name, addr in sides.items()}
        assert stored["pocketmq"] == stored["apache"], (body, stored)


def own_values(ext: dict[str, Any], cluster: str) -> dict[str, Any]:
    return {k: cluster if v == CLUSTER else v for k, v in ext.items()}


def _group_name(body: bytes | None) -> str | None:
    try:
        config = json.loads(body or b"")
    except ValueError:
        return None
    name = config.get("groupName") if isinstance(config, dict) else None
    return name if isinstance(name, str) else None
