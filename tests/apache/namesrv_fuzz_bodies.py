"""REGISTER_BROKER bodies for the name server's differential fuzzing (test_differential_fuzz_namesrv.py): RocketMQ's
RegisterBrokerBody as JSON or in its compressed form (a zlib stream of length-prefixed parts: the DataVersion's
JSON, a count of topics and each topic as "name read write perm filterType", the filter servers' JSON), mostly
well formed, with one part odd now and then; random bytes; none. Written here from the format, independently of
pocketmq's reader (pocketmq/remoting/register_broker_native.py)."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from hypothesis import strategies as st

# Small versions, so that a registration repeats the version a broker holds now and then (unchanged: its topics are
# not read again) and QUERY_DATA_VERSION asks one it holds
versions = st.builds(lambda t, c: {"timestamp": t, "counter": c}, st.integers(0, 2), st.integers(0, 2))


def odd_value(value: Any) -> st.SearchStrategy[Any]:
    """Another value of a field's JSON type. Never one of another type, nor null: fastjson casts them (true as a
    queue count, "" as the filter-server list) where pocketmq refuses (docs/compatibility.md, "REGISTER_BROKER
    with a JSON body")."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.integers(-(2**31), 2**31 - 1)
    if isinstance(value, str):
        return st.sampled_from(["", " ", "SINGLE_TAG", "x"])
    if isinstance(value, list):
        return st.lists(st.sampled_from(["10.255.9.3:1", "x"]), max_size=2)
    return st.just({})
filter_servers = st.lists(st.sampled_from(["10.255.9.1:1", "10.255.9.2:1", ""]), max_size=2)


def crc32(body: bytes | None) -> int:
    """UtilAll.crc32: the CRC-32 as a non-negative Java int, 0 for no body."""
    return zlib.crc32(body) & 0x7FFFFFFF if body else 0


@st.composite
def topic_configs(draw: Any, topics: st.SearchStrategy[str]) -> tuple[str, dict[str, Any]]:
    """A topic table's entry: its key (mostly the topic's name, which is what 4.9.7 registers) and TopicConfig."""
    name = draw(topics)
    config: dict[str, Any] = {"topicName": name, "readQueueNums": draw(st.integers(0, 16)),
                              "writeQueueNums": draw(st.integers(0, 16)), "perm": draw(st.integers(0, 7)),
                              "topicFilterType": draw(st.sampled_from(["SINGLE_TAG", "MULTI_TAG"])),
                              "topicSysFlag": draw(st.integers(0, 3)), "order": draw(st.booleans())}
    key = draw(st.one_of(st.just(name), st.just(name), st.just(name), topics))
    return key, config


@st.composite
def json_bodies(draw: Any, topics: st.SearchStrategy[str]) -> bytes:
    # Never two configs of one topic under two keys: which 4.9.7 registers last is the order of its
    # ConcurrentHashMap, of the keys' hashes
    table = dict(draw(st.lists(topic_configs(topics), max_size=3, unique_by=lambda kc: kc[1]["topicName"])))
    wrapper: dict[str, Any] = {"topicConfigTable": table, "dataVersion": draw(versions)}
    body: dict[str, Any] = {"topicConfigSerializeWrapper": wrapper, "filterServerList": draw(filter_servers)}
    if draw(st.integers(0, 3)) == 0:  # one part odd
        where = draw(st.sampled_from(["body", "wrapper", "version", "topic"] if table else ["body", "wrapper"]))
        target = {"body": body, "wrapper": wrapper, "version": wrapper["dataVersion"],
                  "topic": next(iter(table.values()), None)}[where]
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted(target)))
            # (a topic without its name: 4.9.7 registers the topic null, pocketmq refuses, docs/compatibility.md)
            if draw(st.booleans()) and key != "topicName":
                del target[key]
            else:
                target[key] = draw(odd_value(target[key]))
    return json.dumps(body).encode()


def _part(blob: bytes) -> bytes:
    return struct.pack(">i", len(blob)) + blob


