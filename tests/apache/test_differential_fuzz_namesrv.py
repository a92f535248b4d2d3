"""Differential fuzzing of the name server, Apache RocketMQ 4.9.7's the oracle: hypothesis builds short sequences
of name-server requests (brokers registered with random headers and bodies, JSON or compressed, with good and bad
CRCs; unregistered; their write perms wiped and added; topics deleted; KV config put, read, deleted, listed; the
listings of clusters and topics; the name server's config read), runs each sequence on 4.9.7's name server and on
pocketmq's from the same start, and asserts the same answer to each request: the same code, the same remark
(but the text of an exception's SYSTEM_ERROR), the same header fields and, where it is deterministic, the same
body (masked_answer says which).

The session's Apache name server serves the other tests of the process: every name a request changes is this
module's (its cluster, broker, topic and namespace names start with PREFIX, or are blank; its broker addresses are
in 10.255/16, which no test listens on), and the brokers and topics a sequence made are unregistered and deleted
after it (reset), so each sequence starts from none and no broker lives long enough for 4.9.7's expiry scan, which
drops the first broker of the expired one's connection, not the expired one. A namespace of the KV config cannot
be removed (an emptied one stays, listing `{}`): each sequence has a namespace of its own.

The registrations go over one connection per side, kept for the module: a registration lasts while its connection
is open, and what a registration and then a listing see must be the same connection's.

`make test` runs a fixed, derandomized set of examples; `make fuzz-apache` many more, drawn anew (FUZZ_EXAMPLES)."""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.wire_protocol import WireProtocol
from tests.apache.apache_rocketmq import ApacheRocketMQ

from .differential import Answer, invoke, java_longs, mostly, odd_numbers, optional, request
from .namesrv_fuzz_bodies import crc32, good_bodies, register_bodies

RUN = uuid.uuid4().hex[:6]
PREFIX = f"FuzzNs{RUN}"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
ADDRS = ["10.255.0.1:10911", "10.255.0.2:10911", "10.255.0.1:10921"]
GONE = PREFIX + "Gone"  # a broker name never registered: reset unregisters addresses under it
SEQUENCE = itertools.count()

suffixes = st.one_of(st.sampled_from(["a", "b", ""]), st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF),
                                                              max_size=12))


def owned(kind: str) -> st.SearchStrategy[str]:
    """This module's names of a kind: mostly a few, so that requests meet, else odd ones; blank ones too."""
    return mostly(st.sampled_from([PREFIX + kind + "a", PREFIX + kind + "b"]),
                  st.one_of(suffixes.map(lambda s: PREFIX + kind + s), st.sampled_from(["", " "])))


def is_owned(name: str) -> bool:
    return name.startswith(PREFIX) or not name.strip()


clusters, brokers, topics = owned("C"), owned("B"), owned("T")
# Header booleans are Boolean.parseBoolean's: any text, true only for "true" in any case
flags = st.one_of(st.sampled_from(["true", "false", "TRUE", "yes", ""]), suffixes)
addrs = mostly(st.sampled_from(ADDRS), st.one_of(st.just(""), suffixes))
broker_ids = mostly(st.sampled_from([0, 1, 2]), st.one_of(java_longs, odd_numbers))
# The namespace is mapped to the sequence's own when the request is sent (send): "ns" + suffix
namespaces = mostly(st.sampled_from(["ns", "ns2"]), suffixes.map(lambda s: "ns" + s))
kv_text = st.one_of(st.sampled_from(["k", "k2", ""]), suffixes)
# UPDATE_NAMESRV_CONFIG only with bodies that change nothing on the session's Apache: none, blank or comments
# (SUCCESS), a path key (refused, NO_PERMISSION, before anything changes) or a malformed escape (SYSTEM_ERROR).
# Any other key would change the session's Apache for the tests after it, and pocketmq refuses keys it does not
# have or cannot change at run time where 4.9.7 takes any (docs/compatibility.md, "UPDATE_NAMESRV_CONFIG of a key
# read only at start").
config_bodies = st.one_of(st.none(), st.sampled_from([b"", b"  \n", b"# x=1\n", b"kvConfigPath=/tmp/x",
                                                      b"configStorePath = y\n", b"kv\\ConfigPath:z", b"a=\\u12",
                                                      b"kvConfigPath=\\uZZZZ"]),
                          st.tuples(st.sampled_from(["kvConfigPath", "configStorePath"]), suffixes).map(
                              lambda kv: f"{kv[0]}={kv[1]}".encode()))


