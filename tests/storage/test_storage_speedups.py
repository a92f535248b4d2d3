"""The dispatcher's C accelerator (``pocketmq/storage/_speedups.c``) is built, chosen unless
``POCKETMQ_NO_EXTENSIONS=1``, and indexes exactly as the Python reference does: the same tags code, the same
index-file bytes, the same header fields, whatever the properties hold (arbitrary bytes, separators inside values,
non-ASCII keys and tags, empty keys, many keys) and wherever the index file stands (new, nearly full, full,
colliding slots). Where the C answers None it must have written nothing, and the reference then does the record.

These tests load the module directly, so they test the C under ``POCKETMQ_NO_EXTENSIONS=1`` as well; a checkout
where it was not built fails them (``make`` builds it). tests/storage/test_dispatch_twins.py runs the whole
dispatcher, with the C where it is chosen, against the record-by-record reference."""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pocketmq.common.constants import TRANSACTION_ROLLBACK_TYPE
from pocketmq.storage import DefaultMessageStore, speedups
from pocketmq.storage.consume_queue import ConsumeQueue
from pocketmq.storage.index_service import IndexService

from .conftest import small_config

SOURCE = Path(speedups.__file__).with_name("_speedups.c")
_speedups = importlib.import_module("pocketmq.storage._speedups")  # (fails, as it should, when not built)
SLOTS, ENTRIES = 5, 24  # small: slots collide, files fill and roll within one example


def test_the_c_module_is_chosen_unless_switched_off(tmp_path: Path) -> None:
    assert hashlib.sha256(SOURCE.read_bytes()).hexdigest() == _speedups.SOURCE_HASH, "rebuild: make"
    service = IndexService(str(tmp_path), SLOTS, ENTRIES)
    if os.environ.get("POCKETMQ_NO_EXTENSIONS") == "1":
        assert speedups.speedups is None
        assert service.index_record is None
    else:
        assert speedups.speedups is _speedups
        assert service.index_record is _speedups.index_record


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store, for its dispatcher's _classify (the reference) and consume queues that name the topic."""
    store = DefaultMessageStore(small_config(tmp_path_factory.mktemp("reput")))
    store.load()
    yield store
    store.shutdown()


def _service(root: Path, c: bool) -> IndexService:
    service = IndexService(str(root), SLOTS, ENTRIES)
    service.load()
    service.index_record = _speedups.index_record if c else None
    return service


def _files(service: IndexService) -> list[bytes]:
    service.sync_header()
    return [bytes(f.mm) for f in service.files]


def _state(service: IndexService) -> list[tuple[int, ...]]:
    return [(f.index_count, f.hash_slot_count, f.begin_phy_offset, f.end_phy_offset, f.begin_timestamp,
             f.end_timestamp) for f in service.files]  # fmt: skip


NAMES = st.sampled_from([b"TAGS", b"KEYS", b"UNIQ_KEY", b"custom", b"XUNIQ_KEY", b"TAGSX", b""])
VALUES = st.one_of(
    st.sampled_from([b"", b"TagA", b"k1 k2", b" k1  k2 ", b"AC1F00010000", b"\xc3\xa9t\xc3\xa9", b"k\x01v", b"a\x02b"]),
    st.binary(max_size=12),
    st.text("0123456789ABCDEF ", max_size=40).map(str.encode),
)


