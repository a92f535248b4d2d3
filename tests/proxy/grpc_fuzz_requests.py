"""The requests test_grpc_differential_fuzz.py sends both gRPC endpoints: hypothesis strategies of MessagingService
requests, valid and not, with their call's metadata and deadline.

What one server gave out (receipt handles, transaction ids, recall handles) is drawn as a stand-in, STAND_INS, each
side's own put in by ``for_side`` before the request is sent. Cases that differ on purpose (docs/compatibility.md)
are left out of the strategies, each with the reason."""

from __future__ import annotations

import time
import uuid
from typing import Any

from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import strategies as st

from pocketmq.common.extra_info_util import build_extra_info
from pocketmq.common.recall_message_handle import HandleV1

from .conftest import D, S

RUN = uuid.uuid4().hex[:6]
# One topic per message type (message.type set on both: an untyped topic takes every type on pocketmq and NORMAL
# only on Apache, docs/compatibility.md), a consumer group and a FIFO one.
# (No LITE topic: pocketmq refuses one, docs/compatibility.md; lite sends go to the others, refused on both.)
NORMAL, FIFO, DELAY, TXN, PRIORITY = (f"Gf{kind}{RUN}" for kind in ("Normal", "Fifo", "Delay", "Txn", "Priority"))
TOPIC_TYPES = {NORMAL: "NORMAL", FIFO: "FIFO", DELAY: "DELAY", TXN: "TRANSACTION", PRIORITY: "PRIORITY"}
GROUP = f"GfGroup{RUN}"
FIFO_GROUP = f"GfFifoGroup{RUN}"
BROKER = "broker-a"  # (both sides' broker name)
# Clients whose Telemetry stream the module keeps open (their Settings registered), and two that terminate.
CONSUMER, PRODUCER = f"gf-consumer-{RUN}@1", f"gf-producer-{RUN}@1"
TERMINATING = (f"gf-term-consumer-{RUN}@1", f"gf-term-producer-{RUN}@1")
# The messages the fixture sends each side's NORMAL topic and receives for an hour: their handles are stand-ins.
HANDLED_IDS = [f"0102FC0000000171190B1C3CCC{RUN.upper()}{i:02X}" for i in range(4)]
HANDLES = tuple(f"<handle {i}>" for i in range(len(HANDLED_IDS)))
TXN_ID, TXN_MESSAGE_ID = "<transaction id>", f"0102FC0000000171190B1C3CCC{RUN.upper()}A0"
RECALL = "<recall handle>"
STAND_INS = (*HANDLES, TXN_ID, RECALL)
HOUR = 3_600_000
MAX_MESSAGE = 4 * 1024 * 1024


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def for_side(msg: Message, values: dict[str, str]) -> Message:
    """A copy of ``msg`` with every string field that is a stand-in replaced by ``values``' value."""
    out = type(msg)()
    out.CopyFrom(msg)
    _replace(out, values)
    return out


def _replace(msg: Message, values: dict[str, str]) -> None:
    for field, value in msg.ListFields():
        if field.type == field.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                continue  # (user properties: never a stand-in)
            for sub in (value if field.is_repeated else [value]):
                _replace(sub, values)
        elif field.type == field.TYPE_STRING:
            if field.is_repeated:
                value[:] = [values.get(v, v) for v in value]
            elif value in values:
                setattr(msg, field.name, values[value])


