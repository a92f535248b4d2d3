"""The frames and header vectors test_remoting_native_codec.py and test_remoting_native_frames.py decode and
compare against (native-protocol.md §1-§3)."""

from __future__ import annotations

import struct

from pocketmq.remoting.codes import LanguageCode, RequestCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import decode_native_frames

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


# native-protocol.md §2: Java's fastjson header of a GET_ROUTEINFO_BY_TOPIC request.
JAVA_JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":7,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)


# The same command in RocketMQSerializable's layout (native-protocol.md §3), written out field by field.
ROCKETMQ_FRAME = bytes.fromhex(
    "0000002d"  # length: 4 + 41
    "01000029"  # serialize type 1, header length 41
    "0069" "00" "0199" "00000007" "00000000"  # code 105, JAVA, version 409, opaque 7, flag 0
    "00000000"  # no remark
    "00000014" "0005" "746f706963" "00000009" "546f70696354657374"  # ext: topic=TopicTest
)  # fmt: skip
