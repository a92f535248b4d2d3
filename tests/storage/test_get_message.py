"""get_message (reference §7.2 table): statuses, next_begin_offset, transfer limits, raw bodies."""

from __future__ import annotations

from pocketmq.common import MessageExtBrokerInner, decode_all
from pocketmq.common.java_hash import tags_code
from pocketmq.storage import GetMessageStatus, TagsFilter

from .conftest import msg, put_ok, read_cq_entries

S = GetMessageStatus


def _raw_records(store, store_root, topic, qid, start, count):
    return b"".join(store.select_one_message_by_offset(p, s)
                    for p, s, _ in read_cq_entries(store_root, topic, qid)[start:start + count])


def test_found_returns_raw_records_byte_identical_to_the_commit_log(store, store_root):
    for i in range(20):
        put_ok(store, msg(queue_id=1, body=f"payload-{i}".encode() * (i + 1), TAGS="TagA", KEYS=f"k{i}"))
        put_ok(store, msg(queue_id=2, body=b"interleaved"))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 1, 3, 10)
    assert res.status == S.FOUND
    assert res.message_count == 10 and res.next_begin_offset == 13
    assert (res.min_offset, res.max_offset) == (0, 20)
    assert res.body == _raw_records(store, store_root, "TopicA", 1, 3, 10)
    assert res.buffer_total_size == len(res.body)
    msgs = decode_all(res.body)
    assert [m.body for m in msgs] == [f"payload-{i}".encode() * (i + 1) for i in range(3, 13)]
    assert [m.queue_offset for m in msgs] == list(range(3, 13))


def test_result_lists_the_queue_offset_of_every_returned_message(store):
    for i in range(10):
        put_ok(store, msg(body=str(i).encode(), TAGS="TagA" if i % 2 else "TagB"))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 0, 2, 5)
    assert res.queue_offsets == [2, 3, 4, 5, 6]
    res = store.get_message("g", "TopicA", 0, 0, 32, TagsFilter({tags_code("TagA")}))
    assert res.queue_offsets == [1, 3, 5, 7, 9]


def test_at_most_32_messages_per_call(store):
    for i in range(50):
        put_ok(store, msg(body=str(i).encode()))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 0, 0, 64)
    assert res.status == S.FOUND and res.message_count == 32 and res.next_begin_offset == 32
    assert len(decode_all(res.body)) == 32
    res = store.get_message("g", "TopicA", 0, 32, 64)
    assert res.message_count == 18 and res.next_begin_offset == 50
    res = store.get_message("g", "TopicA", 0, 0, 7)
    assert res.message_count == 7 and res.next_begin_offset == 7


def test_at_most_256_kib_per_call_but_the_first_message_always(stores, store_root):
    store = stores.open(mapped_file_size_commit_log=1024 * 1024, max_message_size=1024 * 1024)
    big = put_ok(store, msg(body=b"B" * (300 * 1024)))  # alone larger than 256 KiB
    for i in range(5):
        put_ok(store, msg(body=bytes([i]) * (100 * 1024)))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 0, 0, 32)
    assert res.status == S.FOUND and res.message_count == 1 and res.next_begin_offset == 1
    assert len(res.body) == big.wrote_bytes > 256 * 1024
    res = store.get_message("g", "TopicA", 0, 1, 32)
    assert res.message_count == 2 and res.next_begin_offset == 3  # a third would pass 256 KiB
    assert res.buffer_total_size <= 256 * 1024
    assert res.body == _raw_records(store, store_root, "TopicA", 0, 1, 2)


def test_tags_filter_and_no_matched_message(store):
    for i in range(12):
        put_ok(store, msg(body=str(i).encode(), TAGS="TagA" if i % 3 else "TagB"))
    for _ in range(5):
        put_ok(store, msg(queue_id=1, body=b"a", TAGS="TagA"))
    put_ok(store, msg(queue_id=2, body=b"untagged"))
    assert store.wait_dispatched()
    only_b = TagsFilter({tags_code("TagB")})
    res = store.get_message("g", "TopicA", 0, 0, 32, only_b)
    assert res.status == S.FOUND
    assert [m.body for m in decode_all(res.body)] == [b"0", b"3", b"6", b"9"]
    assert res.next_begin_offset == 12  # every scanned entry, matched or not
    res = store.get_message("g", "TopicA", 0, 0, 2, only_b)
    assert [m.body for m in decode_all(res.body)] == [b"0", b"3"] and res.next_begin_offset == 4
    res = store.get_message("g", "TopicA", 1, 0, 32, only_b)
    assert res.status == S.NO_MATCHED_MESSAGE and res.next_begin_offset == 5 and res.body == b""
    both = TagsFilter({tags_code("TagA"), tags_code("TagB")})
    assert store.get_message("g", "TopicA", 0, 0, 32, both).message_count == 12
    assert store.get_message("g", "TopicA", 0, 0, 32, TagsFilter(None)).message_count == 12  # "*"
    assert store.get_message("g", "TopicA", 2, 0, 32, only_b).status == S.NO_MATCHED_MESSAGE


def test_no_matched_logic_queue(store):
    put_ok(store, msg())
    assert store.wait_dispatched()
    for topic, qid in (("Nope", 0), ("TopicA", 7)):
        res = store.get_message("g", topic, qid, 5, 32)
        assert res.status == S.NO_MATCHED_LOGIC_QUEUE and res.next_begin_offset == 0


