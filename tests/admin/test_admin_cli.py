"""mqadmin's commands as `pocketmq <command>`, run in-process through cli.main() against a real cluster of two
brokers (one cluster per module, each test on topics and groups of its own). The CLI's error lines are in
test_admin_cli_errors.py, the commands on a cluster with ACL on in test_admin_cli_acl.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq.cli import main
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.group_retry_policy import ExponentialRetryPolicy, GroupRetryPolicy

from .cli_helpers import brokers, cli, cli_json, wait_routed

COMMANDS = [
    "updateTopic",
    "deleteTopic",
    "topicList",
    "topicRoute",
    "topicStatus",
    "updateOrderConf",
    "clusterList",
    "brokerStatus",
    "updateSubGroup",
    "deleteSubGroup",
    "consumerProgress",
    "consumerConnection",
    "producerConnection",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByUniqueKey",
    "queryMsgByOffset",
    "resetOffsetByTime",
    "cloneGroupOffset",
    "getBrokerConfig",
    "updateBrokerConfig",
    "sendMessage",
    "consumeMessage",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("admin-cli"), brokers=2, stats_sample_interval=0.02) as c:
        yield c


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--namesrvAddr" in out and "--json" in out


def test_update_topic_attributes(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliTyped",
                         "-a", "+message.type=DELAY")
    assert code == 0 and out.count("create topic to ") == 2, err
    assert "order=false, attributes={+message.type=DELAY}]" in out  # RocketMQ 5's TopicConfig.toString
    assert all(b.topic_config_manager.select_topic_config("CliTyped").attributes == {"message.type": "DELAY"}
               for b in brokers(cluster))
    code, out, err = cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliTyped", "-a", "+color=red")
    assert code != 0 and "unsupported key: color" in out + err
    with pytest.raises(SystemExit):  # (refused before any request, as mqadmin's parser refuses it)
        main(["updateTopic", "-n", cluster.namesrv_addr, "-c", "DefaultCluster", "-t", "X", "-a", "message.type=FIFO"])
    assert "add/alter attribute format is wrong" in capsys.readouterr().err


def test_topic_commands(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliT", "-r", "3", "-w", "3")
    assert code == 0 and out.count("create topic to ") == 2
    wait_routed(cluster, "CliT", 2)
    code, out, _ = cli(capsys, cluster, "topicList")
    assert "CliT" in out.split()
    route = cli_json(capsys, cluster, "topicRoute", "-t", "CliT")
    assert sorted(q["brokerName"] for q in route["queueDatas"]) == ["broker-a", "broker-b"]
    code, out, _ = cli(capsys, cluster, "sendMessage", "-t", "CliT", "-p", "hi", "-b", "broker-b", "-i", "2")
    assert code == 0 and "SEND_OK" in out
    assert cluster.wait_dispatched()
    status = cli_json(capsys, cluster, "topicStatus", "-t", "CliT")
    assert len(status) == 6 and [s["maxOffset"] for s in status if s["brokerName"] == "broker-b"] == [0, 0, 1]
    code, out, _ = cli(capsys, cluster, "topicStatus", "-t", "CliT")
    assert out.splitlines()[0].split() == ["#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset", "#Last",
                                           "Updated"]
    listed = cli_json(capsys, cluster, "topicList", "-c")
    assert {"clusterName": "DefaultCluster", "topic": "CliT", "consumerGroup": ""} in listed
    code, out, _ = cli(capsys, cluster, "deleteTopic", "-t", "CliT", "-c", "DefaultCluster")
    assert code == 0 and "delete topic [CliT] from cluster [DefaultCluster] success." in out
    code, _, err = cli(capsys, cluster, "topicRoute", "-t", "CliT")
    assert code == 1 and "No topic route info in name server for the topic: CliT See " in err


def test_cluster_and_broker_commands(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rows = cli_json(capsys, cluster, "clusterList")
    assert [(r["brokerName"], r["version"]) for r in rows] == [("broker-a", "V4_9_8"), ("broker-b", "V4_9_8")]
    code, out, _ = cli(capsys, cluster, "clusterList")
    assert out.splitlines()[0].startswith("#Cluster Name") and "broker-b" in out
    addr_b = brokers(cluster)[1].address
    status = cli_json(capsys, cluster, "brokerStatus", "-b", addr_b)
    assert status["brokerVersionDesc"] == "V4_9_8" and "msgPutTotalTodayNow" in status
    both = cli_json(capsys, cluster, "brokerStatus", "-c", "DefaultCluster")
    assert set(both) == {b.address for b in brokers(cluster)}
    conf = cli_json(capsys, cluster, "getBrokerConfig", "-b", addr_b)
    assert conf[addr_b]["brokerName"] == "broker-b"
    code, out, _ = cli(capsys, cluster, "updateBrokerConfig", "-b", addr_b, "-k", "defaultTopicQueueNums", "-v", "3")
    assert code == 0 and out.strip() == f"update broker config success, {addr_b}"
    assert brokers(cluster)[1].broker_config.default_topic_queue_nums == 3
    code, _, err = cli(capsys, cluster, "updateBrokerConfig", "-b", addr_b, "-k", "storePathRootDir", "-v", "/x")
    assert code == 1 and "cannot change at run time" in err and len(err.strip().splitlines()) == 1


def test_group_commands_and_reset(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    from pocketmq.client import Message, MessageQueue
    from pocketmq.client.sync import SyncProducer, SyncPullConsumer

    code, out, _ = cli(capsys, cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "CliG", "-r", "5")
    assert code == 0 and out.count("create subscription group to") == 2
    assert all(b.subscription_group_manager.find_subscription_group_config("CliG").retry_max_times == 5
               for b in brokers(cluster))
    # RocketMQ 5's -o: a FIFO group for the 5.x SDKs
    code, _, _ = cli(capsys, cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "CliFifoG", "-o", "true")
    assert code == 0 and all(
        b.subscription_group_manager.find_subscription_group_config("CliFifoG").consume_message_orderly
        for b in brokers(cluster))
    # RocketMQ 5's -p: the group's retry policy, a missing field taking its default as mqadmin's parseObject
    code, _, _ = cli(capsys, cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "CliRetryG", "-p",
                     '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":12000}}')
    assert code == 0 and all(
        b.subscription_group_manager.find_subscription_group_config("CliRetryG").group_retry_policy
        == GroupRetryPolicy("EXPONENTIAL", ExponentialRetryPolicy(12000, 7_200_000, 2)) for b in brokers(cluster))
    with pytest.raises(SystemExit) as refused:  # (argparse's exit)
        cli(capsys, cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "CliRetryG", "-p", '{"type":"LINEAR"}')
    assert refused.value.code == 2 and "bad groupRetryPolicy" in capsys.readouterr().err
    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliG_T", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliG_T", 2)
    mq = MessageQueue("CliG_T", "broker-a", 0)
    with SyncProducer("CliPG", cluster.namesrv_addr) as producer:
        sent = [producer.send(Message("CliG_T", b"%d" % i, keys=f"k{i}"), mq) for i in range(3)]
    assert cluster.wait_dispatched()
    with SyncPullConsumer("CliG", cluster.namesrv_addr) as consumer:
        consumer.update_consume_offset(mq, 1)
    progress = cli_json(capsys, cluster, "consumerProgress", "-g", "CliG")
    row = next(q for q in progress["queues"] if q["brokerName"] == "broker-a")
    assert (row["brokerOffset"], row["consumerOffset"], row["diff"]) == (3, 1, 2)
    assert progress["diffTotal"] == 2
    code, out, _ = cli(capsys, cluster, "consumerProgress", "-g", "CliG")
    assert "Diff Total: 2" in out and out.splitlines()[0].startswith("#Topic")

    # Offline reset (no consumer runs): the broker's offsets are set.
    reset = cli_json(capsys, cluster, "resetOffsetByTime", "-g", "CliG", "-t", "CliG_T", "-s", "0")
    assert reset["online"] is False and {"brokerName": "broker-a", "queueId": 0, "offset": 0} in reset["offsets"]
    assert brokers(cluster)[0].consumer_offset_manager.query_offset("CliG", "CliG_T", 0) == 0
    code, out, _ = cli(capsys, cluster, "resetOffsetByTime", "-g", "CliG", "-t", "CliG_T", "-s", "now")
    assert code == 0 and out.startswith("rollback consumer offset by specified group[CliG], topic[CliG_T]")

    # Messages by key, by either id, by offset.
    code, out, _ = cli(capsys, cluster, "queryMsgByKey", "-t", "CliG_T", "-k", "k1")
    assert code == 0 and sent[1].msg_id in out
    for msg_id in (sent[2].msg_id, sent[2].offset_msg_id):
        found = cli_json(capsys, cluster, "queryMsgById", "-i", msg_id)
        assert (found["body"], found["offsetMsgId"], found["msgId"]) == ("2", sent[2].offset_msg_id, sent[2].msg_id)
    found = cli_json(capsys, cluster, "queryMsgByUniqueKey", "-i", sent[0].msg_id, "-t", "CliG_T")
    assert found["body"] == "0"
    code, out, _ = cli(capsys, cluster, "queryMsgByOffset", "-t", "CliG_T", "-b", "broker-a", "-i", "0", "-o", "1")
    assert code == 0 and f"OffsetID:            {sent[1].offset_msg_id}" in out and "Message Body:        1" in out
    code, _, err = cli(capsys, cluster, "queryMsgById", "-i", "00" * 16, "-t", "CliG_T")
    assert code == 1 and "Message not found" in err
    consumed = cli_json(capsys, cluster, "consumeMessage", "-t", "CliG_T", "-c", "2")
    assert [m["body"] for m in consumed] == ["0", "1"]

    code, out, _ = cli(capsys, cluster, "deleteSubGroup", "-b", brokers(cluster)[1].address, "-g", "CliG")
    assert code == 0 and "delete subscription group [CliG] from broker" in out
    assert brokers(cluster)[1].subscription_group_manager.subscription_group_table.get("CliG") is None


def test_reset_offset_by_time_of_one_queue(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    # -b, -q and -o were not options: the command reset the whole topic, to the timestamp.
    from pocketmq.client import Message, MessageQueue
    from pocketmq.client.sync import SyncProducer

    cli(capsys, cluster, "updateSubGroup", "-c", "DefaultCluster", "-g", "CliQG")
    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliQ_T", "-r", "2", "-w", "2")
    wait_routed(cluster, "CliQ_T", 2)
    with SyncProducer("CliQPG", cluster.namesrv_addr) as producer:
        for queue_id in (0, 1):
            for i in range(3):
                producer.send(Message("CliQ_T", b"%d" % i), MessageQueue("CliQ_T", "broker-a", queue_id))
    assert cluster.wait_dispatched()
    broker = brokers(cluster)[0]
    om = broker.consumer_offset_manager
    for queue_id in (0, 1):
        om.commit_offset("test", "CliQG", "CliQ_T", queue_id, 3)
    code, out, err = cli(capsys, cluster, "resetOffsetByTime", "-g", "CliQG", "-t", "CliQ_T", "-s", "0",
                         "-b", broker.address, "-q", "1", "-o", "2")
    assert code == 0, err
    assert out.splitlines() == [
        f"start reset consumer offset by specified, group[CliQG], topic[CliQ_T], queueId[1], broker[{broker.address}], "
        "timestamp(string)[0], timestamp(long)[0]",
        "reset consumer offset to 2",
    ]
    assert (om.query_offset("CliQG", "CliQ_T", 0), om.query_offset("CliQG", "CliQ_T", 1)) == (3, 2)
    # Without -o: the timestamp's offset of that queue (searchOffset), here its end.
    om.commit_offset("test", "CliQG", "CliQ_T", 0, 1)
    reset = cli_json(capsys, cluster, "resetOffsetByTime", "-g", "CliQG", "-t", "CliQ_T", "-s", "now",
                     "-b", broker.address, "-q", "0")
    assert (reset["queueId"], reset["offset"]) == (0, 3)
    assert (om.query_offset("CliQG", "CliQ_T", 0), om.query_offset("CliQG", "CliQ_T", 1)) == (3, 2)
    # An offset of 0 or less is printed and left alone, as mqadmin leaves it (a timestamp before the queue's first
    # message included).
    for offset_args in (["-o", "0"], ["-o", "-1"], []):
        code, out, err = cli(capsys, cluster, "resetOffsetByTime", "-g", "CliQG", "-t", "CliQ_T", "-s", "0",
                             "-b", broker.address, "-q", "0", *offset_args)
        assert code == 0 and out.splitlines()[-1] == f"reset consumer offset to {(offset_args or ['', '0'])[1]}", err
    assert om.query_offset("CliQG", "CliQ_T", 0) == 3
    code, _, err = cli(capsys, cluster, "resetOffsetByTime", "-g", "CliQG", "-t", "CliQ_T", "-s", "0",
                       "-b", broker.address, "-q", "1", "-o", "999")
    assert code == 1 and "Target offset 999 not in consume queue range [0-3]" in err
    assert om.query_offset("CliQG", "CliQ_T", 1) == 2


def test_clone_group_offset(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    from pocketmq.client.sync import SyncPushConsumer

    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliC_T", "-r", "2", "-w", "2")
    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliC_Other", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliC_T", 2)
    wait_routed(cluster, "CliC_Other", 2)
    for i, broker in enumerate(brokers(cluster)):
        broker.consumer_offset_manager.commit_offset("test", "CliCSrc", "CliC_T", 1, 10 + i)
    code, out, err = cli(capsys, cluster, "cloneGroupOffset", "-s", " CliCSrc", "-d", "CliCDest ", "-t", "CliC_T")
    assert code == 0, err
    # (mqadmin prints the line without its line end)
    assert out == "clone group offset success. srcGroup[CliCSrc], destGroup=[CliCDest], topic[CliC_T]\n"
    assert [b.consumer_offset_manager.query_offset_table("CliCDest", "CliC_T") for b in brokers(cluster)] == [
        {1: 10}, {1: 11}]
    # The source group online, subscribed to another topic: the topic is cloned with -o true only.
    consumer = SyncPushConsumer("CliCSrc", cluster.namesrv_addr, heartbeat_broker_interval=0.05)
    consumer.subscribe("CliC_Other", "*")
    consumer.register_message_listener(lambda _msgs, _ctx: None)
    with consumer:
        deadline = time.monotonic() + 10
        while not all(b.consumer_manager.find_subscription_data_count("CliCSrc") for b in brokers(cluster)):
            assert time.monotonic() < deadline, "the consumer's heartbeat did not reach both brokers"
            time.sleep(0.01)
        assert cli_json(capsys, cluster, "cloneGroupOffset", "-s", "CliCSrc", "-d", "CliCOn", "-t", "CliC_T")[
            "offline"] is False
        assert [b.consumer_offset_manager.query_offset_table("CliCOn", "CliC_T") for b in brokers(cluster)] == [
            {}, {}]
        cloned = cli_json(capsys, cluster, "cloneGroupOffset", "-s", "CliCSrc", "-d", "CliCOn", "-t", "CliC_T",
                          "-o", "true")
        assert sorted(cloned["brokers"]) == sorted(b.address for b in brokers(cluster))
        assert [b.consumer_offset_manager.query_offset_table("CliCOn", "CliC_T") for b in brokers(cluster)] == [
            {1: 10}, {1: 11}]


def test_consumer_progress_without_a_group_lists_every_group(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    from pocketmq.client import ConsumeConcurrentlyStatus, Message, MessageQueue
    from pocketmq.client.sync import SyncProducer, SyncPushConsumer

    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliP_T", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliP_T", 2)

    consumed: list[bytes] = []

    def consumer(group: str) -> SyncPushConsumer:
        def listener(msgs: list[Any], _ctx: Any) -> ConsumeConcurrentlyStatus:
            consumed.extend(m.body for m in msgs)
            # Still in the listener when the main thread leaves the with block: the shutdown waits for the batch
            # (await_termination_when_shutdown) and commits its offset. With the default 0 the offline group's
            # offset was never stored and consumerProgress showed no lag for it.
            threading.Event().wait(0.2)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        c = SyncPushConsumer(group, cluster.namesrv_addr, heartbeat_broker_interval=0.05,
                             consume_from_where="CONSUME_FROM_FIRST_OFFSET", await_termination_when_shutdown=5.0)
        c.subscribe("CliP_T", "*")
        c.register_message_listener(listener)
        return c

    def send(body: bytes) -> None:
        with SyncProducer("CliProgPG", cluster.namesrv_addr) as producer:
            producer.send(Message("CliP_T", body), MessageQueue("CliP_T", "broker-a", 0))
        assert cluster.wait_dispatched()

    def wait_consumed(n: int) -> None:
        deadline = time.monotonic() + 10
        while len(consumed) < n:
            assert time.monotonic() < deadline, consumed
            time.sleep(0.01)

    # Each group that ever consumed has a retry topic, which is how mqadmin finds the groups. The offline group
    # consumed the first message (its offset is stored when it shuts down) and not the second.
    send(b"first")
    with consumer("CliProgOff"):
        wait_routed(cluster, "%RETRY%CliProgOff", 1)
        wait_consumed(1)
    send(b"second")
    with consumer("CliProgOn"):
        wait_routed(cluster, "%RETRY%CliProgOn", 1)
        listed = {i["group"]: i for i in cli_json(capsys, cluster, "consumerProgress")}
        on, off = listed["CliProgOn"], listed["CliProgOff"]
        assert (on["count"], on["version"], on["type"], on["model"]) == (1, "V4_9_8", "PUSH", "CLUSTERING")
        assert (off["count"], off["version"], off["type"], off["model"]) == (0, "OFFLINE", "", "")
        assert off["diffTotal"] == 1  # the message sent after it stopped
        code, out, _ = cli(capsys, cluster, "consumerProgress")
        lines = out.splitlines()
        assert code == 0 and lines[0].split() == ["#Group", "#Count", "#Version", "#Type", "#Model", "#TPS",
                                                  "#Diff", "Total"]
        assert lines[1].split()[:5] == ["CliProgOn", "1", "V4_9_8", "PUSH", "CLUSTERING"]  # online groups first


def test_connection_commands(cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    from pocketmq.client import Message
    from pocketmq.client.sync import SyncProducer

    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliC_T", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliC_T", 2)
    with SyncProducer("CliConnPG", cluster.namesrv_addr, heartbeat_broker_interval=0.05) as producer:
        producer.send(Message("CliC_T", b"x"))
        deadline = time.monotonic() + 10
        while not any(b.producer_manager.group_channel_table.get("CliConnPG") for b in brokers(cluster)):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        conns = cli_json(capsys, cluster, "producerConnection", "-g", "CliConnPG", "-t", "CliC_T")
        assert [c["language"] for c in conns["connectionSet"]] == ["PYTHON"]
    code, _, err = cli(capsys, cluster, "consumerConnection", "-g", "NobodyHere")
    assert code == 1 and "not online" in err


def test_the_installed_command_runs_an_admin_command(cluster: ThreadedCluster) -> None:
    proc = subprocess.run([sys.executable, "-m", "pocketmq", "clusterList", "-n", cluster.namesrv_addr, "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert {r["brokerName"] for r in json.loads(proc.stdout)} == {"broker-a", "broker-b"}


def test_a_message_without_tags_or_keys_shows_them_as_java_null(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    from pocketmq.client import Message, MessageQueue
    from pocketmq.client.sync import SyncProducer

    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliNull_T", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliNull_T", 2)
    mq = MessageQueue("CliNull_T", "broker-a", 0)
    with SyncProducer("CliNullPG", cluster.namesrv_addr) as producer:
        bare = producer.send(Message("CliNull_T", b"bare"), mq)
        producer.send(Message("CliNull_T", b"tagged", tags="TagA", keys="k1 k2"), mq)
    assert cluster.wait_dispatched()
    # mqadmin prints "[" + msg.getTags() + "]": Java's null, not Python's None; the keys as stored.
    code, out, _ = cli(capsys, cluster, "queryMsgById", "-i", bare.msg_id, "-t", "CliNull_T")
    assert code == 0 and "Tags:                [null]" in out and "Keys:                [null]" in out, out
    code, out, _ = cli(capsys, cluster, "queryMsgByOffset", "-t", "CliNull_T", "-b", "broker-a", "-i", "0", "-o", "1")
    assert code == 0 and "Tags:                [TagA]" in out and "Keys:                [k1 k2]" in out, out


def test_query_msg_names_a_body_it_cannot_inflate_instead_of_printing_its_bytes(
    cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Java 5.x producer's LZ4 body (setCompressType): its frame went to the terminal as the "Message Body".
    import asyncio

    from pocketmq.client import Message, MessageQueue
    from pocketmq.client.impl.producer.send_request import SendRequestOptions, build_send_request
    from pocketmq.remoting.client import RemotingClient
    from pocketmq.remoting.codes import RequestCode
    from pocketmq.remoting.command import RemotingCommand

    cli(capsys, cluster, "updateTopic", "-c", "DefaultCluster", "-t", "CliLz4_T", "-r", "1", "-w", "1")
    wait_routed(cluster, "CliLz4_T", 2)
    header, _, _ = build_send_request(Message("CliLz4_T", b"x"), MessageQueue("CliLz4_T", "broker-a", 0),
                                      SendRequestOptions("CliLz4PG"))
    header.sys_flag = 0x101  # COMPRESSED_FLAG | the LZ4 type bits

    async def send() -> int:
        client = RemotingClient()
        try:
            request = RemotingCommand.request(RequestCode.SEND_MESSAGE, header, b"\x04\x22\x4d\x18 lz4 frame")
            return (await client.invoke(brokers(cluster)[0].address, request, 5)).code
        finally:
            await client.close()

    assert asyncio.run(send()) == 0
    assert cluster.wait_dispatched()
    code, out, _ = cli(capsys, cluster, "queryMsgByOffset", "-t", "CliLz4_T", "-b", "broker-a", "-i", "0", "-o", "0")
    assert code == 0, out
    assert ("Message Body:        <14 bytes as stored, not inflated: compressed body at 0 does not inflate: "
            "LZ4-compressed (sysFlag compression type 0x100); pocketmq inflates zlib only>") in out, out