@st.composite
def operations(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    code = draw(st.sampled_from([
        R.REGISTER_BROKER, R.REGISTER_BROKER, R.REGISTER_BROKER, R.UNREGISTER_BROKER, R.QUERY_DATA_VERSION,
        R.WIPE_WRITE_PERM_OF_BROKER, R.ADD_WRITE_PERM_OF_BROKER, R.DELETE_TOPIC_IN_NAMESRV, R.GET_ROUTEINFO_BY_TOPIC,
        R.GET_BROKER_CLUSTER_INFO, R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, R.GET_TOPICS_BY_CLUSTER,
        R.GET_SYSTEM_TOPIC_LIST_FROM_NS, R.GET_UNIT_TOPIC_LIST, R.GET_HAS_UNIT_SUB_TOPIC_LIST,
        R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, R.PUT_KV_CONFIG, R.PUT_KV_CONFIG, R.GET_KV_CONFIG, R.DELETE_KV_CONFIG,
        R.GET_KVLIST_BY_NAMESPACE, R.GET_NAMESRV_CONFIG, R.UPDATE_NAMESRV_CONFIG]))
    ext: dict[str, Any] = {}
    body: bytes | None = None
    if code == R.REGISTER_BROKER:
        body, compressed, crc = draw(register_bodies(topics))
        ext = {"brokerName": draw(brokers), "brokerAddr": draw(addrs), "clusterName": draw(clusters),
               "haServerAddr": draw(addrs), "brokerId": draw(broker_ids)}
        optional(draw, ext, "compressed", st.one_of(st.just(compressed), flags))
        optional(draw, ext, "bodyCrc32", st.just(crc))
    elif code in (R.UNREGISTER_BROKER, R.QUERY_DATA_VERSION):
        ext = {"brokerName": draw(brokers), "brokerAddr": draw(addrs), "clusterName": draw(clusters),
               "brokerId": draw(broker_ids)}
        if code == R.QUERY_DATA_VERSION:
            # 4.9.7 does not read its brokerId: one that does not parse is left null and the request answered,
            # where pocketmq refuses (docs/compatibility.md, "a header number that does not parse")
            ext["brokerId"] = draw(java_longs)
            body = draw(st.one_of(st.none(), st.sampled_from([b"{}", b"x", b'{"timestamp":1,"counter":1}']),
                                  st.builds(lambda t, c: f'{{"timestamp":{t},"counter":{c}}}'.encode(),
                                            st.integers(0, 2), st.integers(0, 2))))
    elif code in (R.WIPE_WRITE_PERM_OF_BROKER, R.ADD_WRITE_PERM_OF_BROKER):
        ext = {"brokerName": draw(brokers)}
    elif code == R.DELETE_TOPIC_IN_NAMESRV:
        ext = optional(draw, {"topic": draw(topics)}, "clusterName", clusters)
    elif code == R.GET_ROUTEINFO_BY_TOPIC:
        ext = {"topic": draw(topics)}
    elif code == R.GET_TOPICS_BY_CLUSTER:
        ext = {"cluster": draw(clusters)}
    elif code in (R.PUT_KV_CONFIG, R.GET_KV_CONFIG, R.DELETE_KV_CONFIG):
        ext = {"namespace": draw(namespaces), "key": draw(kv_text)}
        if code == R.PUT_KV_CONFIG:
            ext["value"] = draw(kv_text)
    elif code == R.GET_KVLIST_BY_NAMESPACE:
        ext = {"namespace": draw(namespaces)}
    elif code == R.UPDATE_NAMESRV_CONFIG:
        body = draw(config_bodies)
    return code, ext, body


@st.composite
def registrations(draw: Any) -> tuple[int, dict[str, Any], bytes | None]:
    """A broker of this module registered as a broker registers: well-formed, mostly a master with topics (the
    random operations rarely make one that the reads after it then see)."""
    body, compressed = draw(good_bodies(topics))
    ext = {"brokerName": draw(st.sampled_from([PREFIX + "Ba", PREFIX + "Bb"])),
           "brokerAddr": draw(st.sampled_from(ADDRS)),
           "clusterName": draw(st.sampled_from([PREFIX + "Ca", PREFIX + "Cb"])),
           "haServerAddr": draw(st.sampled_from(ADDRS)), "brokerId": draw(st.sampled_from([0, 0, 1])),
           "compressed": compressed, "bodyCrc32": draw(st.sampled_from([0, crc32(body)]))}
    return R.REGISTER_BROKER, ext, body


# SYSTEM_ERROR remarks that are 4.9.7's own text, not an exception's
FIXED_REMARKS = {"crc32 not match", "string2Properties error", "namespace or key is null"}


def owned_topic_list(body: Any) -> list[str]:
    """A TopicList's topics of this module, sorted (4.9.7's is a HashSet's order; the others are other tests')."""
    return sorted(t for t in (body or {}).get("topicList", []) if isinstance(t, str) and is_owned(t))


def owned_cluster_info(body: Any) -> dict[str, Any]:
    brokers_ = {name: {"cluster": bd.get("cluster"), "brokerAddrs": {str(k): v for k, v in bd["brokerAddrs"].items()}}
                for name, bd in (body or {}).get("brokerAddrTable", {}).items() if is_owned(name)}
    clusters_ = {c: sorted(n for n in names if is_owned(n))
                 for c, names in (body or {}).get("clusterAddrTable", {}).items()}
    return {"brokerAddrTable": brokers_, "clusterAddrTable": {c: ns for c, ns in clusters_.items() if ns}}


def route(body: Any) -> Any:
    """A route with its lists in a fixed order (4.9.7's follow HashMap and HashSet orders)."""
    if not isinstance(body, dict):
        return body
    return {"queueDatas": sorted(body.get("queueDatas", []), key=lambda q: q.get("brokerName", "")),
            "brokerDatas": sorted(({**b, "brokerAddrs": {str(k): v for k, v in b["brokerAddrs"].items()}}
                                   for b in body.get("brokerDatas", [])), key=lambda b: b.get("brokerName", "")),
            "filterServerTable": body.get("filterServerTable", {}), "orderTopicConf": body.get("orderTopicConf")}


LISTINGS = {R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, R.GET_TOPICS_BY_CLUSTER, R.GET_SYSTEM_TOPIC_LIST_FROM_NS,
            R.GET_UNIT_TOPIC_LIST, R.GET_HAS_UNIT_SUB_TOPIC_LIST, R.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST}


def masked_answer(code: int, answer: Answer) -> dict[str, Any]:
    """What the two name servers must agree on."""
    out: dict[str, Any] = {"code": answer.code, "ext": answer.ext}
    if answer.code != C.SYSTEM_ERROR or answer.remark in FIXED_REMARKS:
        out["remark"] = answer.remark
    if code in LISTINGS:
        # The session's Apache lists the real brokers' topics and other tests', pocketmq its own broker's: this
        # module's names only; the system list's brokerAddr is any broker's (a HashMap's first)
        out["body"] = owned_topic_list(answer.body)
    elif code == R.GET_BROKER_CLUSTER_INFO:
        out["body"] = owned_cluster_info(answer.body)
    elif code == R.GET_ROUTEINFO_BY_TOPIC:
        out["body"] = route(answer.body)
    elif code not in (R.REGISTER_BROKER, R.GET_NAMESRV_CONFIG):
        # (a registration's answer carries the ORDER_TOPIC_CONFIG table, which other tests write on the session's
        # Apache; the config's keys and paths are each server's own: tests/apache/mqadmin/ compares them)
        out["body"] = answer.body
    return out


class Side:
    """One name server and the connection this module talks to it over."""

    def __init__(self, runner: asyncio.Runner, addr: str) -> None:
        self.runner, self.addr = runner, addr
        self.client = runner.run(self._connect())

    @staticmethod
    async def _connect() -> RemotingClient:
        return RemotingClient(wire_protocol=WireProtocol.NATIVE)

    def ask(self, code: int, ext: dict[str, Any] | None = None, body: bytes | None = None) -> Answer:
        return self.runner.run(invoke(self.client, self.addr, request(code, ext, body), 5.0))

    def reset(self, used_addrs: set[str]) -> None:
        """Unregisters every broker of this module (and so its topics), and forgets ``used_addrs`` as live brokers
        (an address may live on after its broker name moved on); deletes topics left."""
        info = self.ask(R.GET_BROKER_CLUSTER_INFO).body or {}
        for name, bd in info.get("brokerAddrTable", {}).items():
            if is_owned(name):
                for broker_id, addr in bd["brokerAddrs"].items():
                    self.ask(R.UNREGISTER_BROKER, {"clusterName": bd["cluster"], "brokerAddr": addr,
                                                   "brokerName": name, "brokerId": broker_id})
        # A name left in a cluster it was registered to after its first: registered there once more and gone
        info = self.ask(R.GET_BROKER_CLUSTER_INFO).body or {}
        for cluster, names in info.get("clusterAddrTable", {}).items():
            for name in filter(is_owned, names):
                ext = {"clusterName": cluster, "brokerAddr": ADDRS[0], "brokerName": name, "brokerId": 1}
                assert self.ask(R.REGISTER_BROKER, {**ext, "haServerAddr": ""}).code == C.SUCCESS
                self.ask(R.UNREGISTER_BROKER, ext)
        for addr in used_addrs | set(ADDRS):
            self.ask(R.UNREGISTER_BROKER, {"clusterName": GONE, "brokerAddr": addr, "brokerName": GONE,
                                           "brokerId": 0})
        for topic in owned_topic_list(self.ask(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body):
            self.ask(R.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})


@pytest.fixture(scope="module")
def sides(apache_rocketmq: ApacheRocketMQ, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Side]]:
    with ThreadedCluster(tmp_path_factory.mktemp("fuzz-namesrv")) as pocket, asyncio.Runner() as runner:
        out = {"apache": Side(runner, apache_rocketmq.namesrv_addr), "pocketmq": Side(runner, pocket.namesrv_addr)}
        try:
            yield out
        finally:
            for side in out.values():
                side.reset(set())
                # Nothing of the module's is left for the tests after it
                left = owned_cluster_info(side.ask(R.GET_BROKER_CLUSTER_INFO).body)
                assert left == {"brokerAddrTable": {}, "clusterAddrTable": {}}, left
                assert owned_topic_list(side.ask(R.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body) == []
                runner.run(side.client.close())


def send(side: Side, sequence: int, op: tuple[int, dict[str, Any], bytes | None]) -> Answer:
    code, ext, body = op
    if "namespace" in ext:
        ext = {**ext, "namespace": f"{PREFIX}N{sequence}{ext['namespace']}"}
    return side.ask(code, ext, body)


def unregisters_another(side: Side, op: tuple[int, dict[str, Any], bytes | None]) -> bool:
    """An UNREGISTER_BROKER of an id its broker name holds at another address: 4.9.7 removes that address,
    pocketmq only the address asked (docs/compatibility.md, "UNREGISTER_BROKER of a broker id"). Asked of the
    Apache side: until an answer differs, both hold the same."""
    code, ext, _ = op
    if code != R.UNREGISTER_BROKER:
        return False
    bd = (side.ask(R.GET_BROKER_CLUSTER_INFO).body or {}).get("brokerAddrTable", {}).get(ext["brokerName"])
    held = {str(k): v for k, v in (bd or {}).get("brokerAddrs", {}).items()}.get(str(ext["brokerId"]))
    return held is not None and held != ext["brokerAddr"]


@settings(max_examples=EXAMPLES or 50, derandomize=EXAMPLES is None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(registrations(), operations(), operations()), min_size=1, max_size=8))
def test_same_answers_as_apache_name_server(sides: dict[str, Side],
                                            ops: list[tuple[int, dict[str, Any], bytes | None]]) -> None:
    sequence = next(SEQUENCE)
    used = {str(ext[k]) for _, ext, _ in ops for k in ("brokerAddr", "haServerAddr") if k in ext}
    answers: dict[str, list[Any]] = {name: [] for name in sides}
    try:
        for op in ops:
            if unregisters_another(sides["apache"], op):
                continue
            for name, side in sides.items():
                answers[name].append((op[0], op[1], masked_answer(op[0], send(side, sequence, op))))
    finally:
        for side in sides.values():
            side.reset(used)
    for i, (theirs, ours) in enumerate(zip(answers["apache"], answers["pocketmq"], strict=True)):
        assert ours == theirs, (i, ops)
