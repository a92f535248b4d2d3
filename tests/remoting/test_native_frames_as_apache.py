"""What tests/apache/test_differential_fuzz_frames.py found pocketmq answering otherwise than Apache RocketMQ 4.9.7,
each case here as 4.9.7 answers it: a JSON header's fields read as fastjson reads them into RemotingCommand
(json_header_fields), a binary header's lengths read as RocketMQSerializable reads them, a malformed native frame
closed without an answer (NettyDecoder), and a send whose properties hold a lone surrogate stored as Java stores
it (the surrogate written as '?')."""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pocketmq.embedded import EmbeddedCluster
from pocketmq.remoting.codes import LanguageCode, RequestCode
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.errors import MalformedFrame
from pocketmq.remoting.native_codec import decode_native_frames
from pocketmq.remoting.remoting_serializable import decode_json_header, decode_json_header_fast
from pocketmq.remoting.rocketmq_serializable import decode_rocketmq_header, decode_rocketmq_header_fast
from pocketmq.remoting.transport import parse_address

GUARD = 5.0
BASE = b'"extFields":{"topic":"T"},"flag":0,"language":"JAVA","serializeTypeCurrentRPC":"JSON","version":409'


def both(text: bytes) -> tuple[object, object]:
    """The command (or the error) of the reference reader and of the fast one, which must agree."""
    out: list[object] = []
    for read in (decode_json_header, decode_json_header_fast):
        try:
            cmd = read(text)
            out.append((cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields))
        except MalformedFrame as e:
            out.append(("malformed", e.reason.split(" from ")[0]))
    assert out[0] == out[1]
    return out[0], out[1]


@pytest.mark.parametrize(
    ("fields", "code", "opaque", "flag"),
    [
        (b'"code":true,"opaque":4', 1, 4, 0),  # a boolean is 1 or 0
        (b'"code":105.5,"opaque":4.9', 105, 4, 0),  # a fraction truncated
        (b'"code":"105.00","opaque":"1,004"', 105, 1004, 0),  # parseInt, after commas and trailing zeros
        (b'"code":"","opaque":4,"flag":null', 0, 4, 0),  # "" and null leave the default
        (b'"opaque":4,"flag":2.0', 0, 4, 2),  # no code: 0 (answered "request type 0 not supported")
    ],
)
def test_int_fields_are_cast_as_fastjson_casts_them(fields: bytes, code: int, opaque: int, flag: int) -> None:
    (cmd, _) = both(b"{" + BASE + b"," + fields + b"}")
    assert cmd[0] == code and cmd[3] == opaque and cmd[4] == flag  # type: ignore[index]


def test_a_header_without_an_opaque_takes_the_next_of_a_counter() -> None:
    first, second = decode_json_header(b'{"code":105}'), decode_json_header(b'{"code":105,"opaque":null}')
    assert second.opaque == first.opaque + 1  # Java's requestId: an answer under it is one no client waits for


@pytest.mark.parametrize(
    ("fields", "what"),
    [
        (b'"code":{},"opaque":4', "'code'"),
        (b'"code":" 105","opaque":4', "'code'"),  # parseInt refuses the space
        (b'"code":105,"opaque":[4]', "'opaque'"),
        (b'"code":105,"opaque":99999999999', "'opaque'"),
        (b'"code":105,"opaque":4,"language":13', "'language'"),  # past 4.9.7's LanguageCode
        (b'"code":105,"opaque":4,"language":true', "'language'"),
        (b'"code":105,"opaque":4,"serializeTypeCurrentRPC":[]', "'serializeTypeCurrentRPC'"),
        (b'"code":105,"opaque":4,"body":true', "'body'"),
        (b'"code":105,"opaque":4,"body":"a\\u0100b"', "'body'"),  # past its base64 decoder's table
        (b'"code":105,"opaque":4,"extFields":1', "'extFields'"),
        (b'"code":"x","code":105,"opaque":4', "'code'"),  # each occurrence of a key is read, in order
        (b'"extFields":"x","code":105,"opaque":4', "'extFields'"),
    ],
)
def test_what_fastjson_cannot_read_is_malformed(fields: bytes, what: str) -> None:
    (result, _) = both(b"{" + fields + b"}")
    assert result == ("malformed", f"fastjson cannot read {what}")


def test_what_fastjson_reads_of_other_types() -> None:
    (cmd, _) = both(b'{"code":105,"opaque":4,"remark":[1],"language":"KOTLIN","serializeTypeCurrentRPC":"XYZ",'
                    b'"body":"eA==","extFields":{"a":1.50,"b":{"c":true},"d":null},"extFields":{"e":false}}')
    assert cmd == (105, LanguageCode.OTHER, 0, 4, 0, "[1]", {"e": "false"})  # the last extFields read stands
    (cmd, _) = both(b'{"code":105,"opaque":4,"extFields":{"a":1.50,"b":{"c":true},"d":null},"code":106}')
    assert cmd == (106, LanguageCode.JAVA, 0, 4, 0, None, {"a": "1.50", "b": '{"c":true}'})


