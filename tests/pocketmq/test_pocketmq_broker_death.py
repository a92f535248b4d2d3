"""A real broker process that dies, or goes silent, disappears from the name server's routes."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from pocketmq.namesrv.config import NamesrvConfig
from pocketmq.namesrv.namesrv_controller import NamesrvController


async def start_broker(tmp_path, namesrv_addr: str) -> asyncio.subprocess.Process:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'store'}\nlistenPort=0\nnamesrvAddr={namesrv_addr}\n"
                    "mappedFileSizeCommitLog=1048576\nmaxHashSlotNum=64\nmaxIndexNum=256\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "pocketmq", "broker", "-c", str(conf),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert b"listening on" in line, line + await proc.stderr.read()
    return proc


def has_broker(namesrv: NamesrvController) -> bool:
    return bool(namesrv.route_info_manager.broker_live_table)


@pytest.mark.parametrize("how", ["killed", "silent"])
async def test_dead_or_silent_broker_is_dropped(tmp_path, poll, how):
    # A short expiry and scan, so the silent case takes milliseconds (RocketMQ: 120 s and 10 s).
    config = NamesrvConfig(listen_port=0, scan_not_active_broker_interval=0.05, broker_channel_expired_time=0.5)
    async with NamesrvController(config) as namesrv:
        proc = await start_broker(tmp_path, namesrv.address)
        try:
            await poll(lambda: has_broker(namesrv), timeout=10)
            assert namesrv.route_info_manager.pick_topic_route_data("TBW102") is not None
            if how == "killed":
                proc.send_signal(signal.SIGKILL)  # its connections close: dropped at once
            else:
                proc.send_signal(signal.SIGSTOP)  # connection open but silent: only the scan can tell
            await poll(lambda: not has_broker(namesrv), timeout=10)
            assert namesrv.route_info_manager.pick_topic_route_data("TBW102") is None
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
                proc.send_signal(signal.SIGCONT)
            await proc.wait()
