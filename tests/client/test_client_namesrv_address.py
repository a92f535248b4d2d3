"""A wrong name server address, over real sockets: one NameServerAddressError naming the address, with the
connection error as its cause, from every client (async and sync) and from the `pocketmq` command line."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MQClientException,
    NameServerAddressError,
    Producer,
    PullConsumer,
    PushConsumer,
)
from pocketmq.client.sync import SyncProducer, SyncPullConsumer, SyncPushConsumer
from pocketmq.remoting.errors import RemotingConnectError

INVALID_HOST = "no-such-host.invalid:9876"  # .invalid never resolves (RFC 2606)
MALFORMED = ["localhost", "localhost:port", ":9876", "localhost:70000"]


@pytest.fixture
def closed_port() -> Iterator[str]:
    """An address nothing listens on: a port the kernel gave us, released again."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    yield f"127.0.0.1:{port}"


def _listener(msgs: list[Any], context: Any) -> ConsumeConcurrentlyStatus:
    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def assert_names(error: BaseException, addr: str, cause: type[BaseException]) -> None:
    assert isinstance(error, NameServerAddressError)
    assert isinstance(error, MQClientException) and isinstance(error, RemotingConnectError)
    assert addr in str(error) and "\n" not in str(error)
    assert isinstance(error.__cause__, cause), repr(error.__cause__)
    assert addr in str(error)


async def test_producer_send_names_a_closed_port(closed_port: str) -> None:
    async with Producer("PG_addr", closed_port, instance_name="addr-p") as producer:
        with pytest.raises(NameServerAddressError) as caught:
            await producer.send(Message("TopicAddr", b"x"))
    assert_names(caught.value, closed_port, ConnectionRefusedError)
    assert "unreachable" in str(caught.value)


async def test_producer_send_names_a_host_that_does_not_resolve() -> None:
    async with Producer("PG_addr", INVALID_HOST, instance_name="addr-p2") as producer:
        with pytest.raises(NameServerAddressError) as caught:
            await producer.send(Message("TopicAddr", b"x"))
    assert_names(caught.value, INVALID_HOST, socket.gaierror)


async def test_pull_consumer_reports_the_same_error_as_the_producer(closed_port: str) -> None:
    async with Producer("PG_addr", closed_port, instance_name="addr-p3") as producer:
        with pytest.raises(NameServerAddressError) as sent:
            await producer.send(Message("TopicAddr", b"x"))
    async with PullConsumer("CG_addr", closed_port, instance_name="addr-c3") as consumer:
        with pytest.raises(NameServerAddressError) as pulled:
            await consumer.fetch_subscribe_message_queues("TopicAddr")
    assert str(pulled.value) == str(sent.value)
    assert_names(pulled.value, closed_port, ConnectionRefusedError)


async def test_push_consumer_start_fails_and_can_start_again(closed_port: str) -> None:
    consumer = PushConsumer("CG_addr_push", closed_port, instance_name="addr-push")
    consumer.subscribe("TopicAddr", "*")
    consumer.register_message_listener(_listener)
    with pytest.raises(NameServerAddressError) as caught:
        await consumer.start()
    assert_names(caught.value, closed_port, ConnectionRefusedError)
    with pytest.raises(NameServerAddressError):  # start() cleaned up: a second try fails the same way
        await consumer.start()


async def test_every_unreachable_name_server_is_named(closed_port: str) -> None:
    addrs = f"{closed_port};{INVALID_HOST}"
    async with PullConsumer("CG_addr", addrs, instance_name="addr-c4") as consumer:
        with pytest.raises(NameServerAddressError) as caught:
            await consumer.fetch_subscribe_message_queues("TopicAddr")
    message = str(caught.value)
    assert closed_port in message and INVALID_HOST in message and "Connection refused" in message
    assert isinstance(caught.value.__cause__, OSError)


@pytest.mark.parametrize("addr", MALFORMED)
def test_a_malformed_address_fails_at_construction(addr: str) -> None:
    for client in (Producer, PullConsumer, PushConsumer):
        with pytest.raises(NameServerAddressError) as caught:
            client("G_addr", addr)
        assert repr(addr) in str(caught.value)
        assert isinstance(caught.value.__cause__, ValueError)


def test_sync_wrappers_raise_the_same_error(closed_port: str) -> None:
    with (SyncProducer("PG_addr_sync", closed_port, instance_name="addr-sp") as producer,
          pytest.raises(NameServerAddressError) as sent):
        producer.send(Message("TopicAddr", b"x"))
    assert_names(sent.value, closed_port, ConnectionRefusedError)
    with (SyncPullConsumer("CG_addr_sync", closed_port, instance_name="addr-sc") as consumer,
          pytest.raises(NameServerAddressError) as pulled):
        consumer.fetch_subscribe_message_queues("TopicAddr")
    assert str(pulled.value) == str(sent.value)
    push = SyncPushConsumer("CG_addr_sync_push", closed_port, instance_name="addr-spush")
    push.subscribe("TopicAddr")
    push.register_message_listener(_listener)
    with pytest.raises(NameServerAddressError) as started:
        push.start()
    assert_names(started.value, closed_port, ConnectionRefusedError)
    with pytest.raises(NameServerAddressError):
        SyncProducer("PG_addr_sync", "nonsense")


# --- the command line --------------------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pocketmq", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["closed port", "invalid host", "malformed"])
def test_cli_send_and_consume_print_one_line_and_fail(kind: str, closed_port: str) -> None:
    addr = {"closed port": closed_port, "invalid host": INVALID_HOST, "malformed": "localhost"}[kind]
    sent = cli("send", "-n", addr, "-t", "TopicAddr", "-p", "x")
    consumed = cli("consume", "-n", addr, "-t", "TopicAddr")
    for command, result in (("send", sent), ("consume", consumed)):
        assert result.returncode == 1
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr  # no traceback, no log lines
        assert lines[0].startswith(f"pocketmq {command}: NameServerAddressError: name server ")
        assert addr in lines[0]
    # Both commands describe the mistake in the same words.
    assert sent.stderr.split(":", 1)[1] == consumed.stderr.split(":", 1)[1]
    if kind == "closed port":
        assert "Connection refused" in sent.stderr


def test_cli_broker_rejects_a_malformed_address(tmp_path: Any) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'store'}\nlistenPort=0\n")
    result = cli("broker", "-c", str(conf), "-n", "localhost", "--print-config")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "name server 'localhost' is not an address" in lines[0], result.stderr


async def test_a_connect_that_times_out_names_the_address() -> None:
    # A listener that never accepts, its backlog already full: Linux drops further SYNs, so connecting hangs
    # until connect_timeout (a name server host that swallows packets looks the same).
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        addr = f"127.0.0.1:{server.getsockname()[1]}"
        fillers = [socket.socket() for _ in range(3)]
        try:
            for s in fillers:
                s.setblocking(False)
                s.connect_ex(server.getsockname())
            async with Producer("PG_addr", addr, instance_name="addr-t", connect_timeout=0.3) as producer:
                with pytest.raises(NameServerAddressError) as caught:
                    await producer.send(Message("TopicAddr", b"x"))
        finally:
            for s in fillers:
                s.close()
    assert_names(caught.value, addr, TimeoutError)
    assert "timed out" in str(caught.value)