@pytest.mark.parametrize("tail", [b"\x00", b"\n\x00\x1f\x7f "])
def test_control_characters_after_the_header_are_skipped(tail: bytes) -> None:
    (cmd, _) = both(b'{"code":105,"opaque":4}' + tail)
    assert cmd[0] == 105  # type: ignore[index]
    assert both(b'{"code":105,"opaque":4}' + tail + b"x")[0][0] == "malformed"  # type: ignore[index]


def binary(remark_len: int = 0, ext_len: int | None = None, ext: bytes = b"", trailing: bytes = b"") -> bytes:
    fixed = struct.pack(">hBhiii", 105, 0, 409, 5, 0, remark_len)
    return fixed + struct.pack(">i", len(ext) if ext_len is None else ext_len) + ext + trailing


TOPIC_ENTRY = b"\x00\x05topic\x00\x00\x00\x01T"


@pytest.mark.parametrize(
    ("header", "ext"),
    [
        (binary(ext_len=-1, trailing=TOPIC_ENTRY), {}),  # a length of 0 or less: no ext fields at all
        (binary(ext_len=0, trailing=TOPIC_ENTRY), {}),
        (binary(ext_len=1, ext=b"\x00\x01k\x00\x00\x00\x01v"), {"k": "v"}),  # past the block: read all the same
        (binary(ext=TOPIC_ENTRY, trailing=b"junk"), {"topic": "T"}),
    ],
)
def test_binary_ext_lengths_are_read_as_4_9_7_reads_them(header: bytes, ext: dict[str, str]) -> None:
    for read in (decode_rocketmq_header, decode_rocketmq_header_fast):
        assert read(header).ext_fields == ext


@pytest.mark.parametrize(
    "header",
    [binary(remark_len=-1), binary(ext_len=30, ext=TOPIC_ENTRY), binary(ext=b"\xff\xff" + TOPIC_ENTRY[2:]),
     binary(ext_len=1, ext=TOPIC_ENTRY)],  # (a key or value longer than the ext block)
)
def test_binary_reads_past_the_header_or_negative_lengths_are_malformed(header: bytes) -> None:
    for read in (decode_rocketmq_header, decode_rocketmq_header_fast):
        with pytest.raises(MalformedFrame):
            read(header)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[EmbeddedCluster]:
    async with EmbeddedCluster(tmp_path / "store") as c:
        yield c


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body


async def test_a_malformed_native_frame_is_closed_without_an_answer(cluster: EmbeddedCluster) -> None:
    reader, writer = await asyncio.open_connection(*parse_address(cluster.broker_addr))
    try:
        # opaque and flag readable: pocketmq's msgpack frames get SYSTEM_ERROR then; RocketMQ's decoder answers none
        writer.write(json_frame(b'{"code":105,"opaque":4,"flag":0,"extFields":1}'))
        assert await asyncio.wait_for(reader.read(), GUARD) == b""
    finally:
        writer.close()


async def test_a_lone_surrogate_in_a_sent_property_is_stored_as_java_stores_it(
    cluster: EmbeddedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    assert await cluster.wait_routed("TBW102")
    ext = (b'{"a":"pg","b":"TBW102","c":"TBW102","d":"4","e":"0","f":"0","g":"0","h":"0",'
           b'"i":"TAGS\\u0001TagA\\u0002p\\u0001x\\ud800\\u0002","k":"false","m":"false"}')
    header = b'{"code":310,"extFields":' + ext + b',"flag":0,"language":"JAVA","opaque":7,"version":409}'
    reader, writer = await asyncio.open_connection(*parse_address(cluster.broker_addr))
    try:
        with caplog.at_level(logging.WARNING):
            writer.write(json_frame(header, b"body"))
            prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
            (answer,) = decode_native_frames(prefix + await reader.readexactly(int.from_bytes(prefix, "big")))
        assert answer.code == C.SUCCESS, answer.remark
        assert not [r for r in caplog.records if r.exc_info]
        pull = json_frame(b'{"code":%d,"extFields":{"consumerGroup":"g","topic":"TBW102","queueId":"%s",'
                          b'"queueOffset":"0","maxMsgNums":"1","sysFlag":"4","expressionType":"TAG","commitOffset":"0",'
                          b'"suspendTimeoutMillis":"0","subscription":"*","subVersion":"0"},"flag":0,"opaque":8}'
                          % (RequestCode.PULL_MESSAGE, str(answer.ext_fields["queueId"]).encode()))
        for _ in range(100):  # until the message is dispatched to its queue
            writer.write(pull)
            prefix = await asyncio.wait_for(reader.readexactly(4), GUARD)
            (pulled,) = decode_native_frames(prefix + await reader.readexactly(int.from_bytes(prefix, "big")))
            if pulled.code == C.SUCCESS:
                break
            await asyncio.sleep(0.05)
        assert pulled.code == C.SUCCESS and pulled.body is not None
        assert b"p\x01x?\x02" in pulled.body  # String.getBytes(UTF_8) writes a lone surrogate as '?'
    finally:
        writer.close()
