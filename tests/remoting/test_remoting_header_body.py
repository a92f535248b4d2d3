"""Typed headers (ext fields) and the request and response codes; the body classes are in
test_remoting_body_classes.py."""

from __future__ import annotations

import dataclasses

import pytest

from pocketmq.remoting import header as h
from pocketmq.remoting import header_codec as hc
from pocketmq.remoting.codes import PermName, RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import HeaderError


def v1_header() -> h.SendMessageRequestHeader:
    return h.SendMessageRequestHeader(
        producer_group="PG",
        topic="TopicTest",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1_700_000_000_123,
        flag=0,
        properties="KEYS\x01k1\x02",
        reconsume_times=0,
        max_reconsume_times=16,
        broker_name="broker-a",
    )


def test_codes_match_rocketmq() -> None:
    expected = {
        "SEND_MESSAGE": 10, "PULL_MESSAGE": 11, "QUERY_MESSAGE": 12, "QUERY_CONSUMER_OFFSET": 14,
        "UPDATE_CONSUMER_OFFSET": 15, "UPDATE_AND_CREATE_TOPIC": 17, "GET_ALL_TOPIC_CONFIG": 21,
        "SEARCH_OFFSET_BY_TIMESTAMP": 29, "GET_MAX_OFFSET": 30, "GET_MIN_OFFSET": 31,
        "GET_EARLIEST_MSG_STORETIME": 32, "VIEW_MESSAGE_BY_ID": 33, "HEART_BEAT": 34, "UNREGISTER_CLIENT": 35,
        "CONSUMER_SEND_MSG_BACK": 36, "END_TRANSACTION": 37, "GET_CONSUMER_LIST_BY_GROUP": 38,
        "CHECK_TRANSACTION_STATE": 39, "NOTIFY_CONSUMER_IDS_CHANGED": 40, "LOCK_BATCH_MQ": 41,
        "UNLOCK_BATCH_MQ": 42, "GET_ALL_CONSUMER_OFFSET": 43, "GET_ALL_DELAY_OFFSET": 45,
        "REGISTER_BROKER": 103,
        "UNREGISTER_BROKER": 104, "GET_ROUTEINFO_BY_TOPIC": 105, "GET_BROKER_CLUSTER_INFO": 106,
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP": 200, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER": 206,
        "DELETE_TOPIC_IN_BROKER": 215, "DELETE_TOPIC_IN_NAMESRV": 216, "SEND_MESSAGE_V2": 310,
        "SEND_BATCH_MESSAGE": 320,
    }  # fmt: skip
    assert {name: RequestCode[name].value for name in expected} == expected
    sys_codes = (
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        ResponseCode.TOPIC_NOT_EXIST,
    )
    assert sys_codes == (1, 3, 17)
    assert (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_OFFSET_MOVED, ResponseCode.QUERY_NOT_FOUND) == (
        19,
        21,
        22,
    )
    assert PermName.perm_to_string(PermName.PERM_READ | PermName.PERM_WRITE) == "RW-"


def test_to_ext_uses_rocketmq_wire_names_and_omits_none() -> None:
    ext = h.PullMessageRequestHeader("CG", "T", 1, 100, 32, 0x3, 90, 15000, 7, subscription="*").to_ext()
    assert ext == {
        "consumerGroup": "CG",
        "topic": "T",
        "queueId": 1,
        "queueOffset": 100,
        "maxMsgNums": 32,
        "sysFlag": 3,
        "commitOffset": 90,
        "suspendTimeoutMillis": 15000,
        "subVersion": 7,
        "subscription": "*",
    }
    assert h.UnregisterClientRequestHeader(client_id="127.0.0.1@1").to_ext() == {"clientID": "127.0.0.1@1"}
    assert "bname" in v1_header().to_ext()
    assert h.RegisterBrokerRequestHeader("b", "1.2.3.4:10911", "c", "1.2.3.4:10912", 0).to_ext() == {
        "brokerName": "b",
        "brokerAddr": "1.2.3.4:10911",
        "clusterName": "c",
        "haServerAddr": "1.2.3.4:10912",
        "brokerId": 0,
        "compressed": False,
        "bodyCrc32": 0,
    }


def test_from_ext_accepts_the_strings_a_rocketmq_codec_sends() -> None:
    ext = {"consumerGroup": "CG", "topic": "T", "queueId": "-1", "commitOffset": "+42"}
    parsed = h.UpdateConsumerOffsetRequestHeader.from_ext(ext)
    assert (parsed.queue_id, parsed.commit_offset) == (-1, 42)
    cs = h.ConsumerSendMsgBackRequestHeader.from_ext(
        {"offset": "5", "group": "G", "delayLevel": "0", "unitMode": "TRUE"}
    )
    assert cs.unit_mode is True and cs.max_reconsume_times is None and cs.origin_topic is None
    assert (
        h.ConsumerSendMsgBackRequestHeader.from_ext({"offset": 5, "group": "G", "delayLevel": 0}).unit_mode
        is False
    )


