"""Sans-IO framing of RemotingCommands: bytes in, commands out (no sockets, no event loop).

A frame is a 4-byte big-endian length N followed by N bytes holding one msgpack map::

    {"code": int, "language": int, "version": int, "opaque": int, "flag": int,
     "remark": str, "extFields": {str: str|int|bool|float}, "body": bin}

``remark``, ``extFields`` and ``body`` are left out when empty/None. ``code`` and ``opaque`` are required on
decode; ``flag``/``version`` default to 0 and ``language`` to OTHER; unknown keys are ignored so peers may add
fields.
"""

from __future__ import annotations

import threading

import msgpack

from .codes import LanguageCode
from .command import RemotingCommand
from .errors import FrameTooLarge, MalformedFrame
from .framing import DEFAULT_MAX_FRAME_SIZE, LENGTH, LengthPrefixedDecoder

__all__ = ["DEFAULT_MAX_FRAME_SIZE", "FrameDecoder", "decode_frames", "encode"]

_LEN = LENGTH
# packb() builds a Packer per call; one per thread (a Packer is not thread-safe) is built once.
_packers = threading.local()
_SCALARS = (str, int, float)  # bool is an int subclass
_BODY_KEY = msgpack.packb("body")
_LANGUAGE_OTHER = int(LanguageCode.OTHER)


def _bin_header(n: int) -> bytes:
    if n < 0x100:
        return b"\xc4" + n.to_bytes(1, "big")
    if n < 0x10000:
        return b"\xc5" + n.to_bytes(2, "big")
    return b"\xc6" + n.to_bytes(4, "big")


def encode(cmd: RemotingCommand, max_frame_size: int | None = None) -> bytes:
    """One complete frame for ``cmd``.

    Raises TypeError for header values that are not msgpack scalars and FrameTooLarge when the frame would
    exceed ``max_frame_size`` (the peer would drop the connection).
    """
    head: dict[str, object] = {
        "code": int(cmd.code),
        "language": int(cmd.language),
        "version": int(cmd.version),
        "opaque": int(cmd.opaque),
        "flag": int(cmd.flag),
    }
    if cmd.remark is not None:
        if not isinstance(cmd.remark, str):
            raise TypeError(f"remark must be str, not {type(cmd.remark).__name__}")
        head["remark"] = cmd.remark
    ext = cmd.ext_fields
    if ext:
        has_none = False
        for k, v in ext.items():
            t = type(v)
            if t is not str and t is not int:  # the exact types first: every header field of every frame
                if v is None:
                    has_none = True
                elif not isinstance(v, _SCALARS):
                    raise TypeError(f"ext field {k!r} must be str, int, bool or float, not {type(v).__name__}")
            if type(k) is not str and not isinstance(k, str):
                raise TypeError(f"ext field name must be str, not {type(k).__name__}: {k!r}")
        if has_none:
            ext = {k: v for k, v in ext.items() if v is not None}
        if ext:
            head["extFields"] = ext
    try:
        packer = _packers.packer
    except AttributeError:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    packed: bytes = packer.pack(head)  # (a failed pack leaves the packer empty: msgpack resets it)
    body = cmd.body
    if body is None:
        size = len(packed)
        if max_frame_size is not None and size > max_frame_size:
            raise FrameTooLarge(size, max_frame_size)
        return _LEN.pack(size) + packed
    if not isinstance(body, bytes | bytearray):
        raise TypeError(f"body must be bytes, not {type(body).__name__}")
    # The map has at most 7 entries, so it is a fixmap whose first byte (0x80 | n) holds the count.
    # Appending the body entry by hand instead of packing it saves one copy of a possibly large body.
    bin_header = _bin_header(len(body))
    size = len(packed) + len(_BODY_KEY) + len(bin_header) + len(body)
    if max_frame_size is not None and size > max_frame_size:
        raise FrameTooLarge(size, max_frame_size)
    return b"".join(
        (_LEN.pack(size), bytes((packed[0] + 1,)), memoryview(packed)[1:], _BODY_KEY, bin_header, body)
    )


def encode_reference(cmd: RemotingCommand, max_frame_size: int | None = None) -> bytes:
    """``encode`` one rule at a time, its readable twin: the same bytes and the same errors (a property test in
    tests/remoting/test_remoting_codec_reference.py holds the two together)."""
    head: dict[str, object] = {name: int(getattr(cmd, name)) for name in ("code", "language", "version", "opaque",
                                                                           "flag")}
    if cmd.remark is not None:
        if not isinstance(cmd.remark, str):
            raise TypeError(f"remark must be str, not {type(cmd.remark).__name__}")
        head["remark"] = cmd.remark
    for k, v in (cmd.ext_fields or {}).items():
        if v is not None and not isinstance(v, _SCALARS):
            raise TypeError(f"ext field {k!r} must be str, int, bool or float, not {type(v).__name__}")
        if not isinstance(k, str):
            raise TypeError(f"ext field name must be str, not {type(k).__name__}: {k!r}")
    ext = {k: v for k, v in (cmd.ext_fields or {}).items() if v is not None}  # None: the field is absent
    if ext:
        head["extFields"] = ext
    packed = msgpack.packb(head, use_bin_type=True)
    if cmd.body is not None:
        if not isinstance(cmd.body, bytes | bytearray):
            raise TypeError(f"body must be bytes, not {type(cmd.body).__name__}")
        packed = msgpack.packb({**head, "body": bytes(cmd.body)}, use_bin_type=True)
    if max_frame_size is not None and len(packed) > max_frame_size:
        raise FrameTooLarge(len(packed), max_frame_size)
    return _LEN.pack(len(packed)) + packed


