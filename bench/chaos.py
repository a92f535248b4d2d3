"""The long versions of issue 18's storage faults, against `pocketmq dev` in a process of its own.

1. kill -9 rounds: producers send under load while the broker is killed with SIGKILL at a random moment; after
   each restart every acknowledged message (the ledger: topic, queue, queue offset, body) must be pullable
   exactly once at its offset. Prints rounds, acked, lost, duplicated, and the recovery seconds (start of the
   process to the first answered send).
2. disk full: the store on a 32 MiB tmpfs (root only; skipped with the reason otherwise), 16 KiB bodies until
   refused; the process must survive, every acked message must be pullable, and puts must resume once a ballast
   file is deleted.
3. descriptor limit: RLIMIT_NOFILE 1,024 (soft and hard), --topics topics of one message each; once the broker
   has dispatched everything (its new queues' files are made behind the sends), every acked message must be
   pullable. Prints how long dispatch took to catch up and the broker's CPU per topic verified.

A benchmark, not a test: it prints figures and asserts nothing (a run with lost > 0 says so). Its own target,
not part of `make bench` (a full run takes minutes):

    .venv/bin/python bench/chaos.py [--rounds 20] [--topics 10000] [--skip disk,fd]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pocketmq.common.codec import decode_all  # noqa: E402
from pocketmq.remoting.admin_body import KVTable  # noqa: E402
from pocketmq.remoting.client import RemotingClient  # noqa: E402
from pocketmq.remoting.codes import RequestCode, ResponseCode  # noqa: E402
from pocketmq.remoting.command import RemotingCommand  # noqa: E402
from pocketmq.remoting.header import (  # noqa: E402
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
)

_ADDRESSES = re.compile(rb"name server (\S+), broker \S+ at (\S+)")
CONF = "mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=60000\nmaxHashSlotNum=5000\nmaxIndexNum=20000\n"


async def start_dev(store: str, conf: str, nofile: int | None = None) -> tuple[asyncio.subprocess.Process, str]:
    conf_path = store.rstrip("/") + ".conf"
    with open(conf_path, "w") as f:
        f.write(conf)

    def limit() -> None:
        if nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pocketmq", "dev", "--no-console", "--store", store,
        "--namesrv-port", "0", "--broker-port", "0",
        "-c", conf_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, preexec_fn=limit)
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 120)
    found = _ADDRESSES.search(line)
    if found is None:
        proc.kill()
        raise RuntimeError(f"pocketmq dev did not start: {line!r}")
    return proc, found.group(2).decode()


async def send(client: RemotingClient, addr: str, topic: str, queue_id: int, body: bytes) -> RemotingCommand:
    v1 = SendMessageRequestHeader(producer_group="PG", topic=topic, default_topic="TBW102",
                                  default_topic_queue_nums=4, queue_id=queue_id, sys_flag=0,
                                  born_timestamp=int(time.time() * 1000), flag=0, properties="")
    return await client.invoke(addr, RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, SendMessageRequestHeaderV2.from_v1(v1), body), 5.0)


async def pull_queue(client: RemotingClient, addr: str, topic: str, queue_id: int) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    offset = 0
    while True:
        header = PullMessageRequestHeader(consumer_group="G", topic=topic, queue_id=queue_id, queue_offset=offset,
                                          max_msg_nums=32, sys_flag=0x4, commit_offset=0, suspend_timeout_millis=0,
                                          sub_version=0, subscription="*", expression_type="TAG")
        resp = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header), 5.0)
        msgs = decode_all(resp.body) if resp.code == ResponseCode.SUCCESS else []
        if not msgs:
            return out
        out += [(m.queue_offset, m.body) for m in msgs]
        offset = msgs[-1].queue_offset + 1


def check(ledger: dict[tuple[str, int], dict[int, bytes]], pulled: dict[tuple[str, int], list[tuple[int, bytes]]]
          ) -> tuple[int, int]:
    """(lost, duplicated): acked messages not found at their offset; bodies found more than once."""
    lost = dup = 0
    for key, acked in ledger.items():
        got = dict(pulled.get(key, []))
        lost += sum(1 for off, body in acked.items() if got.get(off) != body)
        bodies = [b for _, b in pulled.get(key, [])]
        dup += len(bodies) - len(set(bodies))
    return lost, dup


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process used so far (/proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def dispatch_caught_up(client: RemotingClient, addr: str, timeout: float = 600.0) -> float:
    """Wait until the broker has dispatched everything in its commit log (GET_BROKER_RUNTIME_INFO's
    dispatchBehindBytes is 0); returns the seconds waited. A send is acknowledged once the commit log has it,
    its consume-queue entry comes after, so a pull right after the last send may not find it yet."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        resp = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0)
        if resp.code == ResponseCode.SUCCESS and resp.decode_body(KVTable).table["dispatchBehindBytes"] == "0":
            break
        await asyncio.sleep(0.05)
    return time.monotonic() - began


async def verify(addr: str, ledger) -> tuple[int, int]:
    client = RemotingClient()
    try:
        pulled = {key: await pull_queue(client, addr, *key) for key in ledger}
    finally:
        await client.close()
    return check(ledger, pulled)


