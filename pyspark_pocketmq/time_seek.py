"""From a broker's answer to "which offset was stored at this time" to the first message stored at or after it.

pocketmq's broker answers SEARCH_OFFSET_BY_TIMESTAMP with that first message. Apache RocketMQ 4.9.x's binary search
(ConsumeQueue.getOffsetInQueueByTime) answers otherwise in two cases: with no message of exactly that time, the
nearer of the two neighbours, which may be the last one stored before it; with several (a batch's messages share
one store time), whichever of them the search met first, which may not be the first. startingTimestamp and
endingTimestamp mean "from the first message stored at or after" on every server, so the answer is checked
against the messages' store times around it.
"""

from __future__ import annotations

from collections.abc import Callable

# Reads up to `count` messages of one queue from offset `start`: [(queue offset, store time ms)] in offset order,
# [] when none can be read there.
StoreTimes = Callable[[int, int], list[tuple[int, int]]]

WINDOW = 32  # messages a step reads: a pull's default


def first_at_or_after(found: int, min_offset: int, max_offset: int, timestamp: int, store_times: StoreTimes) -> int:
    """The first queue offset in [min_offset, max_offset) stored at or after ``timestamp`` (``max_offset`` when
    none is), starting from the broker's answer ``found``. Store times rise with the offset within a queue."""
    if found >= max_offset:
        return max_offset
    found = max(found, min_offset)
    head = store_times(found, 2)
    if not head or head[0][0] != found:
        return found  # nothing readable to check it by: the broker's answer stands
    stored = head[0][1]
    if stored < timestamp:  # the neighbour before the time: the first at or after comes later
        return _first_from(found + 1, max_offset, timestamp, store_times, head[1:])
    if stored == timestamp:  # one of several of this time: the ones before it may share it
        return _first_of_run(found, min_offset, timestamp, store_times)
    return found  # a later time: had an earlier message reached the time, the search would have met it


def _first_from(start: int, end: int, timestamp: int, store_times: StoreTimes,
                read: list[tuple[int, int]]) -> int:
    """The first offset from ``start`` stored at or after ``timestamp``; ``read`` may already hold some times."""
    offset = start
    while offset < end:
        read = [(o, t) for o, t in read if o >= offset] or store_times(offset, WINDOW)
        if not read:
            return offset
        for o, t in read:
            if t >= timestamp:
                return o
        offset, read = read[-1][0] + 1, []
    return end


def _first_of_run(start: int, floor: int, timestamp: int, store_times: StoreTimes) -> int:
    """Back from ``start`` (stored at or after ``timestamp``) to the first of the run stored at or after it."""
    first = start
    while first > floor:
        begin = max(floor, first - WINDOW)
        read = [(o, t) for o, t in store_times(begin, first - begin) if o < first]
        if not read:
            return first
        reached = [o for o, t in read if t >= timestamp]
        if not reached:
            return first
        if reached[0] != begin or len(reached) != len(read):
            return reached[0]
        first = begin
    return first
