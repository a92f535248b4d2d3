"""Dispatch's reference and its fast twin (reput_fast_twin.py) do the same (hypothesis).

Random traffic (topics, queues, tags, keys and message ids anywhere among the properties, delayed messages,
prepared, committed and rolled-back transactional records, batches that make runs of one queue and one shape,
IPv6 hosts, enough bytes to roll commit-log files) is put into one commit log, which is then copied: one store
dispatches it record by record through its dispatchers (check_message_and_return_size, DispatchRequest), the
other with the fast twin. Both must write the same consume-queue entries and the same index files, find the same
offsets by each key, and make the same listener calls in the same order.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common import MessageExtBrokerInner, pack_host
from pocketmq.common.constants import (
    BORNHOST_V6_FLAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from pocketmq.common.record_layout import record_length
from pocketmq.storage import DefaultMessageStore
from pocketmq.storage.dispatch_request import DispatchRequest

from .conftest import COMMIT_LOG_FILE_SIZE, cq_dir, read_cq_entries, small_config

V4_HOST = pack_host("10.0.0.7", 53112)
V6_HOST = pack_host("fe80::1", 53112)
# (a retry topic past 127 characters: stored as a message version 2 record, dispatched one at a time)
TOPICS = ("TopicA", "TopicB", "Tx", "%RETRY%" + "G" * 60 + "_" + "T" * 100)
TEXT = st.text(st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)), max_size=12)


@st.composite
def messages(
    draw: st.DrawFn, topic: str | None = None, queue_id: int | None = None, single: bool = True,
) -> MessageExtBrokerInner:
    props: dict[str, str] = {}
    # Properties in a random order: the fast twin looks for TAGS, KEYS and UNIQ_KEY wherever they stand.
    for name in draw(st.permutations(("TAGS", "KEYS", "UNIQ_KEY", "custom", "a"))):
        if draw(st.booleans()):
            props[name] = draw(st.sampled_from(["", "k1 k2", "TagA", "x" * 40])) if name != "UNIQ_KEY" else\
                draw(st.text("0123456789ABCDEF", min_size=0, max_size=32))
    if single and draw(st.integers(0, 9)) == 0:
        props["DELAY"] = draw(st.sampled_from(["1", "3", "0", "x"]))
    if draw(st.integers(0, 9)) == 0:
        props["custom"] = draw(TEXT)
    sys_flag = 0
    if single and draw(st.integers(0, 5)) == 0:
        sys_flag = draw(st.sampled_from([TRANSACTION_PREPARED_TYPE, TRANSACTION_COMMIT_TYPE,
                                         TRANSACTION_ROLLBACK_TYPE]))
    return MessageExtBrokerInner(
        topic=topic or draw(st.sampled_from(TOPICS)), body=b"b" * draw(st.sampled_from([0, 7, 100, 700])),
                   properties=props, queue_id=draw(st.integers(0, 3)) if queue_id is None else queue_id,
                   sys_flag=sys_flag, born_timestamp=1_700_000_000_000,
                   born_host=V6_HOST if draw(st.integers(0, 7)) == 0 else V4_HOST)


@st.composite
def batches(draw: st.DrawFn) -> list[MessageExtBrokerInner]:
    topic, queue_id = draw(st.sampled_from(TOPICS)), draw(st.integers(0, 3))
    one = draw(messages(topic, queue_id, single=False))
    if draw(st.booleans()):  # one shape: a run the twin decodes with one iter_unpack
        # (no more than one commit-log file holds, which the log refuses: 70 records of the long topic with an
        # IPv6 host and the largest body are 65660 bytes)
        props = sum(len(k) + len(v.encode()) + 2 for k, v in one.properties.items())
        size = record_length(BORNHOST_V6_FLAG, len(one.body), len(topic.encode()) + 1, props)
        n = min(draw(st.integers(2, 70)), (COMMIT_LOG_FILE_SIZE - 8) // size)
        return [MessageExtBrokerInner(topic, one.body, dict(one.properties), queue_id, born_host=one.born_host)
                for _ in range(n)]
    return draw(st.lists(messages(topic, queue_id, single=False), min_size=2, max_size=20))


TRAFFIC = st.lists(st.one_of(messages(), batches()), min_size=1, max_size=40)


def _dispatched(root: Path, per_record: bool, listener: bool, indexed: bool, swap: dict[bytes, bytes] | None = None):
    """What dispatch of the commit log under ``root`` writes; ``swap``: bytes replaced in the log after recovery."""
    store = DefaultMessageStore(small_config(root, message_index_enable=indexed))
    store.load()
    for old, new in (swap or {}).items():
        for mf in store.commit_log.mapped_file_queue.files:
            while (at := mf.mm.find(old)) >= 0:
                mf.mm[at:at + len(new)] = new
    calls: list[tuple] = []
    if listener:
        store.message_arriving_listener = lambda *args: calls.append((*args[:5], bytes(args[5])))
    store.reput_service.per_record = per_record
    try:
        store.reput_service.do_reput()
        assert store.reput_service.reput_from_offset == store.commit_log.get_max_offset()
        # (The twin opens the queue of a prepared record, the reference does not: an empty queue has no file.)
        queues = {key: read_cq_entries(root, *key) for key in store.consume_queue_table
                  if os.path.isdir(cq_dir(root, *key))}
        index_dir = root / "index"
        found = [(index_dir / name).read_bytes() for name in sorted(os.listdir(index_dir))]\
            if index_dir.is_dir() else []
        keys = {}
        if indexed:
            for topic in TOPICS + ("SCHEDULE_TOPIC_XXXX",):
                for key in ("k1", "k2", "", "0", "ABC"):
                    keys[topic, key] = store.index_service.query_offset(topic, key, 1000, 0, 2**62)[0]
        return queues, found, keys, calls, store.checkpoint.logics_msg_timestamp
    finally:
        store.shutdown()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(traffic=TRAFFIC, listener=st.booleans(), indexed=st.booleans())
def test_the_fast_twin_dispatches_what_the_reference_does(tmp_path_factory, traffic, listener, indexed) -> None:
    root = tmp_path_factory.mktemp("twins")
    writer = DefaultMessageStore(small_config(root / "reference", message_index_enable=indexed))
    writer.load()
    try:
        for put in traffic:
            result = writer.commit_log.put_messages(put) if isinstance(put, list) else\
                writer.commit_log.put_message(put)
            assert result.status.name == "PUT_OK", result
    finally:
        writer.shutdown()
    shutil.copytree(root / "reference" / "commitlog", root / "twin" / "commitlog")
    reference = _dispatched(root / "reference", True, listener, indexed)
    twin = _dispatched(root / "twin", False, listener, indexed)
    assert twin[0] == reference[0]  # consume-queue entries
    assert twin[1] == reference[1]  # index files, byte for byte
    assert twin[2] == reference[2]  # what each key finds
    assert twin[3] == reference[3]  # listener calls, in order
    assert twin[4] == reference[4]  # the checkpoint's logics timestamp
    assert sum(len(e) for e in reference[0].values()) == sum(
        1 if isinstance(p, MessageExtBrokerInner) and not p.sys_flag & TRANSACTION_PREPARED_TYPE else
        len(p) if isinstance(p, list) else 0 for p in traffic)
    if listener:
        assert len(reference[3]) == sum(len(p) if isinstance(p, list) else 1 for p in traffic)


def test_an_added_dispatcher_sees_every_record_before_the_listener(tmp_path) -> None:
    store = DefaultMessageStore(small_config(tmp_path))
    store.load()
    seen: list[object] = []

    class Recorder:
        def dispatch(self, request: DispatchRequest) -> None:
            seen.append(request)

    store.reput_service.add_dispatcher(Recorder())
    store.message_arriving_listener = lambda *args: seen.append(args[:3])
    try:
        store.commit_log.put_message(MessageExtBrokerInner("TopicA", b"one", {"TAGS": "T", "KEYS": "k"}, queue_id=1))
        store.commit_log.put_messages([MessageExtBrokerInner(
            "TopicA", b"two", queue_id=2), MessageExtBrokerInner("TopicA", b"three", queue_id=2)])
        store.reput_service.do_reput()
        requests = seen[0::2]
        assert all(isinstance(r, DispatchRequest) for r in requests)
        assert [(r.topic, r.queue_id, r.consume_queue_offset, r.keys) for r in requests] == [  # type: ignore[attr-defined]
            ("TopicA", 1, 0, b"k"), ("TopicA", 2, 0, None), ("TopicA", 2, 1, None)]
        assert seen[1::2] == [("TopicA", 1, 1), ("TopicA", 2, 1), ("TopicA", 2, 2)]
        assert store.get_max_offset_in_queue("TopicA", 2) == 2
    finally:
        store.shutdown()


def test_the_twins_skip_the_same_records_whose_topic_a_put_refuses(tmp_path) -> None:
    """Records whose topic a put would refuse, in the middle of runs of one queue, made from records with a
    stand-in topic of the same length (the store wrote those): both twins go past them alike, make no path of them
    (``../``), and dispatch everything around them (tests/storage/test_recovery_topics.py, on real files)."""
    swap = {b"Placeholder01": b"../../Escaped", b"%RETRY%" + b"p" * 156: b"%RETRY%../../" + b"q" * 150}
    stand_ins = [old.decode() for old in swap]
    writer = DefaultMessageStore(small_config(tmp_path / "reference"))
    writer.load()
    try:
        for i in range(6):
            batch = [MessageExtBrokerInner("TopicA", b"b" * 7, {"TAGS": "TagA", "KEYS": f"k{i}"}, queue_id=1)
                     for _ in range(3)]
            assert writer.commit_log.put_messages(batch).status.name == "PUT_OK"
            one = MessageExtBrokerInner(stand_ins[i % 2] if i % 3 else TOPICS[3], b"b" * 7, {"TAGS": "TagA"},
                                        queue_id=1)  # (the second stand-in: a version 2 record)
            assert writer.commit_log.put_message(one).status.name == "PUT_OK"
    finally:
        writer.shutdown()
    shutil.copytree(tmp_path / "reference" / "commitlog", tmp_path / "twin" / "commitlog")
    reference = _dispatched(tmp_path / "reference", True, True, True, swap)
    twin = _dispatched(tmp_path / "twin", False, True, True, swap)
    assert twin == reference
    assert sorted(os.listdir(tmp_path)) == ["reference", "twin"]
    assert {key: len(entries) for key, entries in reference[0].items()} == {("TopicA", 1): 18, (TOPICS[3], 1): 2}
    assert len(reference[3]) == 20  # (the listener hears of no skipped record)