class FrameDecoder(LengthPrefixedDecoder):
    """Incremental decoder of msgpack frames: feed bytes with ``receive_data``, take commands with ``next_event``
    (None: more data needed). Any split of the stream works. ``next_event`` raises FrameTooLarge (fatal: every
    later call raises it again) or MalformedFrame (the bad frame is consumed, so decoding may go on, although the
    transport closes the connection); the framing is ``framing.LengthPrefixedDecoder``'s."""

    __slots__ = ()

    @staticmethod
    def decode_frame(frame: memoryview) -> RemotingCommand:
        try:
            # strict_map_key=False: a map with a non-str key should still let us read the opaque and report a
            # precise error, instead of failing the whole frame.
            obj = msgpack.unpackb(frame, raw=False, strict_map_key=False)
        except Exception as e:  # msgpack raises many types: ValueError, ExtraData, FormatError, TypeError...
            detail = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            raise MalformedFrame(f"undecodable msgpack ({detail})") from None
        return _to_command(obj)


def decode_frames(data: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> list[RemotingCommand]:
    """All complete frames in ``data`` (a convenience for tests and tools)."""
    decoder = FrameDecoder(max_frame_size)
    decoder.receive_data(data)
    return list(decoder)


def _to_command(obj: object) -> RemotingCommand:
    if not isinstance(obj, dict):
        raise MalformedFrame(f"payload is a {type(obj).__name__}, not a map")
    opaque = obj.get("opaque")
    flag = obj.get("flag", 0)
    readable_opaque = opaque if type(opaque) is int else None
    readable_flag = flag if type(flag) is int else None
    # (no helper closure made per frame: this runs for every frame, the errors almost never)
    where = (readable_opaque, readable_flag)
    code = obj.get("code")
    if type(code) is not int:
        raise MalformedFrame(f"'code' must be an int, got {type(code).__name__}", *where)
    if readable_opaque is None:
        raise MalformedFrame(f"'opaque' must be an int, got {type(opaque).__name__}", *where)
    if readable_flag is None:
        raise MalformedFrame(f"'flag' must be an int, got {type(flag).__name__}", *where)
    language = obj.get("language", _LANGUAGE_OTHER)
    if type(language) is not int:
        raise MalformedFrame(f"'language' must be an int, got {type(language).__name__}", *where)
    version = obj.get("version", 0)
    if type(version) is not int:
        raise MalformedFrame(f"'version' must be an int, got {type(version).__name__}", *where)
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        raise MalformedFrame(f"'remark' must be a str, got {type(remark).__name__}", *where)
    body = obj.get("body")
    if body is not None and type(body) is not bytes:
        raise MalformedFrame(f"'body' must be bin, got {type(body).__name__}", *where)
    ext = obj.get("extFields")
    if ext is None:
        ext = {}
    elif type(ext) is not dict:
        raise MalformedFrame(f"'extFields' must be a map, got {type(ext).__name__}", *where)
    else:
        drop = None
        for k, v in ext.items():
            if type(k) is not str:
                raise MalformedFrame(f"'extFields' key {k!r} is not a str", *where)
            t = type(v)
            if t is str or t is int:
                continue
            if v is None:
                drop = [*(drop or ()), k]
            elif not isinstance(v, _SCALARS):
                raise MalformedFrame(f"'extFields' value of {k!r} is a {type(v).__name__}, not a scalar", *where)
        if drop:
            for k in drop:
                del ext[k]
    # Positional: code, language, version, opaque, flag, remark, ext_fields, body.
    return RemotingCommand(code, language, version, readable_opaque, readable_flag, remark, ext, body)


def to_command_reference(obj: object) -> RemotingCommand:
    """``_to_command`` one rule at a time, its readable twin: the same command and the same errors."""
    if not isinstance(obj, dict):
        raise MalformedFrame(f"payload is a {type(obj).__name__}, not a map")
    opaque, flag = obj.get("opaque"), obj.get("flag", 0)
    where = (opaque if type(opaque) is int else None, flag if type(flag) is int else None)  # for the error

    def field(name: str, default: object, allowed: tuple[type, ...], what: str) -> object:
        value = obj.get(name, default)
        if type(value) not in allowed:  # exact types: a bool is not an int here
            raise MalformedFrame(f"'{name}' must be {what}, got {type(value).__name__}", *where)
        return value

    code = field("code", None, (int,), "an int")
    field("opaque", None, (int,), "an int")
    field("flag", 0, (int,), "an int")
    language = field("language", _LANGUAGE_OTHER, (int,), "an int")
    version = field("version", 0, (int,), "an int")
    remark = field("remark", None, (str, type(None)), "a str")
    body = field("body", None, (bytes, type(None)), "bin")
    ext = field("extFields", None, (dict, type(None)), "a map") or {}
    assert isinstance(ext, dict)
    for k, v in ext.items():
        if type(k) is not str:
            raise MalformedFrame(f"'extFields' key {k!r} is not a str", *where)
        if v is not None and not isinstance(v, _SCALARS):
            raise MalformedFrame(f"'extFields' value of {k!r} is a {type(v).__name__}, not a scalar", *where)
    fields = {k: v for k, v in ext.items() if v is not None}
    return RemotingCommand(code, language, version, where[0], where[1], remark, fields, body)  # type: ignore[arg-type]
