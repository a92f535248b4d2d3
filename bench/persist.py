"""How config and offset persistence treats the event loop: the broker's write_json_file (aiofiles) against
the same write done in one worker-thread hop (asyncio.to_thread), for a small and a large offset table.

For each: the time one write takes (mean of --writes), and the longest the loop went without running another
task meanwhile (a ticker task yields with sleep(0) and records its longest gap): what a busy broker's
connections would wait. A benchmark, not a test: it prints figures and asserts nothing.

    .venv/bin/python bench/persist.py [--writes 200] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pocketmq.broker.config_file import write_json_file, write_json_file_sync  # noqa: E402


async def one_hop(path: str, data: Any) -> None:
    await asyncio.to_thread(write_json_file_sync, path, data)


def table(queues: int) -> dict[str, Any]:
    groups = max(1, queues // 8)
    return {"offsetTable": {f"Topic{g}@Group{g}": {str(q): 123456789 + q for q in range(8)} for g in range(groups)}}


Writer = Callable[[str, Any], Awaitable[None]]


async def measure(write: Writer, path: str, data: Any, writes: int) -> tuple[float, float]:
    longest = 0.0
    running = True

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = time.perf_counter()
    for _ in range(writes):
        await write(path, data)
    elapsed = time.perf_counter() - start
    running = False
    await task
    return elapsed / writes, longest


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        for queues in (64, 8192):
            data = table(queues)
            for name, write in (("aiofiles", write_json_file), ("to_thread", one_hop)):
                path = os.path.join(d, name, "consumerOffset.json")
                await write(path, data)  # warm: directories, first .bak
                per_write, longest = await measure(write, path, data, args.writes)
                results[f"{name}_{queues}q_write_ms"] = round(per_write * 1e3, 3)
                results[f"{name}_{queues}q_loop_stall_ms"] = round(longest * 1e3, 3)
                print(f"{name:10} {queues:5} queues: {per_write * 1e3:8.3f} ms a write, "
                      f"longest loop stall {longest * 1e3:7.3f} ms")
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
