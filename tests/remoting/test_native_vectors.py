"""The recorded native frames (tests/remoting/vectors/) agree with their manifest, read by hand from the bytes:
the codec's byte-exact tests rest on both, so a truncated or re-recorded file must not slip through."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).parent / "vectors"
MANIFEST: list[dict[str, Any]] = json.loads((VECTORS / "vectors.json").read_text(encoding="utf-8"))


def test_every_recorded_frame_is_in_the_manifest_once() -> None:
    files = sorted(p.name for p in VECTORS.glob("*.bin"))
    named = [entry["file"] for entry in MANIFEST]
    assert sorted(named) == files
    assert len(set(named)) == len(named)


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_frame_matches_its_manifest_entry(entry: dict[str, Any]) -> None:
    frame = (VECTORS / entry["file"]).read_bytes()
    length, word = struct.unpack_from(">ii", frame)
    assert length == len(frame) - 4 == entry["frame_length"] - 4
    serialize_type, header_length = word >> 24, word & 0xFFFFFF
    assert (serialize_type, header_length) == (entry["serialize_type"], entry["header_length"]) == (0, header_length)
    header_text = frame[8 : 8 + header_length].decode("utf-8")
    assert header_text.endswith("\n") == entry["header_ends_with_newline"]
    header = json.loads(header_text)
    assert header == entry["header"]
    assert list(header) == list(entry["header"])  # key order as the client wrote it
    body = frame[8 + header_length :]
    assert len(body) == entry["body_length"]
    if "body_inflated_text" in entry:
        assert zlib.decompress(body).decode("utf-8") == entry["body_inflated_text"]
    else:
        assert body.decode("utf-8") == entry.get("body_text", "")


def test_the_clients_differ_where_the_protocol_notes_say() -> None:
    """native-protocol.md §2: C++ sends language CPP, version 63, a remark and a newline; ali-ons JAVA, 121,
    neither; neither sends serializeTypeCurrentRPC."""
    for entry in MANIFEST:
        header = entry["header"]
        assert "serializeTypeCurrentRPC" not in header
        if entry["file"].startswith("cpp-"):
            assert (header["language"], header["version"], header["remark"]) == ("CPP", 63, "")
            assert entry["header_ends_with_newline"]
            assert {"AccessKey", "OnsChannel", "Signature"} <= set(header["extFields"])
        else:
            assert (header["language"], header["version"]) == ("JAVA", 121)
            assert "remark" not in header and not entry["header_ends_with_newline"]
