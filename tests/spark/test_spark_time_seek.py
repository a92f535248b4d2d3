"""pyspark_pocketmq.time_seek: whatever a broker answers for a time (pocketmq's first at or after, or one of the
answers Apache RocketMQ 4.9.x's ConsumeQueue.getOffsetInQueueByTime can give), the reader starts at the first
message stored at or after it."""

from __future__ import annotations

import bisect

from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_pocketmq.time_seek import WINDOW, first_at_or_after


def answers(times: list[int], timestamp: int) -> set[int]:
    """Every offset a server may answer (times[i] is offset i's store time): the first at or after; any message of
    exactly that time; else the last before it and the first after it (Apache's nearer neighbour)."""
    first = bisect.bisect_left(times, timestamp)
    equal = {i for i, t in enumerate(times) if t == timestamp}
    out = {first} | equal
    if not equal:
        out |= {i for i in (first - 1, first) if 0 <= i < len(times)}
    return out


def reader(times: list[int], reads: list[tuple[int, int]]):
    def store_times(start: int, count: int) -> list[tuple[int, int]]:
        reads.append((start, count))
        return [(o, times[o]) for o in range(max(start, 0), min(start + count, len(times)))]
    return store_times


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=3 * WINDOW + 5).map(sorted), st.integers(-1, 8), st.data())
def test_every_answer_leads_to_the_first_message_at_or_after(times, timestamp, data):
    found = data.draw(st.sampled_from(sorted(answers(times, timestamp))))
    reads: list[tuple[int, int]] = []
    assert first_at_or_after(found, 0, len(times), timestamp, reader(times, reads)) == bisect.bisect_left(
        times, timestamp)
    assert all(count <= WINDOW for _, count in reads)


def test_a_long_run_of_one_time_is_walked_back_a_window_at_a_time():
    times = [1] * 3 + [5] * (2 * WINDOW + 7) + [9]
    reads: list[tuple[int, int]] = []
    assert first_at_or_after(len(times) - 2, 0, len(times), 5, reader(times, reads)) == 3
    assert len(reads) == 4  # the answer and its neighbour, then three windows back


def test_the_queue_s_min_offset_bounds_the_walk_and_the_end_stands():
    times = [5] * 10
    assert first_at_or_after(7, 4, 10, 5, reader(times, [])) == 4
    assert first_at_or_after(10, 4, 10, 5, reader(times, [])) == 10
    assert first_at_or_after(9, 0, 10, 6, reader(times, [])) == 10  # Apache's last entry for a later time


def test_an_answer_that_cannot_be_read_stands():
    assert first_at_or_after(3, 0, 10, 5, lambda start, count: []) == 3