@st.composite
def compressed_bodies(draw: Any, topics: st.SearchStrategy[str]) -> bytes:
    version = json.dumps(draw(versions)).encode()
    lines = []
    for _, c in draw(st.lists(topic_configs(topics), max_size=3)):
        fields = [c["topicName"], str(c["readQueueNums"]), str(c["writeQueueNums"]), str(c["perm"]),
                  c["topicFilterType"]]
        lines.append(" ".join(fields))
    servers = json.dumps(draw(filter_servers)).encode()
    odd = draw(st.integers(0, 5))
    if odd == 1:
        # (never empty or null: 4.9.7 registers the broker with no version, pocketmq refuses, docs/compatibility.md)
        version = draw(st.sampled_from([b"x", b"{}", b'{"timestamp":"x"}', b'{"counter":1}']))
    elif odd == 2 and lines:
        # A topic line of four fields, or one of five that does not parse. Never more than five: 4.9.7 refuses
        # them, pocketmq reads 5.x's sixth (its attributes; register_broker_native.py)
        lines[0] = draw(st.sampled_from(["a 1 1 6", "a x 1 6 SINGLE_TAG", "a 1 1 6 single_tag", " 1 1 6 MULTI_TAG",
                                         "a 1 1 99999999999 SINGLE_TAG", "a +1 1 6 SINGLE_TAG", "a 1 1 6 SINGLE_TAG ",
                                         "a  1 6 SINGLE_TAG", "a 1_0 1 6 SINGLE_TAG", ""]))
    elif odd == 3:
        servers = draw(st.sampled_from([b"", b"null", b"x", b"[1]", b'"a"', b"{}"]))
    raw = _part(version) + struct.pack(">i", len(lines)) + b"".join(_part(x.encode()) for x in lines) + _part(servers)
    if odd == 4:
        raw = raw[:draw(st.integers(0, len(raw) - 1))]  # ends early
    elif odd == 5:
        raw += draw(st.binary(min_size=1, max_size=8))  # something after the filter servers
    return zlib.compress(raw, 9)


@st.composite
def good_bodies(draw: Any, topics: st.SearchStrategy[str]) -> tuple[bytes, str]:
    """A well-formed body of one to three topics, JSON or compressed, and its compressed flag."""
    table = dict(draw(st.lists(topic_configs(topics), min_size=1, max_size=3,
                               unique_by=lambda kc: kc[1]["topicName"])))
    wrapper = {"topicConfigTable": table, "dataVersion": draw(versions)}
    if draw(st.booleans()):
        body = {"topicConfigSerializeWrapper": wrapper, "filterServerList": draw(filter_servers)}
        return json.dumps(body).encode(), "false"
    lines = [f"{c['topicName']} {c['readQueueNums']} {c['writeQueueNums']} {c['perm']} {c['topicFilterType']}"
             for c in table.values()]
    raw = (_part(json.dumps(wrapper["dataVersion"]).encode()) + struct.pack(">i", len(lines))
           + b"".join(_part(x.encode()) for x in lines) + _part(json.dumps(draw(filter_servers)).encode()))
    return zlib.compress(raw, 9), "true"


@st.composite
def register_bodies(draw: Any, topics: st.SearchStrategy[str]) -> tuple[bytes | None, str, int]:
    """A body, the compressed flag that says what it is, and a bodyCrc32: 0 (not checked), the body's, or not it."""
    kind = draw(st.sampled_from(["none", "json", "json", "compressed", "compressed", "bytes"]))
    body: bytes | None
    if kind == "none":
        body = None
    elif kind == "json":
        body = draw(json_bodies(topics))
    elif kind == "compressed":
        body = draw(compressed_bodies(topics))
    else:
        body = draw(st.binary(min_size=1, max_size=40))
    crc = draw(st.sampled_from(["zero", "right", "right", "wrong"]))
    value = {"zero": 0, "right": crc32(body), "wrong": (crc32(body) + 1) % 2**31}[crc]
    return body, "true" if kind == "compressed" else "false", value