def mostly(valid: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` three times in four, else ``odd``."""
    return st.integers(0, 3).flatmap(lambda i: odd if i == 0 else valid)


printable = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12)
odd_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x3100), max_size=12)
topics = mostly(st.sampled_from([NORMAL, NORMAL, FIFO, DELAY, TXN, PRIORITY]), st.one_of(
                   st.sampled_from(["", " ", "TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_x", f"NoSuch{RUN}",
                                    f"%RETRY%{GROUP}", f"%DLQ%{GROUP}", "bad topic!", "a" * 128]),
                   odd_text))
groups = mostly(st.sampled_from([GROUP, GROUP, FIFO_GROUP]), st.one_of(
                   st.sampled_from(["", " ", f"NoSuchGroup{RUN}", "bad group!", "CID_RMQ_SYS_X", "TOOLS_CONSUMER",
                                    f"%RETRY%{GROUP}", "g" * 256]),
                   odd_text))
brokers = st.sampled_from([BROKER, BROKER, "", "no-such-broker"])


def resource(name: str) -> Any:
    return D.Resource(name=name)


def duration_ms(ms: int) -> Duration:
    d = Duration()
    d.FromMilliseconds(ms)
    return d


# Durations as milliseconds, and a few that are not valid protobuf durations (seconds and nanos of two signs).
durations = st.one_of(
    st.sampled_from([0, 1, 999, 9_999, 10_000, 30_000, HOUR, 12 * HOUR, 12 * HOUR + 1, -1, -10_000]).map(duration_ms),
    st.sampled_from([Duration(seconds=1, nanos=-1), Duration(seconds=-1, nanos=5), Duration(seconds=2**40),
                     Duration(nanos=999_999_999)]))
endpoints = st.sampled_from([
    D.Endpoints(scheme=D.AddressScheme.IPv4, addresses=[D.Address(host="127.0.0.1", port=8081)]), None,
    D.Endpoints(), D.Endpoints(scheme=D.AddressScheme.DOMAIN_NAME, addresses=[D.Address(host="localhost", port=1)]),
    D.Endpoints(scheme=D.AddressScheme.IPv6, addresses=[D.Address(host="::1", port=8081)])])
message_types = st.sampled_from([D.MessageType.NORMAL, D.MessageType.FIFO, D.MessageType.DELAY,
                                 D.MessageType.TRANSACTION, D.MessageType.MESSAGE_TYPE_UNSPECIFIED,
                                 D.MessageType.PRIORITY, D.MessageType.LITE, 99])
small_bodies = st.one_of(st.sampled_from([b"x", b"", b"body"]), st.binary(max_size=64))
bodies = st.one_of(small_bodies, st.sampled_from([MAX_MESSAGE, MAX_MESSAGE + 1]).map(lambda n: b"b" * n))
message_ids = st.one_of(st.builds(lambda: uuid.uuid4().hex.upper()),
                        st.sampled_from(["", " ", "\u00a0", "a,b", HANDLED_IDS[0]]), printable)
keys = st.lists(st.one_of(st.sampled_from(["k1", "", " ", "\u3000", "a b", "k\x01"]), printable), max_size=3)
tags = st.one_of(st.sampled_from(["TagA", "", " ", "a|b", "t\x02", "\u0085", "t" * 300]), printable)
message_group_names = st.one_of(st.sampled_from(["g1", "", " ", "m\x03", "g" * 64, "g" * 65]), printable)
priorities = st.sampled_from([0, 1, 3, 4, 100, 2**31 - 1, -1, -(2**31)])
lite_topics = st.one_of(st.sampled_from(["lt1", "", " ", "a b", "l" * 64, "l" * 65, "\u00e9", "a-b_C9"]), printable)
property_names = st.one_of(st.sampled_from(["p", "UNIQ_KEY", "TAGS", "KEYS", "__STARTDELIVERTIME", "DELAY",
                                            "TRAN_MSG", "", " ", "k\x04", "MSG_REGION", "_SYS_MSG_PRIORITY_",
                                            "__LITE_TOPIC"]), printable)
user_properties = st.one_of(
    st.dictionaries(property_names, st.one_of(printable, st.sampled_from(["", "v\x05", "x" * 17_000])), max_size=3),
    st.just({f"p{i}": "v" for i in range(129)}))
# Delivery times relative to now (past, due, within and past the proxy's 24 h and the broker's 3 days).
delays = st.sampled_from([-60_000, 0, 1_000, 60_000, 24 * HOUR - 60_000, 24 * HOUR + 60_000, 4 * 24 * HOUR])


# SQL92 only of expressions that compile: pocketmq's proxy refuses one that does not, ILLEGAL_FILTER_EXPRESSION,
# where Apache's broker does, an internal error (docs/compatibility.md).
filter_expressions = st.one_of(
    st.builds(lambda t, e: D.FilterExpression(type=t, expression=e),
              st.sampled_from([D.FilterType.TAG, D.FilterType.FILTER_TYPE_UNSPECIFIED]),
              st.sampled_from(["*", "TagA", "TagA || TagB", "", "a > 1", "||", " || TagA", "TAGS is not null"])),
    st.builds(lambda e: D.FilterExpression(type=D.FilterType.SQL, expression=e),
              st.sampled_from(["a > 1", "TAGS is not null", "a = 'x' AND b < 3"])))


@st.composite
def messages(draw: Any, small: bool = False) -> Any:
    topic = draw(topics)
    # (mostly the topic's own type: a message of another is refused before anything else is looked at)
    message_type = getattr(D.MessageType, TOPIC_TYPES[topic]) if topic in TOPIC_TYPES and draw(st.integers(0, 2)) \
        else draw(message_types)
    sp = D.SystemProperties(message_id=draw(message_ids), message_type=message_type,
                            body_encoding=draw(st.sampled_from([D.Encoding.IDENTITY, D.Encoding.GZIP,
                                                                D.Encoding.ENCODING_UNSPECIFIED])))
    if draw(st.booleans()):
        sp.tag = draw(tags)
    if draw(st.booleans()):
        sp.keys.extend(draw(keys))
    if sp.message_type == D.MessageType.FIFO or draw(st.integers(0, 4)) == 0:
        sp.message_group = draw(message_group_names)
    if sp.message_type == D.MessageType.PRIORITY or draw(st.integers(0, 4)) == 0:
        sp.priority = draw(priorities)
    if sp.message_type == D.MessageType.LITE or draw(st.integers(0, 5)) == 0:
        sp.lite_topic = draw(lite_topics)
    if sp.message_type == D.MessageType.DELAY or draw(st.integers(0, 4)) == 0:
        sp.delivery_timestamp.FromMilliseconds(now_ms() + draw(delays))
        if draw(st.integers(0, 5)) == 0:  # (not a valid Timestamp)
            sp.delivery_timestamp.nanos = draw(st.sampled_from([-1, 1_000_000_000]))
    if draw(st.integers(0, 5)) == 0:
        sp.born_timestamp.CopyFrom(draw(st.sampled_from([Timestamp(seconds=1), Timestamp(seconds=2**40),
                                                          Timestamp(seconds=1, nanos=-1)])))
    if sp.message_type == D.MessageType.TRANSACTION and draw(st.booleans()):
        sp.orphaned_transaction_recovery_duration.CopyFrom(draw(durations))
    msg = D.Message(topic=resource(topic), body=draw(small_bodies if small else bodies), system_properties=sp)
    for k, v in draw(user_properties).items():
        msg.user_properties[k] = v
    return msg


def _extra_info(ck: int, popped: str, invisible: int, topic: str, broker: str, queue_id: int, offset: int) -> str:
    pop_time = {"now": now_ms(), "1970": 0}[popped]
    return build_extra_info(ck, pop_time, invisible, 0, topic, broker, queue_id, offset) + f" {offset}"


# A receipt handle: a real one, one of the broker's fields (odd ones among them), or text.
receipt_handles = st.one_of(
    st.sampled_from(HANDLES),
    st.builds(_extra_info, st.sampled_from([0, 1, -1]), st.sampled_from(["now", "1970"]), st.sampled_from([HOUR, 0]),
              st.sampled_from([NORMAL, f"NoSuch{RUN}"]), st.sampled_from([BROKER, BROKER, "no-such-broker"]),
              st.integers(-1, 4), st.sampled_from([0, 1, 2**40])),
    st.sampled_from(["", " ", "a b c d e f g h", "1 2 3", "0 1 2 3 0 broker-a 0 0 5"]), printable)


def _recall_handle(topic: str, broker: str, when: str) -> str:
    timestamp = {"in a minute": str(now_ms() + 60_000), "past": str(now_ms() - 1_000)}.get(when, when)
    return HandleV1.build_handle(topic, broker, timestamp, HANDLED_IDS[1])


recall_handles = st.one_of(
    st.just(RECALL), st.sampled_from(["", " ", "not a handle", "djEgeCB5"]), printable,
    st.builds(_recall_handle, st.sampled_from([DELAY, NORMAL, f"NoSuch{RUN}", ""]), brokers,
              st.sampled_from(["in a minute", "past", "soon", ""])))


def metadata(draw: Any, client_id: str, registered_only: bool = False) -> tuple[tuple[str, str], ...]:
    """The call's metadata: ``client_id`` mostly, or none, a blank one and (unless ``registered_only``: Apache
    needs the client's Settings where pocketmq does not, docs/compatibility.md) one no server knows."""
    ids = [client_id] * 8 + [None, ""] + ([] if registered_only else [f"gf-stranger-{RUN}@1", "x"])
    cid = draw(st.sampled_from(ids))
    md = [("x-mq-client-id", cid)] if cid is not None else []
    language = draw(st.sampled_from(["PYTHON", "PYTHON", "JAVA", "GOLANG", None]))
    if language is not None:
        md.append(("x-mq-language", language))
    version = draw(st.sampled_from(["5.1.2", "5.1.2", "5.0.0", None]))
    if version is not None:
        md.append(("x-mq-client-version", version))
    md.append(("x-mq-protocol", "GRPC_V2"))
    return tuple(md)


def handled_topic(draw: Any, handles: list[str]) -> str:
    """The topic of a request naming receipt handles. A real handle's queue and offset differ between the servers:
    under another topic of the module, whether the broker finds that offset there depends on what each side's
    queue of that topic holds, so a real handle goes with its own topic, one neither has, or a bad name."""
    if any(h in HANDLES for h in handles):
        return draw(st.sampled_from([NORMAL, NORMAL, f"NoSuch{RUN}", "", "bad topic!"]))
    return draw(topics)


@st.composite
def calls(draw: Any) -> tuple[str, Any, tuple[tuple[str, str], ...]]:
    """(method, request, metadata)."""
    method = draw(st.sampled_from(["QueryRoute", "Heartbeat", "SendMessage", "SendMessage", "QueryAssignment",
                                   "ReceiveMessage", "ReceiveMessage", "AckMessage", "ChangeInvisibleDuration",
                                   "ForwardMessageToDeadLetterQueue", "EndTransaction", "NotifyClientTermination",
                                   "RecallMessage"]))
    if method == "QueryRoute":
        request = S.QueryRouteRequest(topic=resource(draw(topics)), endpoints=draw(endpoints))
        return method, request, metadata(draw, PRODUCER)
    if method == "QueryAssignment":
        request = S.QueryAssignmentRequest(topic=resource(draw(topics)), group=resource(draw(groups)),
                                           endpoints=draw(endpoints))
        return method, request, metadata(draw, CONSUMER)
    if method == "Heartbeat":
        request = S.HeartbeatRequest(client_type=draw(st.sampled_from(list(D.ClientType.values()) + [42])))
        if draw(st.booleans()):
            request.group.name = draw(groups)
        return method, request, metadata(draw, draw(st.sampled_from([CONSUMER, PRODUCER])))
    if method == "SendMessage":
        # A batch of small bodies only: pocketmq refuses one past the broker's size as soon as its messages pass it,
        # where Apache's proxy first checks every message (a later one's refusal comes first there;
        # docs/compatibility.md).
        request = S.SendMessageRequest(messages=draw(st.one_of(st.lists(messages(), max_size=1),
                                                               st.lists(messages(small=True), min_size=2, max_size=3))))
        if draw(st.booleans()) and len(request.messages) > 1:
            for m in request.messages[1:]:  # (a batch of one topic, as the SDKs send)
                m.topic.name = request.messages[0].topic.name
        return method, request, metadata(draw, PRODUCER)
    if method == "ReceiveMessage":
        request = S.ReceiveMessageRequest(
            group=resource(draw(groups)),
            message_queue=D.MessageQueue(topic=resource(draw(topics)), broker=D.Broker(name=draw(brokers))),
            filter_expression=draw(filter_expressions),
            # (no batch size 0: 5.5.0's broker parks such a pop, pocketmq's refuses it, docs/compatibility.md)
            batch_size=draw(st.sampled_from([1, 16, 32, -1, 33, 2**31 - 1])),
            invisible_duration=draw(durations))
        if draw(st.integers(0, 3)):
            request.long_polling_timeout.CopyFrom(duration_ms(draw(st.sampled_from([0, 100, 500, 800, 30_000]))))
        if draw(st.integers(0, 4)) == 0:
            request.attempt_id = draw(st.sampled_from(["", "attempt-1", uuid.uuid4().hex]))
        # Auto renewal only for the registered consumer: Apache refuses it for any other (docs/compatibility.md).
        request.auto_renew = draw(st.integers(0, 5)) == 0
        return method, request, metadata(draw, CONSUMER, registered_only=True)
    if method == "AckMessage":
        entries = draw(st.lists(st.builds(lambda h, m: S.AckMessageEntry(receipt_handle=h, message_id=m),
                                          receipt_handles, st.sampled_from([*HANDLED_IDS, "", "m"])),
                                max_size=3))
        request = S.AckMessageRequest(group=resource(draw(groups)), entries=entries,
                                      topic=resource(handled_topic(draw, [e.receipt_handle for e in entries])))
        return method, request, metadata(draw, CONSUMER)
    if method == "ChangeInvisibleDuration":
        handle = draw(receipt_handles)
        request = S.ChangeInvisibleDurationRequest(
            group=resource(draw(groups)), topic=resource(handled_topic(draw, [handle])), receipt_handle=handle,
            message_id=draw(st.sampled_from([*HANDLED_IDS, "", "m"])), invisible_duration=draw(durations))
        # Only the registered consumer: Apache 5.5.0's lookup of a well-formed handle fails for a client without a
        # Telemetry stream (a NullPointerException; docs/compatibility.md).
        return method, request, metadata(draw, CONSUMER, registered_only=True)
    if method == "ForwardMessageToDeadLetterQueue":
        handle = draw(receipt_handles)
        request = S.ForwardMessageToDeadLetterQueueRequest(
            group=resource(draw(groups)), topic=resource(handled_topic(draw, [handle])), receipt_handle=handle,
            message_id=draw(st.sampled_from([*HANDLED_IDS, "", "m"])),
            delivery_attempt=draw(st.sampled_from([0, 1, 16, -1])),
            max_delivery_attempts=draw(st.sampled_from([0, 1, 16, -1])))
        # As ChangeInvisibleDuration: the same NullPointerException at Apache's for a client without Telemetry.
        return method, request, metadata(draw, CONSUMER, registered_only=True)
    if method == "EndTransaction":
        request = S.EndTransactionRequest(
            topic=resource(draw(topics)), message_id=draw(st.sampled_from([TXN_MESSAGE_ID, "", "m"])),
            transaction_id=draw(st.sampled_from([TXN_ID, TXN_ID, "", " ", "unknown", TXN_MESSAGE_ID])),
            resolution=draw(st.sampled_from(list(D.TransactionResolution.values()))),
            source=draw(st.sampled_from(list(D.TransactionSource.values()))))
        return method, request, metadata(draw, PRODUCER)
    if method == "NotifyClientTermination":
        request = S.NotifyClientTerminationRequest()
        if draw(st.booleans()):
            request.group.name = draw(groups)
        return method, request, metadata(draw, draw(st.sampled_from(TERMINATING)))
    request = S.RecallMessageRequest(topic=resource(draw(topics)), recall_handle=draw(recall_handles))
    return method, request, metadata(draw, PRODUCER)
