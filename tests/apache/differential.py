"""Sending one remoting request to Apache RocketMQ and to pocketmq and comparing the answers: what may differ for
reasons that are no part of the behaviour (addresses, times, ids, versions) is masked; the rest must be equal.

Used by test_differential.py (a table of requests) and the test_differential_fuzz*.py modules (hypothesis: the
strategies of header values they share are here)."""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode as R
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import RemotingTimeoutError
from pocketmq.remoting.wire_protocol import WireProtocol

ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+:\d+$")
ADDRESS_IN_TEXT = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")
HUMAN_TIME = re.compile(r"^\d{4}-\d\d-\d\d#\d\d:\d\d:\d\d:\d{3}$")  # UtilAll.timeMillisToHumanString3
# Ext fields whose values name a place, a time or an id: their presence is compared, not their value.
VOLATILE_EXT = frozenset({"msgId", "offsetMsgId", "transactionId", "MSG_REGION", "TRACE_ON", "timestamp",
                          "bornTimestamp", "storeTimestamp", "brokerVersion", "haServerAddr", "masterAddr",
                          "brokerAddr", "version"})
NO_ANSWER = -1  # the code of an Answer when the server never answered
TIME_MS = 1_000_000_000_000  # numbers above are millisecond times (2001 on)


@dataclass
class Answer:
    code: int
    remark: str | None
    ext: dict[str, str]
    body: Any  # parsed JSON, {"bytes": n} for binary bodies, or None
    raw_body: bytes | None = field(default=None, repr=False)

    def view(self, ext_values: bool = True, body: bool = True, remark: bool = False) -> dict[str, Any]:
        """What two servers must agree on."""
        out: dict[str, Any] = {"code": self.code}
        out["ext"] = {k: ("<set>" if k in VOLATILE_EXT or not ext_values else mask(v)) for k, v in self.ext.items()}
        if body:
            out["body"] = mask(self.body)
        if remark:
            out["remark"] = ADDRESS_IN_TEXT.sub("<addr>", self.remark) if self.remark else self.remark
        return out


def mask(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v) for v in value]
    if isinstance(value, str):
        if ADDRESS.match(value):
            return "<addr>"
        if HUMAN_TIME.match(value):
            return "<time>"
        if value.isdigit() and int(value) > TIME_MS:
            return "<time>"
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value > TIME_MS:
        return "<time>"
    return value


_BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def parse_body(body: bytes | None) -> Any:
    if body is None:
        return None
    try:
        text = body.decode("utf-8")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))  # fastjson's unquoted int keys
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {"bytes": len(body), "head": base64.b64encode(body[:8]).decode()}


async def invoke(client: RemotingClient, addr: str, request: RemotingCommand, timeout: float = 15.0) -> Answer:
    """One request on ``client``'s connection (a native one: ``RemotingClient(wire_protocol=WireProtocol.NATIVE)``),
    which outlives it: what a heartbeat registered stays while the client is open."""
    try:
        resp = await client.invoke(addr, request, timeout)
    except RemotingTimeoutError:
        return Answer(NO_ANSWER, f"no answer within {timeout} s", {}, None)
    ext = {k: str(v) for k, v in (resp.ext_fields or {}).items()}
    return Answer(resp.code, resp.remark, ext, parse_body(resp.body), resp.body)


async def _call(addr: str, request: RemotingCommand, timeout: float) -> Answer:
    client = RemotingClient(wire_protocol=WireProtocol.NATIVE)
    try:
        return await invoke(client, addr, request, timeout)
    finally:
        await client.close()


def call(addr: str, request: RemotingCommand, timeout: float = 15.0) -> Answer:
    """One request on a connection of its own (RocketMQ's native protocol), from synchronous test code."""
    return asyncio.run(_call(addr, request, timeout))


def call_each(requests: dict[str, tuple[str, RemotingCommand]], timeout: float = 15.0) -> dict[str, Answer]:
    """Each name's request to its address, all at once (each on a connection of its own): a request neither
    server answers costs one timeout, not one per server."""
    async def each() -> list[Answer]:
        return await asyncio.gather(*(_call(addr, req, timeout) for addr, req in requests.values()))

    return dict(zip(requests, asyncio.run(each()), strict=True))


def request(code: int, ext: dict[str, Any] | None = None, body: bytes | None = None) -> RemotingCommand:
    fields = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (ext or {}).items() if v is not None}
    return RemotingCommand.request(code, fields, body)


def delete_owned(broker: str, namesrv: str, topic: str, group: str) -> None:
    """What a module's requests created on the session's Apache, deleted so that the tests after it see none of it:
    the groups named from `group` (auto-created ones too), the topics named from `topic` and those groups' retry
    and dead-letter topics."""
    groups = call(broker, request(R.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body or {}
    for name in groups.get("subscriptionGroupTable", {}):
        if name.startswith(group):
            call(broker, request(R.DELETE_SUBSCRIPTIONGROUP, {"groupName": name, "removeOffset": True}))
    topics = call(broker, request(R.GET_ALL_TOPIC_CONFIG)).body or {}
    for name in topics.get("topicConfigTable", {}):
        if name.startswith((topic, "%RETRY%" + group, "%DLQ%" + group)):
            call(broker, request(R.DELETE_TOPIC_IN_BROKER, {"topic": name}))
            call(namesrv, request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": name}))


odd_numbers = st.sampled_from(["", "x", "1.5", "0x10", " 1", "99999999999999999999999"])  # no Java int or long
java_ints = st.one_of(st.integers(-3, 40), st.integers(-(2**31), 2**31 - 1))
java_longs = st.one_of(st.integers(-3, 40), st.integers(-(2**63), 2**63 - 1))


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` three times in four, else ``odd``."""
    return st.integers(0, 3).flatmap(lambda i: odd if i == 0 else valid)


def optional(draw: Any, ext: dict[str, Any], key: str, values: st.SearchStrategy[Any]) -> dict[str, Any]:
    """A field RocketMQ's header class does not require: sent or left out."""
    if draw(st.booleans()):
        ext[key] = draw(values)
    return ext
