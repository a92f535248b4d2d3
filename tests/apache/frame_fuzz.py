"""Native frames built byte by byte for test_differential_fuzz_frames.py, and what a server does with one on a raw
socket: the answer (its class of code, its header form, whether it names the frame's opaque), then whether the
connection still answers a normal request, was closed, or said nothing.

A JSON header is kept as its entries' texts (``JsonHeader``), so that a value may be any JSON text, a key may come
twice, and bytes that are no UTF-8 may stand anywhere; a binary header (RocketMQ's ROCKETMQ form) as its fields,
any length word of which may lie."""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field

from pocketmq.remoting.codes import FLAG_RESPONSE, LanguageCode, RequestCode, SerializeType
from pocketmq.remoting.codes import ResponseCode as C
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import decode_native_frames, encode_native
from pocketmq.remoting.transport import parse_address

UNKNOWN_CODE = 9999  # no processor on either server: REQUEST_CODE_NOT_SUPPORTED, whatever the header holds else
FOLLOW_UP_OPAQUE = 0x7FFF_FFF0  # never one of a fuzzed frame's (the strategies' opaques are small)
LEAD_OPAQUE = 0x7FFF_FFE0  # a normal request's before the fuzzed frame: its answer is not the fuzzed frame's
SILENCE = 1.5  # seconds without an answer, nor a close, that count as "no answer"
SLOW_CLOSE = 10.0  # the same, when one server closed and the other seemed not to
GRACE = 0.3  # seconds the fuzzed frame's answer may come after the follow-up's (Apache answers from several pools)
NOT_THERE = {C.TOPIC_NOT_EXIST, C.PULL_NOT_FOUND, C.QUERY_NOT_FOUND, C.SUBSCRIPTION_NOT_EXIST,
             C.SUBSCRIPTION_GROUP_NOT_EXIST}


def code_class(code: int) -> str:
    if code == C.SUCCESS:
        return "ok"
    if code in NOT_THERE:
        return "not there"
    if code == C.REQUEST_CODE_NOT_SUPPORTED:
        return "not supported"
    return "refused"


def json_string(text: str) -> bytes:
    """``text`` as a JSON string, every character outside printable ASCII escaped (a lone surrogate too, which
    UTF-8 cannot hold: ``\\ud800``)."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}")
    out.append('"')
    return "".join(out).encode("ascii")


@dataclass
class JsonHeader:
    """A JSON header as its entries, each value the JSON text (bytes) written for it; ``ext`` the entries of
    extFields, written where the ``extFields`` entry stands (a text of its own replaces them)."""

    entries: list[tuple[str, bytes]]
    ext: list[tuple[bytes, bytes]] = field(default_factory=list)

    @classmethod
    def of(cls, code: int, ext: dict[str, str], opaque: int, flag: int = 0) -> JsonHeader:
        """What Java's fastjson writes for a request (fields sorted by name)."""
        entries = [("code", str(code).encode()), ("extFields", b""), ("flag", str(flag).encode()),
                   ("language", b'"JAVA"'), ("opaque", str(opaque).encode()),
                   ("serializeTypeCurrentRPC", b'"JSON"'), ("version", b"409")]
        return cls(entries, [(json_string(k), json_string(v)) for k, v in ext.items()])

    def set(self, name: str, text: bytes) -> None:
        self.entries = [(k, text if k == name else v) for k, v in self.entries]
        if name not in dict(self.entries):
            self.entries.append((name, text))

    def render(self) -> bytes:
        parts = []
        for k, v in self.entries:
            if k == "extFields" and not v:
                v = b"{" + b",".join(key + b":" + value for key, value in self.ext) + b"}"
            parts.append(json_string(k) + b":" + v)
        return b"{" + b",".join(parts) + b"}"


