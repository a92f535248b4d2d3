"""The store, both ways, at the issue's size: 100,000 messages written by one broker and served by the other.

The same handover as tests/apache/test_store_both_ways.py (tests/apache/store_handover.py: the workload, the
snapshot before and after, every check), with --messages plain messages (default 100,000) beside the batches,
transactions, delays, retries and committed offsets, all sent one by one, on files of a realistic size. Prints the
time of each phase. The suite's tests send 100,000 too, but 99,600 of them in batches of 100, which is quicker.

    python bench/store_handover.py [--messages N] [--way pocketmq-to-apache|apache-to-pocketmq|apache-kill-9]
    make store-handover
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
import time
from pathlib import Path

_BENCH = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == _BENCH:
    sys.path[0] = str(_BENCH.parent)

from tests.apache.store_handover import (  # noqa: E402
    STORE,
    Phases,
    store_from_apache_rocketmq_to_pocketmq,
    store_from_pocketmq_to_apache_rocketmq,
)

# 100,000 messages of ~250 bytes are ~25 MB of commit log: 4 MiB files make several, as in the suite.
BENCH_STORE = {
    **STORE,
    "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": str(20 * 30_000),
    "maxIndexNum": "100000",
    "maxHashSlotNum": "20000",
}
WAYS = ("pocketmq-to-apache", "apache-to-pocketmq", "apache-kill-9")


async def run(way: str, root: Path, messages: int) -> Phases:
    if way == "pocketmq-to-apache":
        return await store_from_pocketmq_to_apache_rocketmq(root, messages, BENCH_STORE)
    stop = signal.SIGKILL if way == "apache-kill-9" else signal.SIGTERM
    return await store_from_apache_rocketmq_to_pocketmq(root, messages, BENCH_STORE, stop)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--way", choices=WAYS, action="append", help="default: all three")
    args = parser.parse_args()
    for way in args.way or WAYS:
        with tempfile.TemporaryDirectory(prefix="pocketmq-handover-") as tmp:
            started = time.monotonic()
            phases = asyncio.run(run(way, Path(tmp), args.messages))
            total = time.monotonic() - started
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in phases.times.items())
        print(f"{way:20} {args.messages:>7} messages: {total:6.1f} s ({steps})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