async def kill_rounds(rounds: int, producers: int) -> None:
    root = tempfile.mkdtemp(prefix="chaos-kill-")
    store = os.path.join(root, "dev")
    ledger: dict[tuple[str, int], dict[int, bytes]] = {}
    recoveries: list[float] = []
    seq = 0
    try:
        for r in range(rounds):
            began = time.monotonic()
            proc, addr = await start_dev(store, CONF)
            client = RemotingClient()
            while (await send(client, addr, "ChaosKill", 0, f"probe-{r}".encode())).code != ResponseCode.SUCCESS:
                await asyncio.sleep(0.01)
            recoveries.append(time.monotonic() - began)
            stop = asyncio.Event()

            async def producer(p: int, stop: asyncio.Event, client: RemotingClient, addr: str) -> None:
                nonlocal seq
                while not stop.is_set():
                    seq += 1
                    body = f"p{p}-{seq}".encode().ljust(200, b".")
                    q = seq % 4
                    try:
                        resp = await send(client, addr, "ChaosKill", q, body)
                    except Exception:  # the broker died mid-request: not acked
                        return
                    if resp.code == ResponseCode.SUCCESS:
                        ledger.setdefault(("ChaosKill", q), {})[int(resp.ext_fields["queueOffset"])] = body

            tasks = [asyncio.create_task(producer(p, stop, client, addr)) for p in range(producers)]
            await asyncio.sleep(random.uniform(0.3, 1.5))
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            await client.close()
        proc, addr = await start_dev(store, CONF)
        lost, dup = await verify(addr, ledger)
        proc.terminate()
        await proc.wait()
        acked = sum(len(v) for v in ledger.values())
        print(f"kill -9: rounds {rounds}, acked {acked}, lost {lost}, duplicated {dup}, recovery seconds "
              f"mean {sum(recoveries) / len(recoveries):.2f} max {max(recoveries):.2f}  (target: lost 0, dup 0)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def disk_full() -> None:
    if os.geteuid() != 0:
        print("disk full: skipped (mounting a tmpfs needs root)")
        return
    root = tempfile.mkdtemp(prefix="chaos-disk-")
    mnt = os.path.join(root, "fs")
    os.mkdir(mnt)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", mnt], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"disk full: skipped (cannot mount a tmpfs: {done.stderr.strip()})")
        return
    try:
        ballast = os.path.join(mnt, "ballast")
        with open(ballast, "wb") as f:
            f.write(b"\1" * (12 << 20))
        proc, addr = await start_dev(os.path.join(mnt, "dev"), CONF.replace("4194304", "1048576"))
        client = RemotingClient()
        ledger: dict[tuple[str, int], dict[int, bytes]] = {}
        refused = None
        began = time.monotonic()
        for i in range(100_000):
            body = f"{i}".encode().ljust(16 * 1024, b"d")
            resp = await send(client, addr, "ChaosDisk", i % 4, body)
            if resp.code != ResponseCode.SUCCESS:
                refused = resp
                break
            ledger.setdefault(("ChaosDisk", i % 4), {})[int(resp.ext_fields["queueOffset"])] = body
        fill_s = time.monotonic() - began
        alive = proc.returncode is None
        lost, dup = await verify(addr, ledger)
        os.unlink(ballast)
        began = time.monotonic()
        resumed = None
        while time.monotonic() - began < 30:
            if (await send(client, addr, "ChaosDisk", 0, b"after")).code == ResponseCode.SUCCESS:
                resumed = time.monotonic() - began
                break
            await asyncio.sleep(0.01)
        await client.close()
        print(f"disk full: acked {sum(len(v) for v in ledger.values())} in {fill_s:.1f} s, refused with "
              f"{refused.code if refused else None} ({(refused.remark if refused else '')[:60]}...), process alive "
              f"{alive}, lost {lost}, duplicated {dup}, resumed after "
              f"{f'{resumed:.2f} s' if resumed is not None else 'never'}  (target: alive, lost 0, resumes)")
        proc.terminate()
        await proc.wait()
    finally:
        subprocess.run(["umount", "-l", mnt], check=False)
        shutil.rmtree(root, ignore_errors=True)


async def descriptor_limit(topics: int) -> None:
    root = tempfile.mkdtemp(prefix="chaos-fd-")
    try:
        proc, addr = await start_dev(os.path.join(root, "dev"), CONF, nofile=1024)
        client = RemotingClient()
        ledger: dict[tuple[str, int], dict[int, bytes]] = {}
        refused = 0
        began = time.monotonic()
        for t in range(topics):
            body = f"fd-{t}".encode()
            resp = await send(client, addr, f"ChaosFd{t}", 0, body)
            if resp.code == ResponseCode.SUCCESS:
                ledger[(f"ChaosFd{t}", 0)] = {int(resp.ext_fields["queueOffset"]): body}
            else:
                refused += 1
        send_s = time.monotonic() - began
        lag_s = await dispatch_caught_up(client, addr)
        fds = len(os.listdir(f"/proc/{proc.pid}/fd")) if os.path.isdir(f"/proc/{proc.pid}/fd") else -1
        cpu_before, began = cpu_s(proc.pid), time.monotonic()
        lost, dup = await verify(addr, ledger)
        verify_s, verify_cpu_ms = time.monotonic() - began, (cpu_s(proc.pid) - cpu_before) * 1000
        await client.close()
        print(f"descriptor limit 1024: topics {topics}, acked {len(ledger)}, refused {refused}, lost {lost}, "
              f"duplicated {dup}, open files at the end {fds}, {send_s:.1f} s to send, dispatch caught up "
              f"{lag_s:.1f} s after the last send, verified in {verify_s:.1f} s (broker CPU "
              f"{verify_cpu_ms / max(1, len(ledger)):.2f} ms per topic)  (target: lost 0, refused 0)")
        proc.terminate()
        await proc.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--skip", default="", help="comma-separated: kill, disk, fd")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    if "kill" not in skip:
        await kill_rounds(args.rounds, args.producers)
    if "disk" not in skip:
        await disk_full()
    if "fd" not in skip:
        await descriptor_limit(args.topics)


if __name__ == "__main__":
    asyncio.run(main())
