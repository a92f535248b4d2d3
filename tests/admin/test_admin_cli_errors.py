"""The CLI against brokers and name servers that cannot be reached or do not answer, and its refusal of option
values it cannot use: each command fails within its --timeout with one line naming what did not answer. A frozen
broker is a socket registered at the name server as a broker that accepts connections and never answers (as a
SIGSTOPped broker process does)."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from pocketmq.broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI
from pocketmq.cli import main
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.body import TopicConfig
from pocketmq.remoting.topic_config import TopicConfigSerializeWrapper

FROZEN_TOPICS = [f"FrozenT{i}" for i in range(3)]


class FrozenBroker:
    """A listening socket whose connections are accepted, read and never answered."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn = self.server.accept()[0]
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    @staticmethod
    def _drain(conn: socket.socket) -> None:
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass

    def close(self) -> None:
        self.server.close()
        for c in self.conns:
            c.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("admin-cli-errors")) as c:
        yield c


@pytest.fixture(scope="module")
def frozen(cluster: ThreadedCluster) -> Iterator[FrozenBroker]:
    """A broker 'broker-frozen' of cluster Frozen holding FROZEN_TOPICS, registered for as long as the module runs
    (the name server forgets a broker whose connection closes)."""
    broker = FrozenBroker()
    outer = BrokerOuterAPI()

    async def register() -> None:
        table = {t: TopicConfig(t, 2, 2) for t in FROZEN_TOPICS}
        body = await outer.encode_body(TopicConfigSerializeWrapper(table))
        await outer.register(cluster.namesrv_addr, BrokerIdentity("Frozen", "broker-frozen", 0, broker.addr), body)

    cluster._call(register())
    yield broker
    cluster._call(outer.close())
    broker.close()


def test_send_to_a_frozen_broker_fails_within_its_timeout(cluster: ThreadedCluster, frozen: FrozenBroker,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # --timeout is the send's timeout too (it was 3 s whatever --timeout said), and the producer's exit waits a
    # short while for the broker to forget it, not another --timeout.
    code = main(["sendMessage", "-n", cluster.namesrv_addr, "-t", FROZEN_TOPICS[0], "-p", "x", "--timeout", "2"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert code == 1 and last.startswith("pocketmq sendMessage: timed out:") and "timeout (2" in last, last


def test_consume_from_a_frozen_broker_fails_within_its_timeout(cluster: ThreadedCluster, frozen: FrozenBroker,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["consumeMessage", "-n", cluster.namesrv_addr, "-t", FROZEN_TOPICS[1], "-c", "1", "--timeout", "1"])
    last = capsys.readouterr().err.splitlines()[-1]
    assert code == 1 and last.startswith("pocketmq consumeMessage: timed out:") and "the 1s timeout" in last, last


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "abc"])
def test_a_timeout_that_is_no_positive_number_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["topicList", "-n", "127.0.0.1:1", f"--timeout={value}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument --timeout: expected a positive number of seconds, got '{value}'" in err


@pytest.mark.parametrize("count", ["0", "-1"])
def test_consume_refuses_a_message_number_below_one(count: str, cluster: ThreadedCluster,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["consumeMessage", "-n", cluster.namesrv_addr, "-t", "AnyT", "-c", count])
    out, err = capsys.readouterr()
    assert (code, out, err) == (1, "", "pocketmq consumeMessage: MQClientException: Please input a positive "
                                       "messageNumber!\n")


def test_a_timestamp_past_a_java_long_is_refused_by_its_option(cluster: ThreadedCluster,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    big = "9" * 23
    code = main(["resetOffsetByTime", "-n", cluster.namesrv_addr, "-t", "AnyT", "-g", "AnyG", "-s", big])
    assert code == 1 and capsys.readouterr().err == (
        f"pocketmq resetOffsetByTime: ValueError: -s {big}: out of range (epoch ms up to {2**63 - 1})\n")
    code = main(["consumeMessage", "-n", cluster.namesrv_addr, "-t", "AnyT", "-e", big])
    assert code == 1 and f"ValueError: -e {big}: out of range" in capsys.readouterr().err


def test_topic_list_asks_a_frozen_broker_once_and_names_it(cluster: ThreadedCluster, frozen: FrozenBroker,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # Each of the frozen broker's topics asked it for its consumer groups (--timeout each, the error swallowed).
    code = main(["topicList", "-n", cluster.namesrv_addr, "-c", "--timeout", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and len(err.splitlines()) == 1 and err.startswith(
        f"pocketmq topicList: broker-frozen ({frozen.addr}) did not answer; its topics are listed without their "
        f"consumer groups (no response from {frozen.addr} within "), err
    assert all(["Frozen", t] in [line.split() for line in out.splitlines()] for t in FROZEN_TOPICS), out


def test_a_long_list_of_dead_name_servers_makes_a_short_line(capsys: pytest.CaptureFixture[str]) -> None:
    ports = []
    for _ in range(12):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])  # closed again: nothing listens there
    code = main(["clusterList", "-n", ";".join(f"127.0.0.1:{p}" for p in ports)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("Connection refused") == 5 and err.endswith("; and 7 more)\n"), err


def test_a_timeout_is_printed_rounded(cluster: ThreadedCluster, frozen: FrozenBroker,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["topicList", "-n", cluster.namesrv_addr, "-c", "--timeout", "0.3"])
    # (what is left of the 0.3 s when the request goes out: 0.3 or a hundredth or two less, never 0.2989999...)
    assert code == 0 and re.search(r"within 0\.[0-3]\d?s \(code", capsys.readouterr().err)


def test_a_name_server_that_does_not_answer_in_time_is_reported_with_the_timeout_given() -> None:
    # (it said "within 0.01s (... hung)" for --timeout 0.001: another figure, and a healthy name server blamed,
    # after a log line "did not answer within 0.000s; asking the next one" with no next one to ask)
    namesrv = FrozenBroker()  # (accepts and never answers, as a name server given too little time)
    try:
        done = subprocess.run([sys.executable, "-m", "pocketmq", "clusterList", "-n", namesrv.addr, "--timeout", "0.3"],
                              capture_output=True, text=True, timeout=60)
    finally:
        namesrv.close()
    assert done.returncode == 1 and done.stderr == (
        f"pocketmq clusterList: timed out: no name server answered: the timeout of 0.3s ran out waiting for "
        f"{namesrv.addr}\n"), done.stderr


def test_unreachable_name_server_is_named_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    code = main(["clusterList", "-n", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err
    assert code == 1 and err == (
        f"pocketmq clusterList: NameServerAddressError: name server 127.0.0.1:{port} unreachable: Connection refused\n"
    )


def test_a_silent_name_server_times_out_once(capsys: pytest.CaptureFixture[str]) -> None:
    # A server that accepts and never answers: the command fails after its --timeout, not twice that.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True).start()
    try:
        started = time.monotonic()
        code = main(["topicList", "-n", f"127.0.0.1:{server.getsockname()[1]}", "--timeout", "0.3"])
        elapsed = time.monotonic() - started
    finally:
        for c in accepted:
            c.close()
        server.close()
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("pocketmq topicList: timed out:") and len(err.splitlines()) == 1
    assert elapsed < 0.6 * 2  # (a bound against a doubled timeout, not a timing measurement)
