"""Descriptors stay bounded; the broker never acknowledges what it cannot dispatch (issue 18, failure 2).

`pocketmq dev` runs in its own process with RLIMIT_NOFILE lowered to 256 (soft and hard, so the broker cannot
raise it). Before the fix every consume-queue file kept a descriptor for the life of the broker: past the
limit the dispatcher failed ("Too many open files") for every topic while sends still answered SEND_OK.
"""

from __future__ import annotations

import asyncio
import os

from pocketmq.remoting.codes import ResponseCode


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def soft_nofile(pid: int) -> int:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open-files line")


async def test_many_more_topics_than_descriptors_are_all_pullable(tmp_path, dev_broker):
    conf = "mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=2000\nmaxHashSlotNum=64\nmaxIndexNum=256\n"
    async with dev_broker(tmp_path / "dev", conf, nofile=256, nofile_hard=256) as dev:
        acked: dict[str, list[int]] = {}
        for t in range(700):  # ~2.7 times the limit; each topic's queue 0 gets a file
            topic = f"TopicFd{t}"
            for i in range(2):
                resp = await dev.mq.send(topic, f"{topic}-{i}".encode())
                assert resp.code == ResponseCode.SUCCESS, (topic, resp.code, resp.remark)
                acked.setdefault(topic, []).append(int(resp.ext_fields["queueOffset"]))
        assert open_files(dev.proc.pid) < 256
        for topic, offsets in acked.items():
            # Dispatch trails the acks (it is asynchronous, as in RocketMQ): wait for the topic's last message.
            pulled = await dev.pull_all(topic, 0)
            deadline = asyncio.get_running_loop().time() + 60
            while len(pulled) < len(offsets) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.01)
                pulled = await dev.pull_all(topic, 0)
            assert [off for off, _ in pulled] == offsets, topic
            assert [body for _, body in pulled] == [f"{topic}-{i}".encode() for i in range(2)]
        assert dev.alive


async def test_broker_raises_its_soft_open_files_limit_to_the_hard_one(tmp_path, dev_broker):
    async with dev_broker(tmp_path / "dev", "", nofile=256, nofile_hard=4096) as dev:
        assert soft_nofile(dev.proc.pid) == 4096


async def test_dispatch_that_keeps_failing_refuses_sends_with_a_clear_status(tmp_path, dev_broker):
    # No bound on the mapped queue files (maxMappedConsumeQueueFiles far above the limit): the dispatcher runs
    # out of descriptors, and once that persists the store refuses puts (WRITE_LOGICS_QUEUE_ERROR) instead of
    # answering SEND_OK for messages it cannot make pullable.
    conf = ("mappedFileSizeCommitLog=4194304\nmappedFileSizeConsumeQueue=2000\nmaxHashSlotNum=64\nmaxIndexNum=256\n"
            "maxMappedConsumeQueueFiles=100000\n")
    async with dev_broker(tmp_path / "dev", conf, nofile=256, nofile_hard=256) as dev:
        refused = None
        # New topics until the store refuses: the dispatcher fails past ~250 files, and the store is marked
        # unwritable once that has persisted for a few rounds (sends may run ahead of it meanwhile).
        deadline = asyncio.get_running_loop().time() + 60
        t = 0
        while refused is None and asyncio.get_running_loop().time() < deadline:
            resp = await dev.mq.send(f"TopicFd{t}", b"x")
            if resp.code != ResponseCode.SUCCESS:
                refused = resp
            t += 1
        assert refused is not None
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert "consume queue could not be written" in refused.remark
        assert dev.alive
