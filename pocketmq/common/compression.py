"""Bounded zlib inflation (UtilAll.uncompress with a ceiling): the one way compressed bytes from a peer become
bytes, whether a REGISTER_BROKER body or a message body with SYSFLAG's COMPRESSED_FLAG.

``zlib.decompress`` inflates whatever it is given: 1 MB of deflated zeros is 1 GiB, and a 16 MiB frame could
carry ~16 GiB, allocated and inflated in one call that holds the event loop for seconds. ``inflate`` asks zlib for
at most ``limit + 1`` bytes, so it never allocates more than the limit (plus one byte) and stops as soon as the
output would pass it. The default limit is the frame limit: nothing legitimate inflates to more than a frame may
carry (a producer compresses bodies of at most maxMessageSize, 4 MiB).
"""

from __future__ import annotations

import zlib

from .constants import COMPRESSION_TYPE_MASK, COMPRESSION_TYPE_NAMES, ZLIB_TYPE

# RocketMQ's frame limit (com.rocketmq.remoting.frameMaxLength; remoting.codec.DEFAULT_MAX_FRAME_SIZE).
DEFAULT_INFLATE_LIMIT = 16 * 1024 * 1024


class InflateError(ValueError):
    """Bytes that are not a complete zlib stream, or that inflate to more than the limit."""


def inflate(data: bytes | bytearray | memoryview, limit: int = DEFAULT_INFLATE_LIMIT) -> bytes:
    """The inflated bytes of the zlib stream ``data``; InflateError past ``limit`` bytes or for bad data.

    Bytes after the end of the stream are ignored, as ``zlib.decompress`` and Java's InflaterInputStream do."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as e:
        raise InflateError(f"not zlib data ({e})") from None
    if len(out) > limit:
        raise InflateError(f"inflates to more than {limit} bytes ({len(data)} compressed)")
    if not inflater.eof:
        raise InflateError("truncated zlib data")
    return out


def inflate_body(body: bytes | bytearray | memoryview, sys_flag: int, limit: int = DEFAULT_INFLATE_LIMIT) -> bytes:
    """A message body with COMPRESSED_FLAG, inflated; InflateError as ``inflate``, and for the other codecs of
    RocketMQ 5's compression-type bits, named (no LZ4 or ZSTD codec is a dependency of pocketmq: tried as zlib,
    their bytes only gave "incorrect header check")."""
    codec = sys_flag & COMPRESSION_TYPE_MASK
    if codec not in (0, ZLIB_TYPE):
        name = COMPRESSION_TYPE_NAMES.get(codec, f"compression type {codec:#x}")
        raise InflateError(f"{name}-compressed (sysFlag compression type {codec:#x}); pocketmq inflates zlib only")
    return inflate(body, limit)
