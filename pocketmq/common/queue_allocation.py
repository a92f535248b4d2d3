"""How a consumer group splits a topic's queues among its clients, as RocketMQ's AllocateMessageQueueAveragely and
AllocateMessageQueueAveragelyByCircle do it. Two sides run the same rule: a client rebalancing by itself and a
broker answering QUERY_ASSIGNMENT (RocketMQ 5's server-side rebalance), so the rule lives here, once.

Callers sort ``mq_all`` and ``cid_all`` first: every client of the group then computes the same split without
talking to the others.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TypeVar

log = logging.getLogger(__name__)

Q = TypeVar("Q")


def check_allocate_args(
    consumer_group: str, current_cid: str, mq_all: Sequence[object], cid_all: Sequence[str]
) -> bool:
    """RocketMQ's AbstractAllocateMessageQueueStrategy.check: empty arguments are caller bugs (ValueError, as
    Java's IllegalArgumentException); a client missing from ``cid_all`` (its heartbeat not seen yet) gets nothing
    this round."""
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cid_all:
        log.warning(
            "[BUG] ConsumerGroup: %s The consumerId: %s not in cidAll: %s", consumer_group, current_cid, cid_all
        )
        return False
    return True


def allocate_averagely(consumer_group: str, current_cid: str, mq_all: Sequence[Q], cid_all: Sequence[str]) -> list[Q]:
    """AVG: contiguous blocks; the first ``len(mq) % len(cid)`` clients take one queue more, clients beyond the
    queue count take none."""
    if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    n_mq, n_cid = len(mq_all), len(cid_all)
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if mod > 0 and index < mod else index * average + mod
    count = min(average, n_mq - start)
    return [mq_all[(start + i) % n_mq] for i in range(count)]


def allocate_averagely_by_circle(
    consumer_group: str, current_cid: str, mq_all: Sequence[Q], cid_all: Sequence[str]
) -> list[Q]:
    """AVG_BY_CIRCLE: round-robin striping, client ``i`` of ``n`` takes queues ``i, i + n, i + 2n, ...``."""
    if not check_allocate_args(consumer_group, current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    return list(mq_all[index :: len(cid_all)])
