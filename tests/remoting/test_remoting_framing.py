"""framing.LengthPrefixedDecoder, the frame splitting both decoders share: what it holds (buffered, partial_frame)
at every point of a stream, and the limits, checked for the msgpack and the native decoder alike."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pocketmq.remoting.codec import FrameDecoder, encode
from pocketmq.remoting.codes import RequestCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.errors import FrameTooLarge, MalformedFrame
from pocketmq.remoting.framing import LengthPrefixedDecoder
from pocketmq.remoting.native_codec import NativeFrameDecoder, encode_native
from pocketmq.remoting.wire_protocol import SniffingDecoder

DECODERS = {"msgpack": (FrameDecoder, encode), "native": (NativeFrameDecoder, encode_native)}


def command(i: int, body_size: int = 5) -> RemotingCommand:
    return RemotingCommand(RequestCode.SEND_MESSAGE_V2, opaque=i, ext_fields={"b": "T", "e": str(i)},
                           body=b"x" * body_size, serialize_type=SerializeType.JSON)


@pytest.mark.parametrize("name", DECODERS)
def test_partial_frame_is_true_exactly_between_frame_boundaries(name: str) -> None:
    decoder_type, enc = DECODERS[name]
    frames = [enc(command(i, body_size=i * 3)) for i in range(1, 4)]
    stream = b"".join(frames)
    boundaries = set(itertools.accumulate(len(f) for f in frames)) | {0}
    for cut in range(len(stream) + 1):
        decoder = decoder_type()
        assert isinstance(decoder, LengthPrefixedDecoder)
        decoder.receive_data(stream[:cut])
        assert decoder.partial_frame is (cut not in boundaries)  # also before the complete frames are taken
        assert decoder.buffered == cut
        taken = list(decoder)
        assert decoder.partial_frame is (cut not in boundaries)
        assert decoder.buffered == cut - max(b for b in boundaries if b <= cut)
        decoder.receive_data(stream[cut:])
        assert [c.opaque for c in taken + list(decoder)] == [1, 2, 3]
        assert not decoder.partial_frame and decoder.buffered == 0


@given(sizes=st.lists(st.integers(0, 300), min_size=1, max_size=6), cuts=st.lists(st.integers(0, 2000), max_size=5))
def test_any_chunking_gives_the_same_commands_to_both_decoders(sizes: list[int], cuts: list[int]) -> None:
    for decoder_type, enc in DECODERS.values():
        stream = b"".join(enc(command(i, size)) for i, size in enumerate(sizes, 1))
        decoder = decoder_type()
        out: list[RemotingCommand] = []
        points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
        for a, b in itertools.pairwise(points):
            decoder.receive_data(stream[a:b])
            out += decoder
        assert [(c.opaque, c.body or b"") for c in out] == [(i, b"x" * s) for i, s in enumerate(sizes, 1)]
        assert not decoder.partial_frame


@pytest.mark.parametrize("name", DECODERS)
def test_the_limit_is_the_same_and_fatal_for_both(name: str) -> None:
    decoder_type, enc = DECODERS[name]
    frame = enc(command(1))
    decoder = decoder_type(max_frame_size=len(frame) - 4)  # exactly this frame's length word: accepted
    decoder.receive_data(frame)
    assert [c.opaque for c in decoder] == [1]
    decoder = decoder_type(max_frame_size=len(frame) - 5)
    decoder.receive_data(frame[:4])  # the length word alone says it
    for _ in range(2):
        with pytest.raises(FrameTooLarge):
            decoder.next_event()
    assert decoder.partial_frame


@pytest.mark.parametrize("name", DECODERS)
def test_a_malformed_frame_is_consumed_by_the_shared_splitting(name: str) -> None:
    decoder_type, enc = DECODERS[name]
    junk = b"\x00\x00\x00\x02\x7f\x7f"  # a frame of two bytes neither codec reads
    decoder = decoder_type()
    decoder.receive_data(junk + enc(command(9)))
    with pytest.raises(MalformedFrame):
        decoder.next_event()
    assert [c.opaque for c in decoder] == [9]


def test_the_sniffing_decoder_tells_a_partial_frame_before_and_after_deciding() -> None:
    frame = encode_native(command(4))
    sniffer = SniffingDecoder()
    assert not sniffer.partial_frame
    sniffer.receive_data(frame[:3])  # not yet decided
    assert sniffer.partial_frame and sniffer.next_event() is None
    sniffer.receive_data(frame[3:-1])
    assert sniffer.next_event() is None and sniffer.partial_frame  # decided, one byte short
    sniffer.receive_data(frame[-1:])
    assert sniffer.next_event().opaque == 4
    assert not sniffer.partial_frame
