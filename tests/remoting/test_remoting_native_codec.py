"""RocketMQ's native frames: encode_native / NativeFrameDecoder, the JSON header and the ROCKETMQ binary header."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from pocketmq.remoting.errors import FrameError, FrameTooLarge, MalformedFrame
from pocketmq.remoting.native_codec import NativeFrameDecoder, decode_native_frames, encode_native
from pocketmq.remoting.remoting_serializable import (
    decode_json_header,
    decode_json_header_fast,
    encode_json_header,
    encode_json_header_fast,
    encode_json_header_fast_py,
    java_ext_fields,
)
from pocketmq.remoting.rocketmq_serializable import decode_rocketmq_header, encode_rocketmq_header

JSON, ROCKETMQ = SerializeType.JSON, SerializeType.ROCKETMQ


def native_frame(header: bytes, serialize_type: int = 0, body: bytes = b"") -> bytes:
    """A frame built by hand from native-protocol.md §1, independently of the encoder."""
    return struct.pack(">II", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


def one(data: bytes) -> RemotingCommand:
    (cmd,) = decode_native_frames(data)
    return cmd


def topic_request(serialize_type: SerializeType) -> RemotingCommand:
    return RemotingCommand(
        code=RequestCode.GET_ROUTEINFO_BY_TOPIC, language=LanguageCode.JAVA, version=409, opaque=7,
        ext_fields={"topic": "TopicTest"}, serialize_type=serialize_type,
    )  # fmt: skip


# --- byte-exact vectors ---------------------------------------------------------------------------------------

# native-protocol.md §2: Java's fastjson header of a GET_ROUTEINFO_BY_TOPIC request.
JAVA_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)


def test_json_frame_is_byte_for_byte_javas() -> None:
    assert len(JAVA_JSON_HEADER) == 0x83
    expected = b"\x00\x00\x00\x87" + b"\x00\x00\x00\x83" + JAVA_JSON_HEADER
    assert encode_native(topic_request(JSON)) == expected
    cmd = one(expected)
    assert cmd == topic_request(JSON)
    assert cmd.serialize_type is JSON and cmd.body is None


# The same command in RocketMQSerializable's layout (native-protocol.md §3), written out field by field.
ROCKETMQ_FRAME = bytes.fromhex(
    "0000002d"  # length: 4 + 41
    "01000029"  # serialize type 1, header length 41
    "0069" "00" "0199" "00000007" "00000000"  # code 105, JAVA, version 409, opaque 7, flag 0
    "00000000"  # no remark
    "00000014" "0005" "746f706963" "00000009" "546f70696354657374"  # ext: topic=TopicTest
)  # fmt: skip


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


@st.composite
def commands(draw: st.DrawFn, serialize_type: SerializeType) -> RemotingCommand:
    small = serialize_type is ROCKETMQ  # code and version are shorts in the binary header
    return RemotingCommand(
        code=draw(INT16 if small else INT32), language=draw(languages), version=draw(INT16 if small else INT32),
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


# --- incremental decoding --------------------------------------------------------------------------------------


def stream() -> tuple[bytes, list[RemotingCommand]]:
    cmds = [
        topic_request(JSON),
        RemotingCommand(code=11, opaque=8, remark="é", ext_fields={"k": "v"}, body=b"\x00\x01body",
                        serialize_type=ROCKETMQ),  # fmt: skip
        RemotingCommand(code=0, opaque=9, flag=FLAG_RESPONSE, body=b"x" * 40, serialize_type=JSON),
    ]
    return b"".join(encode_native(c) for c in cmds), cmds


def test_every_split_point_decodes_the_same_commands() -> None:
    data, cmds = stream()
    for cut in range(len(data) + 1):
        decoder = NativeFrameDecoder()
        decoder.receive_data(data[:cut])
        got = list(decoder)
        decoder.receive_data(data[cut:])
        got += list(decoder)
        assert got == cmds, cut
        assert decoder.buffered == 0


def test_byte_by_byte() -> None:
    data, cmds = stream()
    decoder = NativeFrameDecoder()
    got = []
    for i in range(len(data)):
        decoder.receive_data(data[i : i + 1])
        got += list(decoder)
    assert got == cmds


# --- malformed frames ------------------------------------------------------------------------------------------


def good() -> bytes:
    return encode_native(RemotingCommand(code=34, opaque=99, serialize_type=JSON))


def binary_header(remark_len: int = 0, remark: bytes = b"", ext: bytes = b"", ext_len: int | None = None) -> bytes:
    fixed = struct.pack(">hBhii", 34, 0, 409, 5, 0)  # code, language, version, opaque 5, flag
    ext_length = struct.pack(">i", len(ext) if ext_len is None else ext_len)
    return fixed + struct.pack(">i", remark_len) + remark + ext_length + ext


@pytest.mark.parametrize(
    ("frame", "fragment", "opaque"),
    [
        (native_frame(b'{"code":1,"opaque":1}', serialize_type=2), "serialize type 2", None),
        (native_frame(b"{}", serialize_type=0x8A), "serialize type 138", None),
        (struct.pack(">II", 4 + 2, 40) + b"{}", "header length 40 runs past", None),
        (struct.pack(">I", 3) + b"\x00\x00\x00", "no room for its header word", None),
        (struct.pack(">I", 0), "no room for its header word", None),
        (native_frame(b'{"code":1,"opaque":1', ), "undecodable JSON header", None),
        (native_frame(b""), "undecodable JSON header", None),
        (native_frame(b"\xff\xfe"), "undecodable JSON header", None),
        (native_frame(b"[1,2]"), "not an object", None),
        (native_frame(b'{"opaque":4}'), "'code'", 4),
        (native_frame(b'{"code":1}'), "'opaque'", None),
        (native_frame(b'{"code":1,"opaque":[4]}'), "'opaque'", None),
        (native_frame(b'{"code":1,"opaque":4,"flag":"x"}'), "'flag'", 4),
        (native_frame(b'{"code":2147483648,"opaque":4}'), "'code'", 4),
        (native_frame(b'{"code":1,"opaque":4,"language":[0]}'), "'language'", 4),
        (native_frame(b'{"code":1,"opaque":4,"version":true}'), "'version'", 4),
        (native_frame(b'{"code":1,"opaque":4,"remark":{"a":1}}'), "'remark'", 4),
        (native_frame(b'{"code":1,"opaque":4,"extFields":[1]}'), "'extFields'", 4),
        (native_frame(b"\x00\x22\x00\x01\x99\x00\x00\x00\x05", 1), "shorter than the minimum 21", 5),
        (native_frame(b"\x00\x22\x00", 1), "shorter than the minimum 21", None),
        (native_frame(binary_header(remark_len=100), 1), "remark length 100", 5),
        (native_frame(binary_header(remark_len=-1), 1), "remark length -1", 5),
        (native_frame(binary_header(ext_len=7), 1), "ext fields length 7", 5),
        (native_frame(binary_header(ext=b"\x00"), 1), "inside a key length", 5),
        (native_frame(binary_header(ext=b"\x00\x09key"), 1), "ext key length 9", 5),
        (native_frame(binary_header(ext=b"\xff\xffkey"), 1), "ext key length -1", 5),
        (native_frame(binary_header(ext=b"\x00\x01k\x00\x00\x00\x09v"), 1), "ext value length 9", 5),
    ],
)
def test_malformed_frames_are_reported_and_the_stream_stays_in_sync(
    frame: bytes, fragment: str, opaque: int | None
) -> None:
    decoder = NativeFrameDecoder()
    decoder.receive_data(frame + good() + good()[:5])
    with pytest.raises(MalformedFrame, match=fragment) as e:
        decoder.next_event()
    assert e.value.opaque == opaque
    # The bad frame was consumed: the next one decodes, and the partial one after it waits (the receive buffer
    # can be trimmed: no view of it outlived the error).
    cmd = decoder.next_event()
    assert cmd is not None and cmd.opaque == 99
    assert decoder.next_event() is None
    assert decoder.buffered == 5


def test_an_oversized_length_is_fatal() -> None:
    decoder = NativeFrameDecoder(max_frame_size=1024)
    decoder.receive_data(struct.pack(">I", 1025))
    with pytest.raises(FrameTooLarge) as e:
        decoder.next_event()
    assert isinstance(e.value, FrameError)
    decoder.receive_data(good())
    with pytest.raises(FrameTooLarge):  # the stream cannot be resynchronised
        decoder.next_event()
    limit = NativeFrameDecoder(max_frame_size=len(good()) - 4)  # a length equal to the limit is allowed
    limit.receive_data(good())
    assert limit.next_event() is not None


def test_the_default_limit_is_16_mib() -> None:
    decoder = NativeFrameDecoder()
    decoder.receive_data(struct.pack(">I", 16 * 1024 * 1024 + 1))
    with pytest.raises(FrameTooLarge):
        decoder.next_event()


def test_encoding_refuses_what_a_java_peer_would_drop() -> None:
    cmd = RemotingCommand(code=0, opaque=1, body=b"x" * 100, serialize_type=JSON)
    size = len(encode_native(cmd))
    assert len(encode_native(cmd, max_frame_size=size)) == size
    with pytest.raises(FrameTooLarge):  # Netty counts the length word too
        encode_native(cmd, max_frame_size=size - 1)
    with pytest.raises(ValueError, match="short"):
        encode_native(RemotingCommand(code=40000, opaque=1, serialize_type=ROCKETMQ))
    with pytest.raises(ValueError, match="byte"):
        encode_native(RemotingCommand(code=1, language=300, opaque=1, serialize_type=ROCKETMQ))
    with pytest.raises(ValueError, match="Java int"):
        encode_native(RemotingCommand(code=1, opaque=2**31, serialize_type=JSON))
    with pytest.raises(TypeError, match="'k'"):
        encode_native(RemotingCommand(code=1, opaque=1, ext_fields={"k": [1]}))
    with pytest.raises(TypeError, match="body"):
        encode_native(RemotingCommand(code=1, opaque=1, body="text"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a native serialize type"):
        encode_native(RemotingCommand(code=1, opaque=1), default_serialize_type=SerializeType.MSGPACK)


def test_header_functions_alone() -> None:
    cmd = topic_request(JSON)
    assert encode_json_header(cmd) == JAVA_JSON_HEADER
    assert decode_json_header(JAVA_JSON_HEADER) == cmd
    binary = encode_rocketmq_header(topic_request(ROCKETMQ))
    assert binary == ROCKETMQ_FRAME[8:]
    assert decode_rocketmq_header(binary) == topic_request(ROCKETMQ)
    # Bytes after the ext block are ignored, as Java ignores them.
    assert decode_rocketmq_header(binary + b"\x00\x01") == topic_request(ROCKETMQ)


_ODD = '{"code":%s,"extFields":%s,"flag":0,"language":"JAVA","opaque":%s,"version":409}'


@pytest.mark.parametrize("header", [
    _ODD % ("105", '{"topic":1e9999999999999999999}', "7"),  # past Decimal's exponent: InvalidOperation
    _ODD % ("1e9999999999999999999", '{"topic":"T"}', "7"),
    _ODD % ('"' + "1" * 5000 + '"', '{"topic":"T"}', "7"),  # past int()'s 4,300 digits: ValueError
    _ODD % ("105", '{"topic":"T"}', '"' + "1" * 5000 + '"'),
    _ODD % ("105", '{"a":' + "[" * 500 + "]" * 500 + "}", "7"),  # nested past what an ext value's text takes
])
def test_a_header_past_what_javas_numbers_or_nesting_take_is_a_malformed_frame(header: str) -> None:
    # Other exceptions got through: the transport logged a traceback for what is only bad input.
    data = header.encode()
    for decode in (decode_json_header, decode_json_header_fast):
        with pytest.raises(MalformedFrame, match="undecodable JSON header"):
            decode(data)
    decoder = NativeFrameDecoder()
    decoder.receive_data(struct.pack(">II", 4 + len(data), len(data)) + data)
    with pytest.raises(MalformedFrame):
        decoder.next_event()
