#!/usr/bin/env python3
"""What the gRPC endpoint's hop to its broker costs: the proxy's ConsumerProcessor popping 32 messages and acking
each (ReceiveMessage plus 32 AckMessage, bench/java_sdk.py's receive cycle, without gRPC and the SDK) against a
broker of the same process, reached in-process (local mode) or over a loopback socket (cluster mode).

    python bench/proxy_hop.py                    # CPU per cycle, each mode, alternating
    python bench/proxy_hop.py --one-by-one       # the same, each ack awaited before the next
    python bench/proxy_hop.py --instructions     # instructions per cycle, under cachegrind
    python bench/proxy_hop.py --one MODE N FILL  # one run (what cachegrind executes)

The broker runs on its own loop in a thread and the proxy's side on another, as in `pocketmq dev`. CPU time is the
process's (both threads); on a shared machine the instruction count is the figure that holds still. Under
cachegrind each mode runs with N and 2N cycles over the same stored messages, and the figure is the marginal cost
of the second N cycles, per cycle (starting the cluster and filling the store drop out).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pocketmq.client.consumer.pop_result import PopStatus  # noqa: E402
from pocketmq.common import MessageExtBrokerInner, pack_host  # noqa: E402
from pocketmq.embedded import ThreadedCluster  # noqa: E402
from pocketmq.proxy.cluster_service import ClusterService  # noqa: E402
from pocketmq.proxy.config import ProxyConfig  # noqa: E402
from pocketmq.proxy.consumer_processor import ConsumerProcessor  # noqa: E402
from pocketmq.proxy.receipt_handle import decode  # noqa: E402
from pocketmq.remoting.body import TopicConfig  # noqa: E402
from pocketmq.remoting.client_body import SubscriptionData  # noqa: E402

TOPIC, GROUP, BATCH = "Hop", "HopGroup", 32
PROXY_PORT = 8081


async def _fill(cluster: ThreadedCluster, count: int) -> None:
    broker = cluster.cluster.broker
    assert broker is not None
    broker.topic_config_manager.update_topic_config(TopicConfig(TOPIC, 1, 1, 6))
    await broker.register_broker_all()
    born = pack_host("127.0.0.1", 40000)
    for i in range(count):
        broker.store.put_message(MessageExtBrokerInner(topic=TOPIC, body=b"x" * 1024, queue_id=0,
                                                       properties={"UNIQ_KEY": f"{i:032X}"},
                                                       born_timestamp=1_700_000_000_000, born_host=born))


async def _cycles(cluster: ThreadedCluster, mode: str, cycles: int, one_by_one: bool = False) -> float:
    """``cycles`` pops of 32 with their acks; the process's CPU seconds over them."""
    broker = cluster.cluster.broker
    assert broker is not None
    config = ProxyConfig(cluster.namesrv_addr, request_timeout=120.0, proxy_mode=mode)
    service = ClusterService(config)
    if mode == "local":
        service.api.remoting_client.add_local_server(cluster.broker_addr, broker.remoting_server,
                                                     f"127.0.0.1:{PROXY_PORT}")
    consumer = ConsumerProcessor(service)
    subscription = SubscriptionData(TOPIC, "*")
    addr = cluster.broker_addr

    async def cycle() -> int:
        result = await consumer.pop_message(addr, "broker-a", GROUP, TOPIC, BATCH, 60_000, 0, subscription, False,
                                            None, None, 120.0)
        assert result.pop_status is PopStatus.FOUND, result.pop_status
        acks = [consumer.ack_message(decode(m.properties["POP_CK"]), GROUP, TOPIC) for m in result.msg_found_list]
        if one_by_one:
            for ack in acks:
                await ack
        else:
            await asyncio.gather(*acks)
        return len(result.msg_found_list)

    try:
        await cycle()  # the route and the connection are made
        start = time.process_time()
        got = sum([await cycle() for _ in range(cycles)])
        spent = time.process_time() - start
        assert got == cycles * BATCH, got
        return spent
    finally:
        await service.shutdown()


def run_one(mode: str, cycles: int, fill: int, one_by_one: bool = False) -> float:
    gc.disable()
    with tempfile.TemporaryDirectory(prefix="pmq-hop-") as root, ThreadedCluster(root) as cluster:
        cluster._call(_fill(cluster, fill))
        assert cluster.wait_dispatched(600)
        return asyncio.run(_cycles(cluster, mode, cycles, one_by_one))


def instructions(mode: str, cycles: int, fill: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
                sys.executable, __file__, "--one", mode, str(cycles), str(fill)]
        env = dict(os.environ, PYTHONHASHSEED="0")
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=3600, check=False)
        match = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
        if proc.returncode != 0 or match is None:
            raise RuntimeError(f"cachegrind failed: {proc.stderr[-2000:]}")
        return int(match.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=200, help="measured cycles (default 200; 20 under cachegrind)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both modes (default 3)")
    parser.add_argument("--instructions", action="store_true", help="count instructions under cachegrind")
    parser.add_argument("--one-by-one", action="store_true",
                        help="each ack awaited before the next (the Python SDK's pattern) instead of all 32 at once")
    parser.add_argument("--one", nargs=3, metavar=("MODE", "N", "FILL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        mode, n, fill = args.one
        print(f"{run_one(mode, int(n), int(fill)):.6f}")
        return 0
    modes = ("cluster", "local")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.instructions:
        n = 20 if args.cycles == 200 else args.cycles
        fill = (2 * n + 1) * BATCH
        for mode in modes:
            base, double = instructions(mode, n, fill), instructions(mode, 2 * n, fill)
            print(f"{mode:<8} {(double - base) / n:>14,.0f} instructions per cycle (pop 32 + 32 acks)", flush=True)
    else:
        for r in range(args.rounds):
            for mode in modes:
                fill = (args.cycles + 1) * BATCH
                spent = run_one(mode, args.cycles, fill, args.one_by_one)
                print(f"round {r + 1} {mode:<8} {spent * 1e3 / args.cycles:8.2f} ms CPU per cycle "
                      f"(load {os.getloadavg()[0]:.2f})", flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
