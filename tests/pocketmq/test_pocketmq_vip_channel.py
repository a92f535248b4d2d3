"""The broker's VIP channel (listenPort - 2, where Java clients with vipChannelEnabled send): listened on with a
fixed port, not with port 0, warned about and left out when taken; `pocketmq broker` and `pocketmq dev` say which.
(The Java client against it and Apache RocketMQ: tests/java_client/test_vip_channel.py.)"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from pocketmq import EmbeddedCluster
from pocketmq.broker.vip_channel import MAIN_PORT_ONLY
from pocketmq.client import Message, Producer, SendStatus
from pocketmq.remoting.client import RemotingClient
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from tests.apache.apache_rocketmq import free_port

CLI = [sys.executable, "-m", "pocketmq"]


@pytest.fixture
def port() -> int:
    return free_port(-2, 0)


@pytest.fixture
def vip_taken(port: int) -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", port - 2)) as holder:
        yield holder


async def test_a_fixed_port_brings_the_vip_channel_two_below_and_port_zero_none(tmp_path, port) -> None:
    async with EmbeddedCluster(tmp_path / "fixed", listen_port=port) as cluster:
        assert cluster.broker is not None
        server = cluster.broker.remoting_server
        assert server.vip_address == f"127.0.0.1:{port - 2}" and server.vip_error is None
        # The main port's pulls and pops reach their processors as registered: the refusals cost them nothing.
        broker = cluster.broker
        assert server._inline_processors[RequestCode.PULL_MESSAGE] == broker.pull_message_processor.process_inline
        assert server._processors[RequestCode.POP_MESSAGE] == broker.pop_message_processor.process_request
        client = RemotingClient()
        try:
            request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {})
            assert (await client.invoke(server.vip_address, request, 10.0)).code == ResponseCode.SUCCESS
            # What Apache 5.5.0 serves on its main port only (its fast server's default processor refuses them).
            for code in MAIN_PORT_ONLY:
                answer = await client.invoke(server.vip_address, RemotingCommand.request(code, {}), 10.0)
                assert (answer.code, answer.remark) == (ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                                        f" request type {code} not supported")
        finally:
            await client.close()
    async with EmbeddedCluster(tmp_path / "free") as cluster:
        assert cluster.broker is not None
        assert cluster.broker.remoting_server.vip_address is None
        assert cluster.broker.remoting_server.vip_error is None


async def test_a_taken_vip_port_leaves_the_broker_serving_its_main_port(tmp_path, port, vip_taken, caplog) -> None:
    async with EmbeddedCluster(tmp_path, listen_port=port) as cluster:
        assert cluster.broker is not None and cluster.broker.port == port
        server = cluster.broker.remoting_server
        assert server.vip_address is None and server.vip_error == "Address already in use"
        assert f"VIP channel port 127.0.0.1:{port - 2} not bound (Address already in use)" in caplog.text
        async with Producer("p", cluster.namesrv_addr) as producer:  # (pocketmq's client: the main port)
            sent = await producer.send(Message("VipTaken", b"body"))
        assert sent.send_status is SendStatus.SEND_OK


def test_broker_prints_that_its_vip_port_was_taken(tmp_path, port, vip_taken) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'store'}\nlistenPort={port}\nbrokerIP1=127.0.0.1\n"
                    "mappedFileSizeCommitLog=1048576\nmappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=64\n"
                    "maxIndexNum=256\n")
    lines = startup_lines([*CLI, "broker", "-c", str(conf)], "listening on")
    assert f"listening on 127.0.0.1:{port}," in lines[0], lines
    assert (f"pocketmq broker broker-a: no VIP channel: port {port - 2} not bound (Address already in use); Java "
            "clients with vipChannelEnabled cannot send to this broker") in lines, lines


def test_dev_prints_its_vip_port(tmp_path, port) -> None:
    lines = startup_lines([*CLI, "dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port",
                           str(port), "--no-console", "--no-grpc"], "pocketmq dev: name server")
    assert f"broker broker-a at 127.0.0.1:{port}" in lines[0], lines
    assert f"  VIP channel: 127.0.0.1:{port - 2}  (Java clients with vipChannelEnabled)" in lines, lines


def startup_lines(argv: list[str], ready: str) -> list[str]:
    """What the process prints until it is stopped (Ctrl-C) once a line with ``ready`` in it came."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if ready in line:
                break
    finally:
        proc.send_signal(signal.SIGINT)
        lines += proc.stdout.read().splitlines()  # (not communicate(): it would miss what the iteration read ahead)
        proc.wait(30)
    assert proc.returncode == 0, lines
    return lines
