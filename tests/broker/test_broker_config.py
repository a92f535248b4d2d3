"""BrokerConfig: the RocketMQ-style properties file and the store settings derived from it."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pocketmq.broker import BrokerConfig, BrokerConfigError
from pocketmq.broker.config_checks import checked_fields
from pocketmq.cli import main as pocketmq_main
from pocketmq.common.codec import decode_message_id
from pocketmq.remoting.codes import ResponseCode
from pocketmq.storage.config import FlushDiskType

REPO = Path(__file__).resolve().parents[2]


def test_properties_file_keys_units_and_types(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# comment\n"
        "! also a comment\n"
        "\n"
        "brokerClusterName = ClusterX\n"
        "brokerName=broker-x\n"
        "brokerIP1=127.0.0.2\n"
        "listenPort=0\n"
        "namesrvAddr=127.0.0.1:9876;127.0.0.1:9877\n"
        f"storePathRootDir={tmp_path}/store\n"
        "flushDiskType=SYNC_FLUSH\n"
        "mappedFileSizeCommitLog=65536\n"
        "autoCreateTopicEnable=FALSE\n"
        "defaultTopicQueueNums=4\n"
        "registerNameServerPeriod=250\n"
        "flushConsumerOffsetInterval=20\n"
        "shortPollingTimeMills=100\n"
        "channelExpiredTimeout=500\n"
        "maxMessageSize=1024\n"
        "busyPollMicros=150\n"
        "maxDispatchLagBytes=65536\n"
    )
    c = BrokerConfig.from_properties(conf)
    assert (c.broker_cluster_name, c.broker_name, c.broker_ip1, c.listen_port) == (
        "ClusterX",
        "broker-x",
        "127.0.0.2",
        0,
    )
    assert c.namesrv_addr_list == ["127.0.0.1:9876", "127.0.0.1:9877"]
    assert c.auto_create_topic_enable is False and c.default_topic_queue_nums == 4
    # RocketMQ's millisecond keys become seconds.
    assert (c.register_name_server_period, c.flush_consumer_offset_interval) == (0.25, 0.02)
    assert (c.short_polling_time, c.channel_expired_timeout) == (0.1, 0.5)
    assert c.busy_poll == pytest.approx(0.00015)  # pocketmq's microsecond key
    store = c.to_store_config()
    assert store.flush_disk_type == FlushDiskType.SYNC_FLUSH and store.mapped_file_size_commit_log == 65536
    assert store.max_dispatch_lag_bytes == 65536
    assert store.max_message_size == 1024 and store.store_path_root_dir == str(tmp_path / "store")
    assert store.store_host == "127.0.0.2"
    assert c.config_dir == str(tmp_path / "store" / "config")
    # to_properties is the inverse.
    assert BrokerConfig.from_properties_text(c.to_properties()) == c


def test_defaults_match_rocketmq() -> None:
    c = BrokerConfig()
    assert (c.broker_cluster_name, c.broker_name, c.broker_id, c.listen_port) == (
        "DefaultCluster",
        "broker-a",
        0,
        10911,
    )
    assert (c.default_topic_queue_nums, c.broker_permission, c.register_name_server_period) == (8, 6, 30.0)
    assert (c.flush_consumer_offset_interval, c.channel_expired_timeout, c.client_housekeeping_interval) == (
        5.0,
        120.0,
        10.0,
    )
    assert c.auto_create_topic_enable and c.auto_create_subscription_group and c.long_polling_enable
    assert c.max_message_size == 4 * 1024 * 1024 and c.namesrv_addr_list == []


def test_unknown_key_is_an_error_naming_key_and_line(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nautoCreateTopicEnabel=true\n")
    with pytest.raises(
        BrokerConfigError,
        match=r"broker.conf:2: unknown broker config key 'autoCreateTopicEnabel'"
        r".*did you mean 'autoCreateTopicEnable'",
    ):
        BrokerConfig.from_properties(conf)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("haListenPort=10912", "not supported by pocketmq"),
        ("autoCreateTopicEnable=yes", "expected true or false"),
        ("listenPort=ten", "bad value for listenPort"),
        ("flushDiskType=SOMETIMES", "ASYNC_FLUSH or SYNC_FLUSH"),
        ("brokerRole=SLAVE", "brokerRole 'SLAVE': expected ASYNC_MASTER or SYNC_MASTER .pocketmq runs masters only"),
        ("brokerRole=async_master", "brokerRole 'async_master': expected ASYNC_MASTER or SYNC_MASTER"),
        ("defaultTopicQueueNums=0", "bad value for defaultTopicQueueNums: must be at least 1, got 0"),
        # (what UPDATE_BROKER_CONFIG refused, the file let through: a broker that never answered, every put
        # refused, a clean round failing at each run)
        ("transactionCheckInterval=0", "bad value for transactionCheckInterval: must be a positive number of milli"),
        ("transactionCheckInterval=-1000", "bad value for transactionCheckInterval: .* got -1000$"),
        ("maxMessageSize=0", "bad value for maxMessageSize: must be at least 1, got 0"),
        ("deleteWhen=4am", "bad value for deleteWhen: expected hours from 0 to 23 separated by ';'"),
        ("serverMaxInflightRequests=0", "bad value for serverMaxInflightRequests: must be at least 1, got 0"),
        ("timerPollIntervalMs=0", "bad value for timerPollIntervalMs: must be a positive"),
        ("namesrvProtocol=native", "namesrvProtocol 'native': expected one of msgpack, rocketmq"),
        # (a broker without levels would refuse every delayed send and every consumer's send-back)
        ("messageDelayLevel=", "messageDelayLevel is empty"),
        ("messageDelayLevel=1s 2x", "'2x' is not a whole number followed by ms, s, m, h or d"),
        ("messageDelayLevel=1S", "'1S' is not a whole number"),
        ("messageDelayLevel=s", "'s' is not a whole number"),
        # (NaN and the infinities reached the timers: a pull parked with NaN failed, NaN flushes spun a core)
        ("flushIntervalCommitLog=NaN", "bad value for flushIntervalCommitLog: expected a whole number, got 'NaN'"),
        ("shortPollingTimeMills=inf", "bad value for shortPollingTimeMills: expected a whole number"),
        ("channelExpiredTimeout=1e400", "bad value for channelExpiredTimeout: expected a whole number"),
        ("fileReservedTime=NaN", "bad value for fileReservedTime: expected a finite number, got 'NaN'"),
        ("serverChannelMaxIdleTimeSeconds=-inf", "bad value for serverChannelMaxIdleTimeSeconds: expected a finite"),
        ("diskSpaceWarningLevelRatio=1e400", "bad value for diskSpaceWarningLevelRatio: expected a finite number"),
        # RocketMQ's int and long keys, as Integer.parseInt / Long.parseLong read them
        ("registerNameServerPeriod=1.5", "bad value for registerNameServerPeriod: expected a whole number"),
        ("maxMessageSize=1_024", "bad value for maxMessageSize: expected a whole number"),
        ("maxMessageSize=9223372036854775808", "bad value for maxMessageSize: 9223372036854775808 is out of range"),
        ("brokerIP1=no such host", "brokerIP1 'no such host' is neither an IP address nor a host name"),
    ],
)
def test_bad_lines_are_clear_errors(text, message) -> None:
    with pytest.raises(BrokerConfigError, match=message):
        BrokerConfig.from_properties_text(text)


def test_shipped_example_config_loads() -> None:
    c = BrokerConfig.from_properties(REPO / "configs" / "broker.conf")
    assert c.broker_ip1 == "127.0.0.1" and c.namesrv_addr_list == ["127.0.0.1:9876"]
    assert c.store_root == os.path.abspath(".pocketmq/store")


def test_cli_arguments(tmp_path, capsys) -> None:
    conf = tmp_path / "b.conf"
    conf.write_text("namesrvAddr=1.2.3.4:9876\nlistenPort=0\n")
    assert pocketmq_main(["broker", "-c", str(conf), "-n", "127.0.0.1:1;127.0.0.1:2", "-p"]) == 0
    out = capsys.readouterr().out
    assert "namesrvAddr=127.0.0.1:1;127.0.0.1:2" in out and "listenPort=0" in out
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) == 0
    assert "namesrvAddr=1.2.3.4:9876" in capsys.readouterr().out
    conf.write_text("bogus=1\n")
    assert pocketmq_main(["broker", "-c", str(conf)]) == 1
    assert "bogus" in capsys.readouterr().err


def test_whole_numbers_print_as_integers_as_rocketmqs_int_keys_do() -> None:
    # (RocketMQ's broker ignores "fileReservedTime=72.0": Integer.parseInt refuses it)
    lines = BrokerConfig().to_properties().splitlines()
    assert "fileReservedTime=72" in lines and "serverChannelMaxIdleTimeSeconds=120" in lines
    assert "fileReservedTime=0.5" in BrokerConfig(file_reserved_time=0.5).to_properties().splitlines()
    assert "diskSpaceWarningLevelRatio=0.9" in lines


@pytest.mark.parametrize("comment", ["# 这是中文注释".encode("gbk"), "# café".encode("latin-1"), b"! \xff\xfe"])
def test_a_comment_in_any_encoding_loads(tmp_path, comment: bytes) -> None:
    # Java's Properties.load reads ISO-8859-1, so RocketMQ's broker.conf files carry GBK or Latin-1 comments.
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"\xef\xbb\xbf" + comment + b"\r\nbrokerName=broker-x\r\nbrokerClusterName=\xe9\x9b\x86\n")
    c = BrokerConfig.from_properties(conf)
    assert (c.broker_name, c.broker_cluster_name) == ("broker-x", "集")


def test_a_setting_that_is_not_utf8_is_an_error_naming_its_line(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_bytes("# ok\nbrokerName=caf\xe9\n".encode("latin-1"))
    with pytest.raises(BrokerConfigError, match=r"broker.conf:2: byte 0xe9 is not UTF-8"):
        BrokerConfig.from_properties(conf)


def test_broker_ip1_may_be_a_host_name_or_empty() -> None:
    named = BrokerConfig(broker_ip1="localhost")
    assert named.broker_ip1 == "localhost" and named.store_host_ip in ("127.0.0.1", "::1")
    assert named.to_store_config().store_host == named.store_host_ip
    assert BrokerConfig.from_properties_text("brokerIP1=\n").broker_ip1 == "127.0.0.1"  # (pocketmq's default)
    assert BrokerConfig(broker_ip1="[::1]").store_host_ip == "[::1]"


def test_cli_loads_what_rocketmqs_broker_loads(tmp_path) -> None:
    # A GBK comment (RocketMQ's Chinese examples), a host name as brokerIP1; whole numbers printed as such.
    conf = tmp_path / "broker.conf"
    conf.write_bytes("# 默认集群\nbrokerIP1=localhost\nlistenPort=0\n".encode("gbk"))
    done = subprocess.run([sys.executable, "-m", "pocketmq", "broker", "-c", str(conf), "-p"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert {"brokerIP1=localhost", "fileReservedTime=72", "serverChannelMaxIdleTimeSeconds=120"} <= set(lines)
    conf.write_text("flushIntervalCommitLog=NaN\n")
    done = subprocess.run([sys.executable, "-m", "pocketmq", "broker", "-c", str(conf), "-p"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "broker.conf:1: bad value for flushIntervalCommitLog" in done.stderr


async def test_a_broker_named_by_host_name_advertises_it_and_stores_its_address(cluster) -> None:
    broker = await cluster.broker(broker_ip1="localhost")  # (was a ValueError of the commit log at start)
    port = broker.address.rsplit(":", 1)[1]
    assert broker.address == f"localhost:{port}"
    sent = await cluster.mq(broker).send("TopicNamedHost")
    assert sent.code == ResponseCode.SUCCESS
    host, _ = decode_message_id(sent.ext_fields["msgId"])
    assert host in (f"127.0.0.1:{port}", f"[::1]:{port}")


# Every period of a timer or wait loop: a 0 spun a core at idle (registerNameServerPeriod=0 sent 15,904
# registrations in 5 s), and RocketMQ refuses to start on most of them (scheduleAtFixedRate).
PERIODS = ["flushIntervalCommitLog", "flushIntervalConsumeQueue", "cleanResourceInterval", "registerNameServerPeriod",
           "pullRequestHoldCheckInterval", "reviveInterval", "popBufferScanInterval",
           "loadBalancePollNameServerInterval", "flushDelayOffsetInterval", "timerFlushIntervalMs",
           "timerPollIntervalMs", "transactionCheckInterval", "flushConsumerOffsetInterval",
           "clientHousekeepingInterval", "statsSampleInterval"]


@pytest.mark.parametrize("key", PERIODS)
def test_a_period_of_0_or_less_is_refused_and_a_millisecond_is_not(key: str) -> None:
    for value in ("0", "-5"):
        with pytest.raises(BrokerConfigError, match=rf"^<string>: bad value for {key}: must be a positive number of "
                                                    rf"milliseconds, got {value}$"):
            BrokerConfig.from_properties_text(f"{key}={value}\n")
    assert f"{key}=1" in BrokerConfig.from_properties_text(f"{key}=1\n").to_properties().splitlines()


def test_every_period_key_is_checked() -> None:
    # (a period added later gets its check, or a reason here why its 0 means something)
    zero_means_off = {"busyPollMicros", "serverFrameReadTimeoutMillis"}
    keys = {f.metadata["key"]: f.name for f in dataclasses.fields(BrokerConfig)}
    periods = {k for k in keys if ("Interval" in k or "Period" in k) and k not in zero_means_off}
    periods -= {"popCkRewriteIntervals", "popAckTimeInterval"}  # (no periods: a list, a lead time)
    assert periods == set(PERIODS)
    assert {keys[k] for k in PERIODS} <= checked_fields()


def test_a_masters_broker_id_is_0_whatever_the_file_says(caplog) -> None:
    # RocketMQ's BrokerStartup sets a master's brokerId to 0 (ASYNC_MASTER and SYNC_MASTER alike).
    with caplog.at_level(logging.WARNING):
        c = BrokerConfig.from_properties_text("brokerRole=SYNC_MASTER\nbrokerId=1\n")
    assert c.broker_id == 0 and "brokerId 1 with brokerRole SYNC_MASTER" in caplog.text


def test_the_name_server_comes_from_n_else_the_file_else_namesrv_addr(tmp_path, capsys, monkeypatch) -> None:
    # RocketMQ's BrokerConfig.namesrvAddr defaults to $NAMESRV_ADDR (the rocketmq.namesrv.addr property first).
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876")
    conf = tmp_path / "b.conf"
    conf.write_text("listenPort=0\n")
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) == 0
    assert "namesrvAddr=10.0.0.1:9876" in capsys.readouterr().out.splitlines()
    conf.write_text("namesrvAddr=10.0.0.2:9876\n")
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) == 0
    assert "namesrvAddr=10.0.0.2:9876" in capsys.readouterr().out.splitlines()
    assert pocketmq_main(["broker", "-c", str(conf), "-n", "10.0.0.3:9876", "-p"]) == 0
    assert "namesrvAddr=10.0.0.3:9876" in capsys.readouterr().out.splitlines()
    conf.write_text("namesrvAddr=\n")  # (set empty in the file: none, as RocketMQ reads it)
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) == 0
    assert "namesrvAddr=" in capsys.readouterr().out.splitlines()


def test_a_bad_name_server_is_reported_against_where_it_came_from(tmp_path, capsys, monkeypatch) -> None:
    conf = tmp_path / "b.conf"
    conf.write_text("listenPort=0\n")
    monkeypatch.setenv("NAMESRV_ADDR", "env-host:x")
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) != 0
    assert "$NAMESRV_ADDR: name server 'env-host:x' is not an address" in capsys.readouterr().err
    assert pocketmq_main(["broker", "-c", str(conf), "-n", "n-host:y", "-p"]) != 0
    assert "-n: name server 'n-host:y' is not an address" in capsys.readouterr().err
    conf.write_text("namesrvAddr=file-host:z\n")  # (the file wins over $NAMESRV_ADDR, so it is the one to blame)
    assert pocketmq_main(["broker", "-c", str(conf), "-p"]) != 0
    assert f"{conf}: name server 'file-host:z' is not an address" in capsys.readouterr().err


def test_a_broker_without_a_name_server_says_so_at_start(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"storePathRootDir={tmp_path}/store\nlistenPort=0\nmappedFileSizeCommitLog=1048576\n"
                    "mappedFileSizeConsumeQueue=20000\nmaxHashSlotNum=64\nmaxIndexNum=256\n")
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    proc = subprocess.Popen([sys.executable, "-m", "pocketmq", "broker", "-c", str(conf)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and "listening on" in proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert "pocketmq broker: warning: no name server (namesrvAddr in" in err and "-n or $NAMESRV_ADDR" in err
