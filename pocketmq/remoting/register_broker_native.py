"""RegisterBrokerBody's compressed form as RocketMQ writes it (``RegisterBrokerBody.encode(true)``/``decode``).

RocketMQ's uncompressed REGISTER_BROKER body is the JSON of RegisterBrokerBody (``body.encode_body`` in the
fastjson dialect reads and writes it). With ``compressedRegister`` the body is a zlib stream (Java's
DeflaterOutputStream: a zlib header, not raw deflate) of length-prefixed parts, every length a big-endian int:

    len + DataVersion JSON
    count, then count x (len + TopicConfig.encode(): "name readQueueNums writeQueueNums perm topicFilterType")
    len + JSON array of filter server addresses
    (5.x brokers, request version >= V5_0_0 only) count, then count x (len + TopicQueueMappingInfo JSON)

What the text form leaves out is lost on the way, in RocketMQ too: ``topicSysFlag`` and ``order`` arrive as 0 and
false. 5.x writes the topic's attributes as a sixth, space-separated JSON field; 4.9.x's decoder accepts exactly
five fields (anything else leaves the topic nameless and the registration fails), so this module writes five and
reads five or more (attributes are not kept: pocketmq's name server has no use for them).
"""

from __future__ import annotations

import struct
import zlib

from pocketmq.common.compression import DEFAULT_INFLATE_LIMIT, InflateError, inflate
from pocketmq.common.java_numbers import INT_MAX, INT_MIN
from pocketmq.common.java_text import parse_integer

from . import fastjson
from .errors import BodyError

_INT = struct.Struct(">i")
TOPIC_FILTER_TYPES = frozenset({"SINGLE_TAG", "MULTI_TAG"})


def encode_compressed(data_version: dict[str, int], topics: list[tuple[str, int, int, int, str]],
                      filter_servers: list[str]) -> bytes:
    """The compressed body of ``topics`` as (name, readQueueNums, writeQueueNums, perm, topicFilterType), in
    4.9.x's layout (no queue-mapping section, which a 5.x name server reads only from a 5.x broker)."""
    parts: list[bytes] = []

    def put(blob: bytes) -> None:
        parts.append(_INT.pack(len(blob)))
        parts.append(blob)

    put(fastjson.dumps(data_version).encode("utf-8"))
    parts.append(_INT.pack(len(topics)))
    for name, read_nums, write_nums, perm, filter_type in topics:
        if " " in name:
            raise ValueError(f"topic name {name!r} has a space: the compressed form cannot carry it")
        put(f"{name} {read_nums} {write_nums} {perm} {filter_type}".encode())
    put(fastjson.dumps(list(filter_servers)).encode("utf-8"))
    # Deflater.BEST_COMPRESSION, as RocketMQ's broker.
    return zlib.compress(b"".join(parts), 9)


class _Cursor:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise BodyError(what, f"needs {n} bytes at {self.pos}, the inflated body has {len(self.data)}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int(self, what: str) -> int:
        value: int = _INT.unpack(self.take(4, what))[0]
        return value

    def blob(self, what: str) -> bytes:
        return self.take(self.int(what), what)


def decode_compressed(data: bytes, inflate_limit: int = DEFAULT_INFLATE_LIMIT) -> dict[str, object]:
    """The body as the dict RegisterBrokerBody.from_dict reads (``topicConfigSerializeWrapper``,
    ``filterServerList``), from RocketMQ's compressed form; inflates to at most ``inflate_limit`` bytes. A 5.x
    queue-mapping section after the filter servers is read past, not kept (pocketmq has no static topics)."""
    try:
        raw = inflate(data, inflate_limit)
    except InflateError as e:
        raise BodyError("", f"compressed body: {e}") from None
    cur = _Cursor(raw)
    try:
        version = fastjson.loads(cur.blob("dataVersion"))
    except fastjson.JsonSyntaxError as e:
        raise BodyError("dataVersion", f"undecodable JSON ({e})") from None
    count = cur.int("topicConfigTable")
    table: dict[str, object] = {}
    for i in range(count):
        at = f"topicConfigTable[{i}]"
        fields = cur.blob(at).decode("utf-8", "replace").split(" ")
        if len(fields) < 5 or fields[4] not in TOPIC_FILTER_TYPES:
            raise BodyError(at, f"expected 'name read write perm filterType', got {' '.join(fields)[:200]!r}")
        try:  # (Integer.parseInt: "1_0" or a number past the int's range is none)
            read_nums, write_nums, perm = (parse_integer(f, INT_MIN, INT_MAX) for f in fields[1:4])
        except ValueError:
            raise BodyError(at, f"queue numbers and perm must be integers: {fields[1:4]}") from None
        table[fields[0]] = fastjson.JsonObject(
            topicName=fields[0], readQueueNums=read_nums, writeQueueNums=write_nums, perm=perm,
            topicFilterType=fields[4],
        )
    servers = _filter_servers(cur.blob("filterServerList"))
    wrapper = fastjson.JsonObject(topicConfigTable=fastjson.JsonObject(table), dataVersion=version)
    return fastjson.JsonObject(topicConfigSerializeWrapper=wrapper, filterServerList=servers)


def _filter_servers(blob: bytes) -> list[str] | None:
    """The filter servers' JSON as 4.9.7 reads it (JSON.parseArray): a list; None (nothing to change) for
    ``null`` or no text; and text that is no array of strings read as none, an empty list, as 4.9.7 logs its
    exception and goes on with the registration."""
    text = blob.decode("utf-8", "replace")
    if not text.strip() or text.strip() == "null":
        return None
    try:
        servers = fastjson.loads(blob)
    except fastjson.JsonSyntaxError:
        return []
    if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
        return []
    return servers