@st.composite
def properties(draw: st.DrawFn) -> bytes:
    """Stored properties, mostly well formed (name \x01 value \x02 ...), sometimes anything at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=60))
    pairs = draw(st.lists(st.tuples(NAMES, VALUES), max_size=6))
    out = b"".join(name + b"\x01" + value + b"\x02" for name, value in pairs)
    return out[:-1] if out and draw(st.booleans()) else out


@st.composite
def records(draw: st.DrawFn) -> tuple[bytes, int, int]:
    return (draw(properties()), draw(st.sampled_from([0, TRANSACTION_ROLLBACK_TYPE])),
            draw(st.integers(0, 5_000)))


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(before=st.lists(st.text("0123456789ABCDEF", min_size=1, max_size=20), max_size=ENTRIES + 4),
       recs=st.lists(records(), min_size=1, max_size=8),
       topic=st.sampled_from(["Topic", "Tópico", "%RETRY%" + "G" * 60 + "_" + "T" * 100]),  # (the last: 168 chars)
       start_ts=st.sampled_from([0, 1, 1_700_000_000_000]))
@example(before=["A"] * 3, recs=[(b"UNIQ_KEY\x01" + b"k " * 30 + b"\x02KEYS\x01" + b"x " * 40, 0, 1)],
         topic="Topic", start_ts=1)  # more keys than the C takes, and than the file holds
@example(before=[], recs=[(b"TAGS\x01TagA\x02UNIQ_KEY\x01AC1F\x02", 0, 1)], topic="Topic", start_ts=5)  # a new file
def test_the_c_indexes_as_the_reference_does(store, tmp_path_factory, before, recs, topic, start_ts) -> None:
    root = tmp_path_factory.mktemp("index")
    # (A queue of its own: the store makes none for "Tópico", which it never writes; the index is fed its bytes.)
    service, cq = store.reput_service, ConsumeQueue(topic, 0, str(root / "consumequeue"), 1000)
    ref, c = _service(root / "reference", c=False), _service(root / "c", c=True)
    try:
        topic_b = topic.encode()
        phys = 1000
        for key in before:  # (the same entries in both, written by the Python)
            for s in (ref, c):
                s.build_index_raw(topic, topic_b, None, key.encode(), phys, start_ts + phys, 0)
            phys += 100
        for props, sys_flag, step in recs:
            phys += step
            ts = start_ts + 1_000 * phys
            expected = service._classify(cq, topic_b, props, phys, ts, sys_flag, ref)
            files, state = _files(c), _state(c)
            got = c.index_props(topic, topic_b, props, phys, ts, sys_flag)
            if got is None:  # not the C's: it wrote nothing, and the reference does the record
                assert (_files(c), _state(c)) == (files, state)
                got = service._classify(cq, topic_b, props, phys, ts, sys_flag, c)
            assert got == expected
            assert _state(c) == _state(ref)
            assert _files(c) == _files(ref)
    finally:
        for s in (ref, c):
            s.shutdown()


def test_the_c_takes_a_producers_records(tmp_path: Path) -> None:
    """What every client sends (a UNIQ_KEY, tags, some keys) is the C's: it must not leave them to the Python."""
    c = _service(tmp_path, c=True)
    try:
        c.build_index_raw("Topic", b"Topic", None, b"first", 10, 1_700_000_000_000, 0)  # (the file's first entry)
        props = b"TAGS\x01TagA\x02KEYS\x01order-1 order-2\x02UNIQ_KEY\x017F0000010A8E18B4AAC2\x02WAIT\x01true"
        assert c.index_props("Topic", b"Topic", props, 20, 1_700_000_001_000, 0) == hash_of("TagA")
        assert c.files[-1].index_count == 5  # (entry 0 unused, "first", then three keys)
        assert c.query_offset("Topic", "order-2", 10, 0, 2**62)[0] == [20]
        assert c.query_offset("Topic", "7F0000010A8E18B4AAC2", 10, 0, 2**62)[0] == [20]
    finally:
        c.shutdown()


def hash_of(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def test_bad_arguments_raise_instead_of_writing_out_of_bounds(tmp_path: Path) -> None:
    c = _service(tmp_path, c=True)
    try:
        c.build_index_raw("Topic", b"Topic", None, b"first", 10, 1, 0)
        f = c.files[-1]
        props = b"UNIQ_KEY\x01abc"
        with pytest.raises(ValueError, match="layout"):  # more entries than the mapping holds
            _speedups.index_record(f.mm, props, 7, SLOTS, ENTRIES * 100, f.entries_base, 2, 1, 20, 2)
        with pytest.raises(ValueError, match="layout"):  # slots running into the entries
            _speedups.index_record(f.mm, props, 7, SLOTS * 100, ENTRIES, f.entries_base, 2, 1, 20, 2)
        with pytest.raises(BufferError):  # (a read-only copy)
            _speedups.index_record(bytes(f.mm), props, 7, SLOTS, ENTRIES, f.entries_base, 2, 1, 20, 2)
        with pytest.raises(TypeError):
            _speedups.index_record(f.mm, "not bytes", 7, SLOTS, ENTRIES, f.entries_base, 2, 1, 20, 2)
        with pytest.raises(OverflowError):
            _speedups.index_record(f.mm, props, 2**70, SLOTS, ENTRIES, f.entries_base, 2, 1, 20, 2)
        assert _speedups.index_record(f.mm, props, -1, SLOTS, ENTRIES, f.entries_base, 2, 1, 20, 2) is None
    finally:
        c.shutdown()
