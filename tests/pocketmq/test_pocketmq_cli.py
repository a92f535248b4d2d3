"""`pocketmq dev`, `send` and `consume` (mqadmin's sendMessage and consumeMessage) as separate processes, the way a
developer runs them."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

CLI = [sys.executable, "-m", "pocketmq"]


@pytest.fixture
def dev_server(tmp_path):
    proc = subprocess.Popen([*CLI, "dev", "--no-console", "--store", str(tmp_path / "dev"), "--namesrv-port", "0",
                             "--broker-port", "0", "--grpc-port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    first = proc.stdout.readline()
    match = re.search(r"name server (\S+), broker \S+ at (\S+)", first)
    if not match:
        proc.kill()
        pytest.fail(f"unexpected first line from pocketmq dev: {first!r} {proc.stdout.read()}")
    yield proc, match.group(1), tmp_path / "dev" / "store"
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_dev_send_consume_and_clean_shutdown(dev_server):
    proc, namesrv, store = dev_server
    for _ in range(2):
        sent = run("send", "-n", namesrv, "-t", "CliTopic", "-p", "hello cli", "-c", "TagA", "-k", "order-1")
        assert sent.returncode == 0, sent.stderr
        assert "SEND_OK" in sent.stdout

    got = run("consume", "-n", namesrv, "-t", "CliTopic", "-c", "2")
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.count("BODY: hello cli") == 2
    assert got.stdout.count("TAGS=TagA") == 2 and got.stdout.count("KEYS=order-1") == 2
    # consumeMessage commits nothing: the same messages again.
    again = run("consumeMessage", "-n", namesrv, "-t", "CliTopic", "-c", "2")
    assert again.returncode == 0 and again.stdout.count("BODY: hello cli") == 2

    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
    assert not os.path.exists(store / "abort")  # Ctrl-C shut the store down cleanly


def test_dev_serves_the_grpc_endpoint_for_5x_sdks(dev_server):
    import grpc
    from rocketmq.grpc_protocol import definition_pb2, service_pb2, service_pb2_grpc

    proc, namesrv, _ = dev_server
    line = proc.stdout.readline()
    match = re.search(r"gRPC:\s+(\S+)\s+\(RocketMQ 5 SDKs; TLS permissive\)", line)
    assert match, line
    assert run("send", "-n", namesrv, "-t", "FromCli", "-p", "x").returncode == 0
    with grpc.insecure_channel(match.group(1)) as channel:
        answer = service_pb2_grpc.MessagingServiceStub(channel).QueryRoute(
            service_pb2.QueryRouteRequest(topic=definition_pb2.Resource(name="FromCli")),
            metadata=(("x-mq-client-id", "cli-test"),), timeout=10)
    assert answer.status.code == definition_pb2.Code.OK and len(answer.message_queues) == 4


def test_the_commands_dev_suggests_run_as_printed(dev_server):
    # From the user's shell: `pocketmq` alone when it is on PATH, else the virtualenv's script.
    proc, namesrv, _ = dev_server
    lines = [proc.stdout.readline() for _ in range(5)]
    tried = [line.split(":", 1)[1].split() for line in lines if line.strip().startswith("try:")]
    assert tried and tried[0][1:] == ["sendMessage", "-n", namesrv, "-t", "TopicTest", "-p", "hello"], lines
    sent = subprocess.run(tried[0], capture_output=True, text=True, timeout=60)
    assert sent.returncode == 0 and "SEND_OK" in sent.stdout, sent.stdout + sent.stderr


def dev_imports(tmp_path, *options: str) -> set[str]:
    """The modules `pocketmq dev` (no console) loads from its start until it stops, read from ``-X importtime``."""
    log = tmp_path / "importtime.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "pocketmq", "dev", "--no-console",
                                 "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
                                 "--grpc-port", "0", *options], stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            out = []
            for line in proc.stdout:  # (to the ready line; the end of the output if it never comes)
                out.append(line)
                if "stops it cleanly" in line:
                    break
            assert "stops it cleanly" in out[-1], out
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0
    lines = [line.split("|") for line in log.read_text().splitlines() if line.startswith("import time:")]
    return {fields[2].strip() for fields in lines if len(fields) == 3}


def under(modules: set[str], *packages: str) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_dev_loads_no_admin_command_and_of_the_client_only_what_the_grpc_endpoint_uses(tmp_path):
    """`pocketmq dev` runs servers: mqadmin's commands, the client's producer, consumers, admin and trace rooms
    (most of a start's import time) stay unloaded; the gRPC endpoint uses the client's request API alone, and
    makes its self-signed certificate without a cryptography library."""
    modules = dev_imports(tmp_path)
    assert {"pocketmq.broker.broker_controller", "pocketmq.namesrv.namesrv_controller",
            "pocketmq.proxy.proxy_startup", "pocketmq.client.impl.mq_client_api"} <= modules
    assert under(modules, "pocketmq.admin_cli", "pocketmq.console", "pocketmq.client.producer",
                 "pocketmq.client.admin", "pocketmq.client.trace", "pocketmq.client.impl.mq_client_instance",
                 "pocketmq.client.impl.mq_admin", "pocketmq.client.impl.consumer.push_consumer_impl",
                 "pocketmq.client.consumer.push_consumer", "pocketmq.client.consumer.pull_consumer",
                 "pocketmq.client.consumer.lite_pull_consumer", "pocketmq.client.sync", "cryptography",
                 "pocketmq.common.sql92") == []


def test_dev_without_grpc_loads_no_client_and_no_grpc(tmp_path):
    modules = dev_imports(tmp_path, "--no-grpc")
    assert "pocketmq.broker.broker_controller" in modules
    assert under(modules, "pocketmq.client", "pocketmq.proxy", "pocketmq.admin_cli", "grpc", "cryptography") == []


def test_the_full_command_line_still_lists_every_command():
    out = run("--help")
    assert out.returncode == 0
    assert all(name in out.stdout for name in ("dev", "namesrv", "broker", "console", "sendMessage", "clusterList"))
    assert run("sendMessage", "--help").returncode == 0


def test_send_and_consume_are_mqadmins_commands_under_short_names():
    """One front door: `send` / `consume` parse to the very command sendMessage / consumeMessage run."""
    from pocketmq.cli import build_parser

    parse = build_parser().parse_args
    for short, long, args in (("send", "sendMessage", ["-t", "T", "-p", "x", "-k", "k1", "-c", "TagA"]),
                              ("consume", "consumeMessage", ["-t", "T", "-c", "3", "-g", "G"])):
        a, b = vars(parse([short, *args])), vars(parse([long, *args]))
        assert (a.pop("command"), b.pop("command")) == (short, long)
        assert a == b
    with pytest.raises(SystemExit):  # the old commands' own options are gone
        parse(["consume", "-t", "T", "--wait", "1"])


def test_send_and_consume_with_the_rocketmq_protocol(tmp_path, capsys):
    """`--protocol rocketmq`: every connection the commands open is a native one (the servers' ends say so), and
    what one protocol sent the other reads."""
    from pocketmq.cli import main
    from pocketmq.embedded import ThreadedCluster
    from pocketmq.remoting.wire_protocol import WireProtocol

    with ThreadedCluster(tmp_path) as cluster:
        addr = cluster.namesrv_addr
        seen: list[tuple[str, WireProtocol]] = []  # (server, protocol) of each connection that closed
        for name, server in (("namesrv", cluster.cluster.namesrv.remoting_server),
                             ("broker", cluster.cluster.broker.remoting_server)):
            server.on_channel_close(lambda ch, name=name: seen.append((name, ch.protocol)))
        for _ in range(2):
            assert main(["send", "-n", addr, "-t", "CliNative", "-p", "native hello", "-c", "TagN",
                         "--protocol", "rocketmq"]) == 0
        assert main(["consume", "-n", addr, "-t", "CliNative", "-c", "2", "--protocol", "rocketmq"]) == 0
        # The commands closed their connections (to the name server and the broker) on the way out.
        for _ in range(3000):
            if {name for name, _ in seen} == {"namesrv", "broker"} and len(seen) >= 4:
                break
            time.sleep(0.01)
        native = list(seen)
        assert main(["consume", "-n", addr, "-t", "CliNative", "-c", "2"]) == 0  # msgpack
    out = capsys.readouterr().out
    assert out.count("SEND_OK") == 2
    assert out.count("TAGS=TagN") == 4 and out.count("BODY: native hello") == 4
    assert {name for name, _ in native} == {"namesrv", "broker"}
    assert {protocol for _, protocol in native} == {WireProtocol.NATIVE}


def test_an_unknown_protocol_is_a_usage_error():
    out = run("send", "-n", "127.0.0.1:9876", "-t", "T", "-p", "x", "--protocol", "native")
    assert out.returncode == 2
    assert "invalid choice: 'native' (choose from 'msgpack', 'rocketmq')" in out.stderr


def test_namesrv_says_it_shut_down_on_sigterm_as_the_broker_does():
    proc = subprocess.Popen([*CLI, "namesrv", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert re.match(r"pocketmq name server listening on 127\.0\.0\.1:\d+$", proc.stdout.readline())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out == "pocketmq name server shut down cleanly\n"


def test_namesrv_command_line_options():
    from pocketmq.cli import build_parser, namesrv_config
    from pocketmq.namesrv.config import NamesrvConfig

    parse = build_parser().parse_args
    cfg = namesrv_config(parse(["namesrv", "--host", "0.0.0.0", "--port", "0", "--scan-interval", "0.5",
                                "--broker-expire", "3"]))
    assert (cfg.listen_host, cfg.listen_port) == ("0.0.0.0", 0)
    assert (cfg.scan_not_active_broker_interval, cfg.broker_channel_expired_time) == (0.5, 3.0)
    assert namesrv_config(parse(["namesrv"])) == NamesrvConfig(listen_host="127.0.0.1", listen_port=9876)
    assert namesrv_config(parse(["namesrv", "--acl-file", "/etc/acl.yml"])).acl_file == "/etc/acl.yml"


def test_broker_print_config(tmp_path):
    conf = tmp_path / "b.conf"
    conf.write_text("brokerName=broker-x\nlistenPort=0\n")
    out = run("broker", "-c", str(conf), "-p")
    assert out.returncode == 0, out.stderr
    assert "brokerName=broker-x" in out.stdout and "listenPort=0" in out.stdout


def test_dev_with_access_control_and_signed_commands(tmp_path):
    """`pocketmq dev -c` with aclEnable: the in-process name server takes the broker's signed registration, and
    `send`/`consume` need --access-key/--secret-key."""
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("accounts:\n"
                   "  - accessKey: devAdmin1\n    secretKey: devSecret1\n    admin: true\n"
                   "  - accessKey: cliUser01\n    secretKey: cliSecret1\n    defaultTopicPerm: PUB|SUB\n"
                   "    defaultGroupPerm: SUB\n")
    conf = tmp_path / "broker.conf"
    conf.write_text(f"aclEnable=true\naclFile={acl}\naccessKey=devAdmin1\nsecretKey=devSecret1\n")
    proc = subprocess.Popen([*CLI, "dev", "--no-console", "--store", str(tmp_path / "dev"), "--namesrv-port", "0",
                             "--broker-port", "0", "--grpc-port", "0", "-c", str(conf)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        match = re.search(r"name server (\S+), broker", first)
        assert match, first + proc.stdout.read()
        namesrv = match.group(1)
        grpc_line = proc.stdout.readline()
        endpoint = re.search(r"gRPC:\s+(\S+)", grpc_line)
        assert endpoint, grpc_line
        # The topic is created on the first send (TBW102): an admin's send does that.
        assert run("send", "-n", namesrv, "-t", "AclCli", "-p", "x", "--access-key", "devAdmin1",
                   "--secret-key", "devSecret1").returncode == 0
        anonymous = run("send", "-n", namesrv, "-t", "AclCli", "-p", "hello")
        assert anonymous.returncode == 1 and "No accessKey is configured" in anonymous.stderr
        keys = ["--access-key", "cliUser01", "--secret-key", "cliSecret1"]
        sent = run("send", "-n", namesrv, "-t", "AclCli", "-p", "signed hello", *keys)
        assert sent.returncode == 0 and "SEND_OK" in sent.stdout, sent.stderr
        got = run("consume", "-n", namesrv, "-t", "AclCli", "-c", "2", *keys)
        assert got.returncode == 0 and "BODY: signed hello" in got.stdout, got.stdout + got.stderr
        # The gRPC endpoint checks its callers against the same accounts: an unsigned call is refused by it.
        assert grpc_unsigned_send(endpoint.group(1), "AclCli") == "UNAUTHORIZED"
        # The commands dev suggests, signed the way its note says, run as printed.
        ready: list[str] = []
        while not ready or "stops it cleanly" not in ready[-1]:  # (printed before the first send above ran)
            ready.append(proc.stdout.readline())
            assert ready[-1], ready  # (not the end of its output)
        tried = [line.split(":", 1)[1].split() for line in ready if line.strip().startswith("try:")]
        assert tried and any(f"signed by an account of {acl}" in line for line in ready), ready
        signed = subprocess.run(tried[0], capture_output=True, text=True, timeout=60,
                                env={**os.environ, "POCKETMQ_ACCESS_KEY": "cliUser01",
                                     "POCKETMQ_SECRET_KEY": "cliSecret1"})
        assert signed.returncode == 0 and "SEND_OK" in signed.stdout, signed.stdout + signed.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)


def grpc_unsigned_send(endpoint: str, topic: str) -> str:
    """The status name of an unsigned SendMessage."""
    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as d
    from rocketmq.grpc_protocol import service_pb2, service_pb2_grpc

    message = d.Message(topic=d.Resource(name=topic), body=b"unsigned", system_properties=d.SystemProperties(
        message_id="0102FC0000000171190B1C3CCC00000001", message_type=d.MessageType.NORMAL))
    with grpc.insecure_channel(endpoint) as channel:
        answer = service_pb2_grpc.MessagingServiceStub(channel).SendMessage(
            service_pb2.SendMessageRequest(messages=[message]), metadata=(("x-mq-client-id", "cli-test"),),
            timeout=10)
    return str(d.Code.Name(answer.status.code))


def test_a_server_freezes_what_its_start_made():
    """freeze_start_up_objects, which the server commands call once they serve (runtime.py says why): what is
    alive leaves the collector's walks, and the start's garbage with it, uncollected."""
    import gc
    import weakref

    from pocketmq.runtime import freeze_start_up_objects

    class Node:
        pass

    gc.disable()  # (no automatic collection may free the cycle before the freeze)
    garbage, kept = Node(), Node()
    garbage.me = garbage  # a cycle only the collector frees
    gone = weakref.ref(garbage)
    del garbage
    try:
        assert gc.get_freeze_count() == 0
        freeze_start_up_objects()
        assert gone() is not None  # frozen, not collected: no full walk before the server is ready
        assert gc.get_freeze_count() > 0
        assert not any(obj is kept for obj in gc.get_objects())  # the live ones are out of the collector's walks
    finally:
        gc.unfreeze()
        gc.enable()
    assert any(obj is kept for obj in gc.get_objects())


def test_dev_with_a_config_file_keeps_the_files_port_store_and_address(tmp_path):
    # The options' defaults were passed over the file: a -c file's listenPort, storePathRootDir and brokerIP1
    # were ignored, and `dev` started an empty broker on 10911 beside the store the file named.
    from pocketmq.cli import _dev_broker_config, build_parser

    conf = tmp_path / "b.conf"
    conf.write_text(f"listenPort=55745\nstorePathRootDir={tmp_path / 'mine'}\nbrokerIP1=127.0.0.2\n")
    parse = build_parser().parse_args
    cfg = _dev_broker_config(parse(["dev", "-c", str(conf)]))
    assert (cfg.listen_port, cfg.store_path_root_dir, cfg.broker_ip1) == (55745, str(tmp_path / "mine"), "127.0.0.2")
    given = _dev_broker_config(parse(["dev", "-c", str(conf), "--broker-port", "0", "--store", str(tmp_path / "s"),
                                      "--host", "127.0.0.3"]))
    assert (given.listen_port, given.store_path_root_dir, given.broker_ip1) == (0, str(tmp_path / "s" / "store"),
                                                                              "127.0.0.3")
    plain = _dev_broker_config(parse(["dev"]))
    assert (plain.listen_port, plain.store_path_root_dir, plain.broker_ip1) == (
        10911, os.path.join(os.path.abspath(".pocketmq"), "store"), "127.0.0.1")


@pytest.mark.parametrize("args", [["namesrv", "--port", "75412"], ["dev", "--broker-port", "70000"],
                                  ["dev", "--grpc-port", "-1"], ["console", "-n", "x:1", "--port", "65536"]])
def test_a_port_out_of_range_is_a_usage_error(args):
    # uvloop wrapped a port past 65535 round: `namesrv --port 75412` listened on 9876.
    out = run(*args)
    assert out.returncode == 2 and "out of range 0-65535" in out.stderr, out.stderr


def test_a_config_file_port_out_of_range_is_refused(tmp_path):
    conf = tmp_path / "b.conf"
    conf.write_text("listenPort=99999\n")
    out = run("broker", "-c", str(conf), "-p")
    assert out.returncode != 0 and "listenPort 99999 is out of range 0-65535" in out.stderr, out.stderr


@pytest.mark.parametrize("command, option", [
    (["dev", "--namesrv-port", "{port}"], "--namesrv-port"),
    (["dev", "--namesrv-port", "0", "--broker-port", "{port}"], "--broker-port"),
    (["namesrv", "--port", "{port}"], "--port"),
    (["broker", "-c", "{conf}"], "listenPort in "),
    (["console", "-n", "127.0.0.1:1", "--port", "{port}"], "--port"),
])
def test_a_port_in_use_names_the_option_that_moves_it(tmp_path, command, option):
    # A second `make run`, or a RocketMQ on 9876, was "OSError: [Errno 98] error while attempting to bind on
    # address ('127.0.0.1', 9876): address already in use", which says neither what holds it nor what to change.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        conf = tmp_path / "broker.conf"
        conf.write_text(f"listenPort={port}\nstorePathRootDir={tmp_path / 'b'}\nnamesrvAddr=127.0.0.1:1\n")
        args = [a.format(port=port, conf=conf) for a in command]
        out = run(*args, "--no-console", "--no-grpc", "--store", str(tmp_path / "dev")) if args[0] == "dev" \
            else run(*args)
    assert out.returncode == 1, out.stderr
    assert f"pocketmq {args[0]}: PortInUseError: " in out.stderr and f"port {port} is already in use" in out.stderr
    assert f"choose another port with {option}" in out.stderr, out.stderr


def test_dev_without_its_console_or_grpc_port_names_the_option_and_runs(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        proc = subprocess.Popen([*CLI, "dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port",
                                 "0", "--console-port", port, "--grpc-port", port], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            lines = []
            for line in proc.stdout:
                lines.append(line)
                if "Ctrl-C" in line:
                    break
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    out = "".join(lines)
    assert f"no console: could not serve the console on port {port} (--console-port): " in out, out
    assert f"no gRPC endpoint: could not serve gRPC on port {port} (--grpc-port): " in out, out


def test_dev_that_fails_after_its_broker_started_stops_it_cleanly(tmp_path):
    # A gRPC start that failed with anything but OSError left the process without shutting the broker down: the
    # abort file stayed, and the next start ran abnormal recovery.
    out = run("dev", "--no-console", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
              "--grpc-port", "0", "--tls-cert", str(tmp_path / "cert.pem"))  # (a certificate without its key)
    assert out.returncode != 0 and "needs both its file and its key file" in out.stderr, out.stderr
    assert os.path.exists(tmp_path / "dev" / "store")
    assert not os.path.exists(tmp_path / "dev" / "store" / "abort")


def test_a_reader_that_goes_away_ends_a_command_quietly(tmp_path):
    """`pocketmq getBrokerConfig ... | head`: the reader closing the pipe was "pocketmq getBrokerConfig:
    BrokenPipeError" and exit status 1; it is now exit status 141 with nothing on stderr, as a shell's tools end."""
    from pocketmq.embedded import ThreadedCluster

    with ThreadedCluster(tmp_path) as cluster:
        read_end, write_end = os.pipe()
        os.close(read_end)  # (gone before the command writes a byte)
        try:
            proc = subprocess.run([*CLI, "getBrokerConfig", "-n", cluster.namesrv_addr, "-b", cluster.broker_addr],
                                  stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(write_end)
    assert (proc.returncode, proc.stderr) == (141, "")


def test_the_shipped_broker_conf_opens_the_store_make_run_writes() -> None:
    # Both default to ./.pocketmq/store; a store opens only with the file sizes it was written with.
    from pocketmq.broker.config import BrokerConfig
    from pocketmq.cli import DEV_STORE_DEFAULTS, _dev_store

    root = os.path.join(os.path.dirname(__file__), "..", "..")
    conf = BrokerConfig.from_properties(os.path.join(root, "configs", "broker.conf"))
    assert {key: getattr(conf, key) for key in DEV_STORE_DEFAULTS} == DEV_STORE_DEFAULTS
    assert os.path.abspath(conf.store_path_root_dir) == _dev_store(".pocketmq")
