"""What inspect shows: the command-line options as one value passed to every section."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import DEFAULT_DELAY_LEVELS

SECTIONS = ("commitlog", "consumequeue", "index", "checkpoint", "timer")


@dataclass
class Options:
    """What to show. sections: any of commitlog, consumequeue, index, checkpoint, timer."""

    sections: frozenset[str]
    topic: str | None = None
    queue: int | None = None
    limit: int | None = None  # None: no limit
    offset: int | None = None
    hex: bool = False
    hash_slots: int = 5_000_000
    index_num: int = 20_000_000
    timer_precision_ms: int = 1000  # the wheel stores time / precision: it cannot tell the precision itself
    # The store's messageDelayLevel: a SCHEDULE_TOPIC_XXXX entry stores a deliver time, not its level's delay.
    delay_levels: str = DEFAULT_DELAY_LEVELS
