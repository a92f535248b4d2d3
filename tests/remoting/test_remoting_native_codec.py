"""RocketMQ's native frames: encode_native / NativeFrameDecoder, the JSON header and the ROCKETMQ binary header (the
decoder on a stream and malformed frames: test_remoting_native_frames.py)."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from native_frame_vectors import JAVA_JSON_HEADER, JSON, ROCKETMQ, ROCKETMQ_FRAME, native_frame, one, topic_request

from pocketmq.remoting import header as h
from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import (
    FLAG_ONEWAY,
    FLAG_RESPONSE,
    BodyDialect,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import encode_native
from pocketmq.remoting.remoting_serializable import (
    encode_json_header,
    encode_json_header_fast,
    encode_json_header_fast_py,
    java_ext_fields,
)

# --- byte-exact vectors (native_frame_vectors.py) --------------------------------------------------------------


def test_json_frame_is_byte_for_byte_javas() -> None:
    assert len(JAVA_JSON_HEADER) == 0x83
    expected = b"\x00\x00\x00\x87" + b"\x00\x00\x00\x83" + JAVA_JSON_HEADER
    assert encode_native(topic_request(JSON)) == expected
    cmd = one(expected)
    assert cmd == topic_request(JSON)
    assert cmd.serialize_type is JSON and cmd.body is None


def test_rocketmq_frame_is_byte_for_byte_the_documented_layout() -> None:
    assert encode_native(topic_request(ROCKETMQ)) == ROCKETMQ_FRAME
    assert one(ROCKETMQ_FRAME) == topic_request(ROCKETMQ)


def test_json_header_leaves_out_nulls_and_writes_remark_body_apart() -> None:
    cmd = RemotingCommand(code=1, language=LanguageCode.CPP, version=63, opaque=3, flag=FLAG_RESPONSE,
                          remark="bo\"om\u0001é", body=b"payload", serialize_type=JSON)  # fmt: skip
    data = encode_native(cmd)
    header_length = struct.unpack(">I", data[4:8])[0]
    text = data[8 : 8 + header_length].decode()
    assert text == (
        '{"code":1,"flag":1,"language":"CPP","opaque":3,"remark":"bo\\"om\\u0001é",'
        '"serializeTypeCurrentRPC":"JSON","version":63}'
    )
    assert data[8 + header_length :] == b"payload"
    assert one(data) == cmd


# native-protocol.md §2: two raw request headers as they arrive.
CPP_HEADER = (
    b'{"code":105,"extFields":{"AccessKey":"","OnsChannel":"ALIYUN","Signature":"2gs1...=","topic":"T"},'
    b'"flag":0,"language":"CPP","opaque":0,"remark":"","version":63}\n'
)
ALI_ONS_HEADER = (
    rb'{"code":310,"language":"JAVA","opaque":2,"flag":0,"version":121,"extFields":{"a":"PG","b":"T",'
    rb'"c":"TBW102","d":4,"e":1,"f":0,"g":1795588180624,"h":0,"i":"TAGS\u0001TagA\u0002KEYS\u0001k1\u0002",'
    rb'"j":0,"k":false}}'
)


def test_the_cpp_clients_header_decodes() -> None:
    cmd = one(native_frame(CPP_HEADER))
    assert (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag) == (105, LanguageCode.CPP, 63, 0, 0)
    assert cmd.remark == ""
    assert cmd.ext_fields == {"AccessKey": "", "OnsChannel": "ALIYUN", "Signature": "2gs1...=", "topic": "T"}
    assert cmd.decode_header(h.GetRouteInfoRequestHeader) == h.GetRouteInfoRequestHeader("T")


def test_the_ali_ons_send_header_decodes_into_the_send_header() -> None:
    cmd = one(native_frame(ALI_ONS_HEADER, body=b"hello"))
    assert cmd.serialize_type is JSON and cmd.body == b"hello" and cmd.remark is None
    # JSON numbers and booleans become their text, as fastjson fills a HashMap<String,String>.
    assert cmd.ext_fields["d"] == "4" and cmd.ext_fields["g"] == "1795588180624" and cmd.ext_fields["k"] == "false"
    header = h.parse_send_message_request_header(cmd.code, cmd.ext_fields)
    assert (header.producer_group, header.topic, header.default_topic) == ("PG", "T", "TBW102")
    assert (header.default_topic_queue_nums, header.queue_id, header.born_timestamp) == (4, 1, 1795588180624)
    assert header.properties == "TAGS\x01TagA\x02KEYS\x01k1\x02"
    assert header.unit_mode is False and header.reconsume_times == 0


def test_the_cpp_clients_mixed_ext_types_parse_as_java_parses_them() -> None:
    # native-protocol.md §2: ints as JSON numbers, longs as strings, booleans as "0"/"1" (both false in Java).
    ext = {"producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
           "queueId": 0, "sysFlag": 0, "bornTimestamp": "1795588180624", "flag": 0, "properties": "TAGS\u0001a",
           "reconsumeTimes": 0, "unitMode": "0", "batch": "1", "maxReconsumeTimes": 16}  # fmt: skip
    text = json.dumps({"code": 10, "extFields": ext, "flag": 0, "language": "CPP", "opaque": 1, "remark": ""})
    cmd = one(native_frame(text.encode() + b"\n"))
    header = h.parse_send_message_request_header(cmd.code, cmd.ext_fields)
    assert header.born_timestamp == 1795588180624 and header.queue_id == 0 and header.max_reconsume_times == 16
    assert header.unit_mode is False and header.batch is False  # Boolean.parseBoolean("1") is false


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("TRUE", True), ("false", False), ("0", False), ("1", False), (True, True)],
)
def test_header_booleans_read_like_javas_parse_boolean(value: object, expected: bool) -> None:
    ext = {"topic": "T", "defaultTopic": "D", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
           "order": value}  # fmt: skip
    assert h.CreateTopicRequestHeader.from_ext(ext).order is expected


def test_json_header_is_read_leniently() -> None:
    # Any key order, unknown keys, numbers as strings or integral floats, the language as an ordinal or unknown,
    # extFields null, trailing whitespace.
    text = b'{"serializeTypeCurrentRPC":"ROCKETMQ","opaque":"12","code":11.0,"language":9,"flag":"2",' \
           b'"future":{"x":[1]},"extFields":null,"version":"401"} \r\n\t'  # fmt: skip
    cmd = one(native_frame(text))
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.language, cmd.version) == (11, 12, FLAG_ONEWAY, LanguageCode.GO, 401)
    assert cmd.ext_fields == {} and cmd.serialize_type is JSON  # the frame's type byte decides, not the field
    assert one(native_frame(b'{"code":1,"opaque":1,"language":"KOTLIN"}')).language == LanguageCode.OTHER
    assert one(native_frame(b'{"code":1,"opaque":1}')).language == LanguageCode.JAVA  # Java's default
    # Ext values of every JSON type, as fastjson's text; nulls left out; a bare key (fastjson reads those too).
    cmd = one(native_frame(b'{"code":1,"opaque":1,"extFields":{"i":-3,"f":1.50,"b":true,"n":null,"o":{"k":[1]},'
                           b'bare:"x"}}'))  # fmt: skip
    assert cmd.ext_fields == {"i": "-3", "f": "1.50", "b": "true", "o": '{"k":[1]}', "bare": "x"}


def test_ext_values_are_written_as_javas_text() -> None:
    ext = {"s": "x", "i": -5, "big": 2**40, "t": True, "f": False, "d": 0.5, "none": None, "code": ResponseCode.SUCCESS}
    assert java_ext_fields(ext) == {"s": "x", "i": "-5", "big": "1099511627776", "t": "true", "f": "false",
                                    "d": "0.5", "code": "0"}  # fmt: skip
    for st_ in (JSON, ROCKETMQ):
        cmd = RemotingCommand(code=0, opaque=1, ext_fields=ext, serialize_type=st_)
        assert one(encode_native(cmd)).ext_fields == java_ext_fields(ext)


def test_response_headers_go_out_as_strings_and_parse_back() -> None:
    request = one(native_frame(CPP_HEADER))
    response = RemotingCommand.response_to(
        request, ext_fields=h.SendMessageResponseHeader("0A00000100002A9F0000000000000000", 1, 42)
    )
    cmd = one(encode_native(response))
    assert cmd.ext_fields == {"msgId": "0A00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "42"}
    assert cmd.decode_header(h.SendMessageResponseHeader).queue_offset == 42


# --- the serialize type travels with the conversation -------------------------------------------------------


@pytest.mark.parametrize("serialize_type", [JSON, ROCKETMQ])
def test_a_response_goes_back_in_its_requests_serialize_type(serialize_type: SerializeType) -> None:
    request = one(encode_native(topic_request(serialize_type)))
    assert request.serialize_type is serialize_type
    assert request.body_dialect is BodyDialect.FASTJSON  # bodies are JSON under either header form
    response = RemotingCommand.response_to(request, ResponseCode.TOPIC_NOT_EXIST, remark="no route")
    assert response.serialize_type is serialize_type
    data = encode_native(response)
    assert data[4] == serialize_type  # the top byte of the header word
    back = one(data)
    assert (back.opaque, back.is_response, back.remark) == (7, True, "no route")


def test_a_command_without_a_native_form_goes_out_in_the_default() -> None:
    notify = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, oneway=True)
    assert notify.serialize_type is SerializeType.MSGPACK and notify.body_dialect is BodyDialect.MSGPACK
    assert encode_native(notify)[4] == JSON
    assert encode_native(notify, default_serialize_type=ROCKETMQ)[4] == ROCKETMQ
    assert one(encode_native(notify)).ext_fields == {"consumerGroup": "g"}


def test_msgpack_frames_still_decode_to_msgpack_commands() -> None:
    decoder = FrameDecoder()
    decoder.receive_data(encode(RemotingCommand.request(11, {"queueId": 1})))
    cmd = decoder.next_event()
    assert cmd is not None and cmd.serialize_type is SerializeType.MSGPACK
    assert RemotingCommand.response_to(cmd).serialize_type is SerializeType.MSGPACK


# --- hypothesis round trips ------------------------------------------------------------------------------------

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
ext_values = st.one_of(
    st.none(), st.text(max_size=20), st.integers(-(2**63), 2**63), st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)  # fmt: skip
ext_maps = st.dictionaries(st.text(max_size=12), ext_values, max_size=6)
remarks = st.none() | st.text(max_size=40)
bodies = st.none() | st.binary(max_size=64)
languages = st.sampled_from(list(LanguageCode)) | st.integers(0, 255)
# In a JSON header a language is its name, or its ordinal where it has none: one past 4.9.7's enum fastjson cannot
# read (json_header_fields), so a round trip takes the known ones only
json_languages = st.sampled_from(list(LanguageCode))


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType) -> RemotingCommand:
    small = serialize_type is ROCKETMQ  # code and version are shorts in the binary header
    return RemotingCommand(
        code=draw(INT16 if small else INT32), language=draw(languages if small else json_languages),
        version=draw(INT16 if small else INT32),
        opaque=draw(INT32), flag=draw(INT32), remark=draw(remarks), ext_fields=draw(ext_maps), body=draw(bodies),
        serialize_type=serialize_type,
    )  # fmt: skip


def expected_after_round_trip(cmd: RemotingCommand) -> RemotingCommand:
    ext: dict[str, object] = dict(java_ext_fields(cmd.ext_fields))
    remark = cmd.remark
    if cmd.serialize_type is ROCKETMQ:  # a length of 0 reads as null (RocketMQSerializable.readStr)
        ext = {k: v for k, v in ext.items() if k and v}
        remark = remark or None
    return RemotingCommand(int(cmd.code), int(cmd.language), cmd.version, cmd.opaque, cmd.flag, remark, ext,
                           cmd.body or None, cmd.serialize_type)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(cmd=commands(JSON))
def test_json_header_frames_round_trip(cmd: RemotingCommand) -> None:
    assert one(encode_native(cmd)) == expected_after_round_trip(cmd)


@settings(max_examples=300, deadline=None)
@given(cmd=commands(ROCKETMQ))
def test_rocketmq_header_frames_round_trip(cmd: RemotingCommand) -> None:
    assert one(encode_native(cmd)) == expected_after_round_trip(cmd)


@settings(max_examples=200, deadline=None)
@given(cmd=commands(JSON))
def test_json_headers_are_json_that_any_parser_reads(cmd: RemotingCommand) -> None:
    # What we write must parse with a strict standard parser too (the C++ client's jsoncpp, ali-ons' JSON2).
    obj = json.loads(encode_json_header(cmd))
    assert list(obj) == sorted(obj)  # fastjson's field order
    assert obj["opaque"] == cmd.opaque and obj["serializeTypeCurrentRPC"] == "JSON"
    assert obj.get("extFields", {}) == java_ext_fields(cmd.ext_fields)


# Every character, the ones the two JSON writers treat differently above all (controls, U+007F-U+009F, lone
# surrogates, backslashes before a u).
any_text = st.text(st.characters(blacklist_categories=()) | st.sampled_from('\\u"\x00\x1f\x7f\x9f\ud800\udfff\n'),
                   max_size=12)
odd_values = st.one_of(
    ext_values, any_text, st.sampled_from([LanguageCode.JAVA, ResponseCode.SUCCESS, 1.5, float("nan"), b"x", None]),
)  # fmt: skip


@st.composite
def any_commands(draw: st.DrawFn) -> RemotingCommand:
    """Commands the reference writes and ones it refuses: enums, out-of-range ints, bad remarks and ext values."""
    ints = INT32 | st.integers(-(2**40), 2**40) | st.sampled_from([RequestCode.SEND_MESSAGE_V2, True])
    return RemotingCommand(
        code=draw(ints), language=draw(languages | st.integers(-(2**33), 2**33)), version=draw(ints),
        opaque=draw(ints), flag=draw(ints), remark=draw(st.none() | any_text | st.sampled_from([5, b"r"])),
        ext_fields=draw(st.dictionaries(any_text | st.sampled_from([1, None]), odd_values, max_size=5)),
        serialize_type=JSON,
    )  # fmt: skip


def _outcome(encode_header, cmd: RemotingCommand) -> object:
    try:
        return encode_header(cmd)
    except (TypeError, ValueError) as e:
        return type(e)


@settings(max_examples=1000, deadline=None)
@given(cmd=any_commands())
def test_the_fast_json_header_writer_agrees_with_the_reference(cmd: RemotingCommand) -> None:
    assert _outcome(encode_json_header_fast, cmd) == _outcome(encode_json_header, cmd)
    assert _outcome(encode_json_header_fast_py, cmd) == _outcome(encode_json_header, cmd)


def test_the_fast_json_header_writer_falls_back_where_the_c_writer_differs() -> None:
    for text in ("tab\tok", "bell\x07", "del\x7f", "c1\x85", "lone\ud800", "back\\u0041", "ü€🚀"):
        cmd = RemotingCommand(10, opaque=1, remark=text, ext_fields={text: text}, serialize_type=JSON)
        assert encode_json_header_fast(cmd) == encode_json_header(cmd)
    assert b'"remark":"\\u001F"' in encode_json_header_fast(RemotingCommand(10, remark="\x1f"))  # json: \u001f
