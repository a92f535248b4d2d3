"""RegisterBrokerBody: the REGISTER_BROKER body a broker sends its name servers, and its CRC-32."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

from pocketmq.common.compression import DEFAULT_INFLATE_LIMIT, InflateError, inflate

from .body_codec import Reader, decode_body, encode_body
from .codes import BodyDialect
from .errors import BodyError
from .register_broker_native import decode_compressed, encode_compressed
from .topic_config import DataVersion, TopicConfigSerializeWrapper


@dataclass(slots=True)
class RegisterBrokerBody:
    """REGISTER_BROKER body. With the header's ``compressed`` set, the msgpack bytes are zlib-deflated; on a
    native connection the body is RocketMQ's (JSON, or its compressed form: register_broker_native)."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    # None: the filter servers held stay as they are (a compressed body's filter-server JSON of null, which 4.9.7
    # reads as no list)
    filter_server_list: list[str] | None = field(default_factory=list)
    # pocketmq's delta registration (see RegisterBrokerRequestHeader): topics deleted since the base version.
    deleted_topics: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "topicConfigSerializeWrapper": self.topic_config_serialize_wrapper.to_dict(),
            "filterServerList": list(self.filter_server_list or ()),
        }
        if self.deleted_topics:
            d["deletedTopics"] = list(self.deleted_topics)
        return d

    @classmethod
    def from_dict(cls, obj: object, path: str = "") -> RegisterBrokerBody:
        r = Reader(obj, path)
        w = r.map("topicConfigSerializeWrapper", None)
        return cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper.from_dict(
                w, r.at("topicConfigSerializeWrapper")
            )
            if w is not None
            else TopicConfigSerializeWrapper(data_version=DataVersion(0, 0)),
            filter_server_list=r.str_list("filterServerList", []),
            deleted_topics=r.str_list("deletedTopics", []),
        )

    def encode(self, compress: bool = False, dialect: BodyDialect = BodyDialect.MSGPACK) -> bytes:
        """msgpack (deflated when ``compress``), or for a RocketMQ name server (``dialect`` FASTJSON) the JSON of
        RegisterBrokerBody, or with ``compress`` RocketMQ's compressed form (register_broker_native)."""
        if dialect == BodyDialect.MSGPACK:
            data = encode_body(self)
            return zlib.compress(data) if compress else data
        if not compress:
            return encode_body(self, dialect)
        w = self.topic_config_serialize_wrapper
        topics = [
            (t.topic_name, t.read_queue_nums, t.write_queue_nums, t.perm, t.topic_filter_type)
            for t in w.topic_config_table.values()
        ]
        return encode_compressed(w.data_version.to_dict(), topics, self.filter_server_list or [])

    @classmethod
    def decode(
        cls,
        data: bytes | None,
        compressed: bool = False,
        inflate_limit: int = DEFAULT_INFLATE_LIMIT,
        dialect: BodyDialect = BodyDialect.MSGPACK,
    ) -> RegisterBrokerBody:
        """The body of a REGISTER_BROKER in ``dialect`` (a RocketMQ broker's: JSON, or its own compressed form);
        a compressed one inflates to at most ``inflate_limit`` bytes (a BodyError beyond), so a small deflated
        bomb costs no more than a frame."""
        if data is None:
            # No body: an empty table with version 0, as RocketMQ's name server assumes.
            return cls(TopicConfigSerializeWrapper(data_version=DataVersion(0, 0)))
        if dialect != BodyDialect.MSGPACK:
            if compressed:
                fields = decode_compressed(data, inflate_limit)
                unpacked = cls.from_dict(fields)
                if fields["filterServerList"] is None:
                    unpacked.filter_server_list = None
                return unpacked
            native: RegisterBrokerBody = decode_body(data, cls, dialect)
            return native
        if compressed:
            try:
                data = inflate(data, inflate_limit)
            except InflateError as e:
                raise BodyError("", f"compressed body: {e}") from None
        body: RegisterBrokerBody = decode_body(data, cls)
        return body


def body_crc32(data: bytes | None) -> int:
    """RocketMQ's UtilAll.crc32: CRC-32 masked to a non-negative Java int (0 for an empty body)."""
    if not data:
        return 0
    return zlib.crc32(data) & 0x7FFFFFFF
