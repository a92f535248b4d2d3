"""The offset math of the Spark source, without Spark: checkpoint JSON, proration, splitting, resolution."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyspark_pocketmq.offsets import (
    EARLIEST,
    LATEST,
    OffsetFormatError,
    OffsetRange,
    QueueRef,
    from_json,
    prorate,
    split_ranges,
    to_json,
    to_json_dict,
)
from pyspark_pocketmq.options import InvalidOptionError
from pyspark_pocketmq.planning import (
    DataLossError,
    check_batch_offsets,
    given_offsets,
    plan_ranges,
    resolve_offsets,
    stream_end,
)

A0, A1, A2, A10 = (QueueRef("T", "broker-a", i) for i in (0, 1, 2, 10))
B0 = QueueRef("T", "broker-b", 0)
U0 = QueueRef("U", "broker-a", 0)


def test_json_is_canonical_whatever_the_insertion_order():
    one = {A10: 5, B0: 1, U0: 7, A2: 3, A0: 0}
    two = dict(reversed(list(one.items())))
    assert to_json(one) == to_json(two)
    # Numeric queue order (2 before 10), then broker, then topic: what Spark compares is this text.
    assert to_json(one) == (
        '{"T": {"broker-a": {"0": 0, "2": 3, "10": 5}, "broker-b": {"0": 1}}, "U": {"broker-a": {"0": 7}}}'
    )
    assert from_json(to_json(one)) == one
    assert json.loads(to_json(one)) == to_json_dict(one)


@pytest.mark.parametrize("text", [
    "[1]", '{"T": 3}', '{"T": {"b": [1]}}', '{"T": {"b": {"x": 1}}}', '{"T": {"b": {"0": -3}}}',
    '{"T": {"b": {"0": "7"}}}', '{"T": {"b": {"0": true}}}', "{not json",
])
def test_malformed_offset_json_is_refused_with_the_reason(text):
    with pytest.raises(OffsetFormatError):
        from_json(text)


def test_sentinels_pass_through_the_json():
    assert from_json('{"T": {"broker-a": {"0": -2, "1": -1}}}') == {A0: EARLIEST, A1: LATEST}


def test_prorate_shares_exactly_the_limit_in_proportion():
    start = {A0: 0, A1: 0, A2: 10}
    end = {A0: 60, A1: 30, A2: 20}  # pending 60, 30, 10
    capped = prorate(start, end, 10)
    assert capped == {A0: 6, A1: 3, A2: 11}
    assert prorate(start, end, 1000) == end  # enough room: everything


def test_prorate_gives_the_remainder_to_the_largest_fractions_and_never_starves_progress():
    start = {A0: 0, A1: 0, A2: 0}
    end = {A0: 5, A1: 5, A2: 5}
    assert prorate(start, end, 4) == {A0: 2, A1: 1, A2: 1}  # ties: the queue first in order
    assert sum(prorate(start, end, 1).values()) == 1


def test_prorate_reads_a_new_queue_from_its_beginning():
    # A2 is not in start: it is new and pending from offset 0.
    assert prorate({A0: 10}, {A0: 10, A2: 4}, 3) == {A0: 10, A2: 3}


@given(st.dictionaries(st.sampled_from([A0, A1, A2, A10, B0, U0]),
                       st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.integers(1, 3000))
def test_prorate_properties(spans, limit):
    start = {q: a for q, (a, b) in spans.items()}
    end = {q: a + b for q, (a, b) in spans.items()}
    capped = prorate(start, end, limit)
    assert set(capped) == set(end)
    assert all(start[q] <= capped[q] <= end[q] for q in end)
    assert sum(capped[q] - start[q] for q in end) == min(limit, sum(b for _, b in spans.values()))


def test_split_ranges_one_piece_per_queue_by_default_and_skips_empty_ones():
    ranges = [OffsetRange(A0, 0, 10), OffsetRange(A1, 5, 5), OffsetRange(A2, 3, 4)]
    assert split_ranges(ranges) == [OffsetRange(A0, 0, 10), OffsetRange(A2, 3, 4)]


def test_split_ranges_caps_records_per_partition():
    pieces = split_ranges([OffsetRange(A0, 0, 10)], max_records=4)
    assert pieces == [OffsetRange(A0, 0, 3), OffsetRange(A0, 3, 6), OffsetRange(A0, 6, 10)]


def test_split_ranges_min_partitions_splits_large_ranges_more():
    pieces = split_ranges([OffsetRange(A0, 0, 90), OffsetRange(A1, 0, 10)], min_partitions=10)
    assert len([p for p in pieces if p.queue == A0]) == 9
    assert len([p for p in pieces if p.queue == A1]) == 1
    # Never more pieces than offsets.
    assert len(split_ranges([OffsetRange(A0, 0, 2)], min_partitions=8)) == 2


@given(st.lists(st.tuples(st.integers(0, 500), st.integers(0, 500)), min_size=1, max_size=6),
       st.one_of(st.none(), st.integers(1, 40)), st.one_of(st.none(), st.integers(1, 200)))
def test_split_ranges_properties(spans, min_partitions, max_records):
    ranges = [OffsetRange(QueueRef("T", "b", i), a, a + n) for i, (a, n) in enumerate(spans)]
    pieces = split_ranges(ranges, min_partitions, max_records)
    for r in ranges:  # the pieces of a range tile it exactly, in order
        own = [p for p in pieces if p.queue == r.queue]
        if r.size == 0:
            assert own == []
            continue
        assert own[0].start == r.start and own[-1].end == r.end
        assert all(a.end == b.start for a, b in zip(own, own[1:], strict=False))
        assert max(p.size for p in own) - min(p.size for p in own) <= 1
        if max_records:
            assert all(p.size <= max_records for p in own)
    total = sum(r.size for r in ranges)
    if min_partitions:
        assert len(pieces) >= min(min_partitions, total)


def test_resolve_offsets_for_words_json_and_defaults():
    queues = [A0, A1, A2]
    lo = {A0: 0, A1: 2, A2: 4}
    hi = {A0: 10, A1: 12, A2: 14}
    assert resolve_offsets("earliest", queues, lo, hi, EARLIEST, "x") == lo
    assert resolve_offsets("latest", queues, lo, hi, EARLIEST, "x") == hi
    spec = {A0: 5, A1: LATEST}
    assert resolve_offsets(spec, queues, lo, hi, EARLIEST, "x") == {A0: 5, A1: 12, A2: 4}
    assert resolve_offsets(spec, queues, lo, hi, LATEST, "x") == {A0: 5, A1: 12, A2: 14}
    with pytest.raises(InvalidOptionError, match="T/broker-a/10"):
        resolve_offsets({A10: 1}, queues, lo, hi, EARLIEST, "startingOffsets")


def test_stream_end_takes_new_queues_and_reports_lost_ones():
    assert stream_end({A0: 3}, {A0: 5, A1: 2}, True) == {A0: 5, A1: 2}
    # A queue out of the route (its broker restarting) keeps its offset, whether its broker can be asked or not.
    assert stream_end({A0: 3, A1: 4}, {A0: 5}, True) == {A0: 5, A1: 4}
    assert stream_end({A0: 3, A1: 4}, {A0: 5}, True, {A1: None}) == {A0: 5, A1: 4}
    assert stream_end({A0: 3, A1: 4}, {A0: 5}, True, {A1: 9}) == {A0: 5, A1: 4}
    # ... unless its broker says it ends before where the query is (deleted).
    with pytest.raises(DataLossError, match="T/broker-a/1 is gone.*ends at 0, before offset 4.*failOnDataLoss"):
        stream_end({A0: 3, A1: 4}, {A0: 5}, True, {A1: 0})
    assert stream_end({A0: 3, A1: 4}, {A0: 5}, False, {A1: 0}) == {A0: 5, A1: 0}
    # A queue that now ends before where the query is (deleted and created again).
    with pytest.raises(DataLossError, match="now ends at 2, before offset 7"):
        stream_end({A0: 7}, {A0: 2}, True)
    assert stream_end({A0: 7}, {A0: 2}, False) == {A0: 2}


def test_plan_ranges_reads_new_queues_from_zero():
    assert plan_ranges({A0: 3}, {A0: 5, A1: 2}, None, None) == [OffsetRange(A0, 3, 5), OffsetRange(A1, 0, 2)]


def test_given_offsets_names_what_the_options_gave():
    resolved = {A0: 4, A1: 0, A2: 9}
    assert given_offsets({A0: 4, A1: EARLIEST, A2: LATEST}, None, resolved, "startingOffsets", "startingTimestamp") == {
        A0: "startingOffsets 4"}
    assert given_offsets("earliest", None, resolved, "startingOffsets", "startingTimestamp") == {}
    assert given_offsets("earliest", 1700, {A0: 4}, "startingOffsets", "startingTimestamp") == {
        A0: "startingTimestamp 1700 (offset 4)"}


def test_check_batch_offsets_refuses_a_start_after_the_end():
    first, last = {A0: 0, A1: 6}, {A0: 5, A1: 9}
    ok = {A0: 1, A1: 7}
    assert check_batch_offsets(ok, last, first, last, {A0: "startingOffsets 1"}, {}, True) == ok
    # Both from the options: the options are wrong, even with failOnDataLoss false.
    with pytest.raises(InvalidOptionError, match="startingTimestamp 9 \\(offset 4\\) is after endingOffsets 2 for "
                       "T/broker-a/0"):
        check_batch_offsets({A0: 4, A1: 6}, {A0: 2, A1: 9}, first, last, {A0: "startingTimestamp 9 (offset 4)"},
                            {A0: "endingOffsets 2"}, False)
    # A start past the queue's end: data loss (with failOnDataLoss false the queue reads nothing).
    with pytest.raises(DataLossError, match="startingOffsets 100 is past the end of queue T/broker-a/0, which ends "
                       "at 5"):
        check_batch_offsets({A0: 100, A1: 6}, last, first, last, {A0: "startingOffsets 100"}, {}, True)
    assert check_batch_offsets({A0: 100, A1: 6}, last, first, last, {A0: "startingOffsets 100"}, {}, False) == {
        A0: 5, A1: 6}
    # From earliest to an end before the queue's first offset: what it should read was deleted.
    with pytest.raises(DataLossError, match="endingOffsets 3 is before the first offset 6 of queue T/broker-a/1"):
        check_batch_offsets(first, {A0: 5, A1: 3}, first, last, {}, {A1: "endingOffsets 3"}, True)
    lenient = check_batch_offsets(first, {A0: 5, A1: 3}, first, last, {}, {A1: "endingOffsets 3"}, False)
    assert plan_ranges(lenient, {A0: 5, A1: 3}, None, None) == [OffsetRange(A0, 0, 5)]