@pytest.mark.parametrize(
    ("ext", "field", "reason"),
    [
        ({"topic": "T"}, "queueId", "is missing"),
        ({"topic": "T", "queueId": "1x"}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": True}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": 1.0}, "queueId", "expected an int"),
        ({"topic": "T", "queueId": " 1"}, "queueId", "expected an int"),
        ({"topic": 5, "queueId": 1}, "topic", "expected a str"),
    ],
)
def test_from_ext_errors_name_the_field(ext: dict[str, object], field: str, reason: str) -> None:
    with pytest.raises(HeaderError) as e:
        h.GetMaxOffsetRequestHeader.from_ext(ext)
    assert e.value.field == field
    assert reason in e.value.reason
    assert field in str(e.value)


def test_bad_bool_and_to_ext_checks() -> None:
    ext = {"brokerName": "b", "brokerAddr": "a", "clusterName": "c", "haServerAddr": "h", "brokerId": 0}
    # Java's Boolean.parseBoolean: any text but "true" (in any case) is false, never refused
    assert [h.RegisterBrokerRequestHeader.from_ext({**ext, "compressed": t}).compressed
            for t in ("yes", "", "1", "TRUE", "True")] == [False, False, False, True, True]
    with pytest.raises(HeaderError, match="compressed"):
        h.RegisterBrokerRequestHeader.from_ext({**ext, "compressed": 7})  # not a text: a native peer's bug
    with pytest.raises(HeaderError, match="topic"):
        h.GetRouteInfoRequestHeader(topic=None).to_ext()  # type: ignore[arg-type]
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader("T", "1").to_ext()  # type: ignore[arg-type]
    with pytest.raises(HeaderError, match="queueId"):
        h.GetMaxOffsetRequestHeader("T", True).to_ext()


def test_send_message_header_v2_conversion_both_ways() -> None:
    v1 = v1_header()
    v2 = h.SendMessageRequestHeaderV2.from_v1(v1)
    ext = v2.to_ext()
    assert set(ext) == set("abcdefghijklmn")
    assert (ext["a"], ext["b"], ext["e"], ext["g"], ext["l"], ext["n"]) == (
        "PG",
        "TopicTest",
        3,
        1_700_000_000_123,
        16,
        "broker-a",
    )
    assert v2.to_v1() == v1
    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        assert h.parse_send_message_request_header(code, ext) == v1
    assert h.parse_send_message_request_header(RequestCode.SEND_MESSAGE, v1.to_ext()) == v1
    with pytest.raises(HeaderError):
        h.parse_send_message_request_header(RequestCode.SEND_MESSAGE, ext)  # V2 letters under a V1 code


@pytest.mark.parametrize(
    "change",
    [{}, {"properties": None, "reconsume_times": None, "max_reconsume_times": None, "broker_name": None},
     {"unit_mode": True, "batch": True, "queue_id": -1}],
)
def test_send_v2_map_built_and_read_directly_equals_going_through_the_v2_header(change: dict) -> None:
    # Sends skip the SendMessageRequestHeaderV2 object: the direct codec must give the same map and header.
    v1 = dataclasses.replace(v1_header(), **change)
    ext = h.send_message_v2_ext(v1)
    assert ext == h.SendMessageRequestHeaderV2.from_v1(v1).to_ext()
    assert h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, ext) == v1


@pytest.mark.parametrize(
    ("ext", "fragment"),
    [({"b": "T"}, "'a'"), ({**dict.fromkeys("abc", "x"), "d": "four"}, "'d'"), ({"k": 7}, None)],
)
def test_send_v2_map_errors_are_those_of_the_v2_header(ext: dict, fragment: str | None) -> None:
    full = h.SendMessageRequestHeaderV2.from_v1(v1_header()).to_ext()
    bad = {**full, **ext} if fragment is None else ext
    with pytest.raises(HeaderError) as direct:
        h.parse_send_message_request_header(RequestCode.SEND_MESSAGE_V2, bad)
    with pytest.raises(HeaderError) as via_v2:
        h.SendMessageRequestHeaderV2.from_ext(bad)
    assert str(direct.value) == str(via_v2.value)
    with pytest.raises(HeaderError):
        h.send_message_v2_ext(dataclasses.replace(v1_header(), topic=None))  # type: ignore[arg-type]


def _sample_value(kind: type) -> object:
    return {int: 7, str: "s", bool: True, float: 1.5}[kind]


def _header_classes() -> list[type[h.CommandHeader]]:
    return [
        obj
        for obj in vars(h).values()
        if isinstance(obj, type) and issubclass(obj, h.CommandHeader) and obj is not h.CommandHeader
    ]


@pytest.mark.parametrize("cls", _header_classes(), ids=lambda c: c.__name__)
def test_every_header_round_trips_through_ext_and_strings(cls: type[h.CommandHeader]) -> None:
    specs = hc._specs(cls)
    header = cls(**{s.attr: _sample_value(s.kind) for s in specs})
    ext = header.to_ext()
    assert set(ext) == {s.wire for s in specs}
    assert cls.from_ext(ext) == header
    as_strings = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in ext.items()}
    assert cls.from_ext(as_strings) == header
    assert RemotingCommand.request(1, header).decode_header(cls) == header


def test_header_dataclasses_are_slotted() -> None:
    for cls in _header_classes():
        assert dataclasses.is_dataclass(cls) and "__slots__" in vars(cls), cls
