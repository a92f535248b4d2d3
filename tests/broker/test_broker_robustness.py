"""The broker survives bad clients, and starts/stops cleanly in process and from the command line."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import struct
import sys
from pathlib import Path

import msgpack
import pytest

from pocketmq.broker import BrokerConfig, BrokerController
from pocketmq.common.codec import decode_all
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.transport import parse_address
from pocketmq.storage import StoreLockedError

REPO = Path(__file__).resolve().parents[2]


async def test_malformed_frame_from_one_client_does_not_disturb_another(broker, mq, dispatched) -> None:
    host, port = parse_address(broker.address)
    reader, writer = await asyncio.open_connection(host, port)
    # A complete frame whose payload is a map without the required fields, then pure garbage.
    bad = msgpack.packb({"code": "ten", "opaque": 7, "flag": 0})
    writer.write(struct.pack(">I", len(bad)) + bad)
    await writer.drain()
    reply = await asyncio.wait_for(reader.read(65536), 5.0)
    writer.write(b"\x00\x00\x00\x05\xc1\xc1\xc1\xc1\xc1")
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    # The bad connection gets an error (or is simply closed); the good one goes on working.
    assert reply == b"" or b"malformed" in reply
    assert (await mq.send("TopicRobust", b"still here")).code == ResponseCode.SUCCESS
    await dispatched(broker)
    resp = await mq.pull("G", "TopicRobust", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"still here"]
    writer.close()


async def test_every_processor_answers_garbage_headers_without_crashing(broker, mq) -> None:
    codes = sorted(broker.remoting_server._processors)
    assert RequestCode.PULL_MESSAGE in codes and RequestCode.SEND_MESSAGE_V2 in codes
    garbage = {"topic": 5, "queueId": "x", "consumerGroup": 1.5, "a": True, "offset": "1e9", "b": ""}
    for code in codes:
        for ext in ({}, garbage):
            resp = await mq.invoke(code, ext, body=b"\xc1garbage")
            assert resp.is_response and resp.code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED, code
    assert (await mq.send("TopicAfterGarbage")).code == ResponseCode.SUCCESS


async def test_unknown_request_code(broker, mq) -> None:
    resp = await mq.invoke(9999)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    # RocketMQ 5's GET_TIMER_CHECK_POINT and GET_TIMER_METRICS (docs/compatibility.md lists them as not implemented)
    for code in (60, 61):
        resp = await mq.invoke(code)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert resp.remark == f" request type {code} not supported"


@pytest.mark.both_loops
async def test_clean_shutdown_leaves_no_abort_file_and_restarts(cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    await mq.send("TopicRestart", b"durable")
    root = broker.broker_config.store_root
    assert os.path.exists(os.path.join(root, "abort"))
    broker = await cluster.restart(broker)
    assert broker.store.last_exit_ok  # the previous run left no abort file
    mq = cluster.mq(broker)
    resp = await mq.pull("G", "TopicRestart", 0, 0)
    assert [m.body for m in decode_all(resp.body)] == [b"durable"]
    await broker.shutdown()
    assert not os.path.exists(os.path.join(root, "abort"))


async def test_cli_boots_and_shuts_down_cleanly_on_ctrl_c(tmp_path) -> None:
    store = tmp_path / "store"
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"storePathRootDir={store}\nlistenPort=0\nmappedFileSizeCommitLog=1048576\n"
        "mappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=64\nmaxIndexNum=256\n"
        "bindAddress=127.0.0.1\nbrokerIP1=192.0.2.2\n"  # (told to clients: not where it listens)
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "pocketmq", "broker", "-c", str(conf),
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 20.0)
        assert re.search(rb"listening on 127\.0\.0\.1:\d+ \(clients are told 192\.0\.2\.2:\d+\)", line), line
        assert (store / "abort").exists()
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 20.0)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert b"shut down cleanly" in out
    assert not (store / "abort").exists()


async def test_a_second_broker_on_the_same_store_fails_to_start_and_harms_nothing(cluster, broker, mq) -> None:
    twin = BrokerController(BrokerConfig(**vars(broker.broker_config)))
    with pytest.raises(StoreLockedError):
        await twin.start()
    await twin.shutdown()  # a no-op after a failed start
    assert (await mq.send("TopicTwin", b"ok")).code == ResponseCode.SUCCESS
