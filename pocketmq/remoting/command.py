"""RemotingCommand: one request or response, independent of how it is framed."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .body import decode_body, encode_body
from .codes import FLAG_ONEWAY, FLAG_RESPONSE, VERSION, BodyDialect, LanguageCode, ResponseCode, SerializeType

if TYPE_CHECKING:
    from .header_codec import CommandHeader

H = TypeVar("H", bound="CommandHeader")
B = TypeVar("B")

# Opaques are Java ints on the wire, so stay within 1..2**31-1. itertools.count is atomic under the GIL, which
# makes the counter safe to share between threads and event loops in one process.
_OPAQUE_MAX = 0x7FFFFFFF
_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    return (next(_opaque_counter) - 1) % _OPAQUE_MAX + 1


ExtFields = dict[str, object]


def _ext(ext_fields: Mapping[str, object] | CommandHeader | None) -> ExtFields:
    if ext_fields is None:
        return {}
    to_ext = getattr(ext_fields, "to_ext", None)
    if to_ext is not None:
        ext: ExtFields = to_ext()
        return ext
    return {k: v for k, v in ext_fields.items() if v is not None}  # type: ignore[union-attr]


@dataclass(slots=True, repr=False)
class RemotingCommand:
    """RocketMQ's RemotingCommand: one request or response, however it is framed."""

    code: int
    language: int = int(LanguageCode.PYTHON)
    version: int = VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    # Header map (RocketMQ's extFields). Values are msgpack scalars: str, int, bool, float; a native frame's are
    # all str (Java's HashMap<String,String>), which header_codec.py parses the way Java does.
    ext_fields: ExtFields = field(default_factory=dict)
    body: bytes | None = None
    # RocketMQ's serializeTypeCurrentRPC: the form the command came in, set by the decoder; a response built with
    # response_to takes its request's, so it goes back in the form (and its body in the dialect) the peer used.
    serialize_type: SerializeType = SerializeType.MSGPACK

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: Mapping[str, object] | CommandHeader | None = None,
        body: bytes | None = None,
        oneway: bool = False,
    ) -> RemotingCommand:
        """A request with a fresh opaque. ``ext_fields`` may be a dict or a header dataclass."""
        return cls(
            code=code,
            opaque=next_opaque(),
            flag=FLAG_ONEWAY if oneway else 0,
            ext_fields=_ext(ext_fields),
            body=body,
        )

    @classmethod
    def response(
        cls,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: Mapping[str, object] | CommandHeader | None = None,
        body: bytes | None = None,
        opaque: int = 0,
    ) -> RemotingCommand:
        """A response. A server returning it from a handler fills in ``opaque`` from the request."""
        return cls(
            code=code,
            opaque=opaque,
            flag=FLAG_RESPONSE,
            remark=remark,
            ext_fields=_ext(ext_fields),
            body=body,
        )

    @classmethod
    def response_to(
        cls,
        request: RemotingCommand,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        ext_fields: Mapping[str, object] | CommandHeader | None = None,
        body: bytes | None = None,
    ) -> RemotingCommand:
        # (built here, not through response(): every request a server answers comes this way)
        return cls(code=code, opaque=request.opaque, flag=FLAG_RESPONSE, remark=remark, ext_fields=_ext(ext_fields),
                   body=body, serialize_type=request.serialize_type)

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)

    @property
    def body_dialect(self) -> BodyDialect:
        """The dialect of this command's body: msgpack on pocketmq's frames, fastjson's JSON on native ones
        (whichever header form they use)."""
        return BodyDialect.MSGPACK if self.serialize_type == SerializeType.MSGPACK else BodyDialect.FASTJSON

    def decode_header(self, header_cls: type[H]) -> H:
        """Parse ``ext_fields`` into ``header_cls``; raises HeaderError."""
        return header_cls.from_ext(self.ext_fields)

    def decode_body(self, cls: type[B] | None = None) -> Any:
        """This command's body in its dialect (``body.decode_body``); with ``cls`` a ``cls`` instance. Raises
        BodyError."""
        return decode_body(self.body, cls, self.body_dialect)

    def encode_body(self, obj: object) -> bytes:
        """``obj`` (a body class, or plain maps and lists) in this command's body dialect: what its response, or
        anything else sent in the same conversation, carries. A processor stays one implementation for both wire
        protocols: ``RemotingCommand.response_to(request, body=request.encode_body(route))``."""
        return encode_body(obj, self.body_dialect)

    def __repr__(self) -> str:
        # Bodies can be megabytes (pull results); print only their size.
        kind = "response" if self.is_response else ("oneway" if self.is_oneway else "request")
        body = "None" if self.body is None else f"<{len(self.body)} bytes>"
        st = self.serialize_type
        form = "" if st == SerializeType.MSGPACK else f" serialize_type={getattr(st, 'name', st)}"
        return (
            f"RemotingCommand({kind} code={int(self.code)} opaque={self.opaque} flag={self.flag} "
            f"language={int(self.language)} version={self.version} remark={self.remark!r} "
            f"ext_fields={self.ext_fields!r} body={body}{form})"
        )