def test_no_message_in_queue(store):
    # a prepared transaction record is dispatched to its queue but takes no slot in it
    put_ok(store, MessageExtBrokerInner(topic="TopicHalf", body=b"half", sys_flag=0x4))
    assert store.wait_dispatched()
    assert store.get_consume_queue("TopicHalf", 0) is not None
    for offset in (0, 3):
        res = store.get_message("g", "TopicHalf", 0, offset, 32)
        assert res.status == S.NO_MESSAGE_IN_QUEUE and res.next_begin_offset == 0


def test_offset_overflow_one_and_badly(store):
    for i in range(4):
        put_ok(store, msg(body=str(i).encode()))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 0, 4, 32)
    assert res.status == S.OFFSET_OVERFLOW_ONE and res.next_begin_offset == 4 and res.body == b""
    res = store.get_message("g", "TopicA", 0, 9, 32)
    assert res.status == S.OFFSET_OVERFLOW_BADLY and res.next_begin_offset == 4
    assert (res.min_offset, res.max_offset) == (0, 4)
    put_ok(store, msg(body=b"4"))
    assert store.wait_dispatched()
    res = store.get_message("g", "TopicA", 0, 4, 32)
    assert res.status == S.FOUND and decode_all(res.body)[0].body == b"4"


def _fill_three_files(store, qid=0):
    i = 0
    while store.get_max_phy_offset() < 2 * store.config.mapped_file_size_commit_log + 10_000:
        put_ok(store, msg(queue_id=qid, body=f"{i}".encode().ljust(900, b"-")))
        i += 1
    assert store.wait_dispatched()
    return i


def test_offset_too_small_after_cleanup(store):
    n = _fill_three_files(store)
    store.disk_usage = lambda path: 0.88  # above the clean-forcibly level: delete even young files
    assert store.clean_service.run_once() == 2
    store.disk_usage = lambda path: 0.10
    store.clean_service.run_once()
    min_off = store.get_min_offset_in_queue("TopicA", 0)
    assert 0 < min_off < n
    for below in (0, min_off - 1):
        res = store.get_message("g", "TopicA", 0, below, 32)
        assert res.status == S.OFFSET_TOO_SMALL and res.next_begin_offset == min_off, below
    res = store.get_message("g", "TopicA", 0, min_off, 32)
    assert res.status == S.FOUND
    first = decode_all(res.body)[0]
    assert first.queue_offset == min_off and first.commit_log_offset >= store.get_min_phy_offset()


def test_message_was_removing_between_log_and_queue_cleanup(store):
    _fill_three_files(store)
    store.disk_usage = lambda path: 0.88
    # only the commit-log half of a cleaning round: the queue still points at deleted data
    assert store.clean_service.delete_expired_commit_log_files() == 2
    assert store.get_min_offset_in_queue("TopicA", 0) == 0
    res = store.get_message("g", "TopicA", 0, 0, 32)
    assert res.status == S.MESSAGE_WAS_REMOVING
    assert res.next_begin_offset > 0 and res.body == b""


class _EveryEntry:
    """Takes every message without saying so: read_queue's general loop, entry by entry."""

    needs_commit_log = False
    match_all = False

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return True

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True


def test_the_shortcut_for_unfiltered_reads_gives_what_the_general_loop_gives(stores):
    # Small commit-log files so reads cross file ends; runs of adjacent records (batches of one queue) and
    # records interleaved with another queue's.
    store = stores.open(mapped_file_size_commit_log=4096)
    for i in range(60):
        put_ok(store, msg(queue_id=1, body=f"m{i}".encode() * (1 + i % 7)))
        if i % 3:
            put_ok(store, msg(queue_id=2, body=b"other"))
    assert store.wait_dispatched()
    for start in range(61):
        for n in (1, 5, 32):
            fast = store.get_message("g", "TopicA", 1, start, n)
            slow = store.get_message("g", "TopicA", 1, start, n, _EveryEntry())
            assert (fast.status, fast.next_begin_offset, fast.message_count, fast.queue_offsets, fast.body,
                    fast.buffer_total_size) == (slow.status, slow.next_begin_offset, slow.message_count,
                                                slow.queue_offsets, slow.body, slow.buffer_total_size), (start, n)


def test_an_unfiltered_read_slices_adjacent_records_once_and_others_one_by_one(store):
    for i in range(10):
        put_ok(store, msg(queue_id=3, body=f"a{i}".encode()))
    for i in range(10):
        put_ok(store, msg(queue_id=1, body=f"b{i}".encode()))
        put_ok(store, msg(queue_id=2, body=f"c{i}".encode()))
    assert store.wait_dispatched()
    adjacent = store.get_message("g", "TopicA", 3, 0, 32)
    assert adjacent.message_count == 10 and len(adjacent.buffers) == 1
    interleaved = store.get_message("g", "TopicA", 1, 0, 32)
    assert interleaved.message_count == 10 and len(interleaved.buffers) == 10
    assert [m.body for m in decode_all(interleaved.body)] == [f"b{i}".encode() for i in range(10)]


def test_a_read_takes_messages_up_to_exactly_its_byte_limit(store):
    # Four records of one size, a limit of three: the three that fill it exactly are read (the fourth would pass it).
    sizes = {put_ok(store, msg(body=b"m%d" % i, KEYS="k")).wrote_bytes for i in range(4)}
    assert store.wait_dispatched() and len(sizes) == 1
    store.config.max_transfer_bytes_on_message_in_memory = 3 * sizes.pop()
    res = store.get_message("g", "TopicA", 0, 0, 32)
    assert res.status == S.FOUND and res.next_begin_offset == 3
    assert [m.body for m in decode_all(res.body)] == [b"m0", b"m1", b"m2"]