@dataclass
class BinaryHeader:
    """RocketMQ's binary header: each length word None when it tells the truth, else the number written."""

    code: int
    opaque: int
    flag: int = 0
    language: int = int(LanguageCode.JAVA)
    version: int = 409
    remark: bytes = b""
    ext: list[tuple[bytes, bytes, int | None, int | None]] = field(default_factory=list)  # key, value, their lengths
    remark_length: int | None = None
    ext_length: int | None = None
    trailing: bytes = b""

    @classmethod
    def of(cls, code: int, ext: dict[str, str], opaque: int, flag: int = 0) -> BinaryHeader:
        return cls(code, opaque, flag, ext=[(k.encode(), v.encode(), None, None) for k, v in ext.items()])

    def render(self) -> bytes:
        block = b"".join(struct.pack(">h", len(k) if kl is None else kl) + k
                         + struct.pack(">i", len(v) if vl is None else vl) + v for k, v, kl, vl in self.ext)
        remark_length = len(self.remark) if self.remark_length is None else self.remark_length
        ext_length = len(block) if self.ext_length is None else self.ext_length
        return b"".join((struct.pack(">hBhiii", self.code, self.language, self.version, self.opaque, self.flag,
                                     remark_length), self.remark, struct.pack(">i", ext_length), block, self.trailing))


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0, header_length: int | None = None,
          length: int | None = None) -> bytes:
    """A native frame; ``header_length`` and ``length`` the numbers its words say when they lie."""
    hl = len(header) if header_length is None else header_length
    n = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">I", n & 0xFFFFFFFF) + struct.pack(">I", (serialize_type << 24 | hl) & 0xFFFFFFFF) \
        + header + body


@dataclass(frozen=True)
class Sent:
    """What goes on the connection: ``data``, and whether it ends where its last frame ends (a follow-up request
    after it is then read as a frame of its own)."""

    data: bytes
    ends_a_frame: bool
    opaque: int | None
    what: str


@dataclass(frozen=True)
class Seen:
    answers: tuple[tuple[str, int, bool], ...]  # each answer to the fuzzed bytes: class, header form, opaque echoed
    after: str  # "answers" (the follow-up, on the same connection), "closed", "silent"
    remarks: tuple[str | None, ...] = field(default=(), compare=False)


def follow_up(target: str) -> bytes:
    """A normal request both answer alike: a code the broker does not know; a KV config the name server has not
    (4.9.7's name server does not answer a code it does not know)."""
    if target == "namesrv":
        cmd = RemotingCommand(RequestCode.GET_KV_CONFIG, opaque=FOLLOW_UP_OPAQUE, serialize_type=SerializeType.JSON,
                              ext_fields={"namespace": "FuzzFollowUp", "key": "k"})
    else:
        cmd = RemotingCommand(UNKNOWN_CODE, opaque=FOLLOW_UP_OPAQUE, serialize_type=SerializeType.JSON)
    return encode_native(cmd)


async def _read_frame(reader: asyncio.StreamReader) -> tuple[int, RemotingCommand]:
    prefix = await reader.readexactly(4)
    data = prefix + await reader.readexactly(int.from_bytes(prefix, "big"))
    (cmd,) = decode_native_frames(data)
    return data[4], cmd


async def observe(addr: str, target: str, sent: Sent, grace: float = GRACE, silence: float = SILENCE) -> Seen:
    """What the server at ``addr`` does with ``sent`` on a connection of its own (a follow-up request after it when
    it ends a frame); ``grace``: how long an answer to ``sent`` is waited for once the follow-up's came."""
    reader, writer = await asyncio.open_connection(*parse_address(addr))
    loop = asyncio.get_running_loop()
    answers: list[tuple[str, int, bool]] = []
    remarks: list[str | None] = []
    after = "silent"
    try:
        writer.write(sent.data + (follow_up(target) if sent.ends_a_frame else b""))
        deadline = loop.time() + silence
        while (left := deadline - loop.time()) > 0:
            try:
                form, cmd = await asyncio.wait_for(_read_frame(reader), left)
            except TimeoutError:
                break
            except (asyncio.IncompleteReadError, ConnectionError):
                after = "closed"
                break
            if cmd.opaque == LEAD_OPAQUE and cmd.flag & FLAG_RESPONSE:
                continue
            if cmd.opaque == FOLLOW_UP_OPAQUE and cmd.flag & FLAG_RESPONSE:
                after = "answers"
                if answers:
                    break
                deadline = min(deadline, loop.time() + grace)
            else:
                answers.append((code_class(cmd.code), form, cmd.opaque == sent.opaque))
                remarks.append(cmd.remark)
                if after == "answers":
                    break
    finally:
        writer.close()
    return Seen(tuple(answers), after, tuple(remarks))


async def still_serving(addr: str, target: str) -> bool:
    """Whether the server answers a normal request on a new connection."""
    seen = await observe(addr, target, Sent(b"", True, None, "nothing"), 0.0)
    return seen.after == "answers"
