"""pocketmq's own commands (`pocketmq <command>`, in-process) print what mqadmin prints for the same pocketmq cluster,
under the same masking (sides.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pocketmq.cli import main as pocketmq_main
from pocketmq.client import (
    ConsumeConcurrentlyStatus,
    Message,
    MessageExt,
    SyncProducer,
    SyncPushConsumer,
)
from pocketmq.common.java_hash import hash_map_order

from .sides import (
    CLUSTER,
    GROUP,
    PRODUCER_GROUP,
    SLOW_OK,
    SUFFIX,
    TOPIC,
    Mqadmin,
    Side,
    consumed,
    mask,
    numbers_masked,
    properties,
    rows,
    wait_no_lag,
)


def _same_rows(mine: str, theirs: str) -> None:
    assert rows(mine) == rows(theirs)


def _same_sorted_rows(mine: str, theirs: str) -> None:
    assert sorted(rows(mine)) == sorted(rows(theirs))


def _same_set(mine: str, theirs: str) -> None:
    assert set(mine.split()) == set(theirs.split())


def _same_text(mine: str, theirs: str) -> None:
    assert mask(mine).rstrip() == mask(theirs).rstrip()


def _same_keys(mine: str, theirs: str) -> None:
    def keys(text: str) -> list[str]:
        return [line.split(":", 1)[0].strip() for line in text.splitlines() if line.strip()]

    assert keys(mine) == keys(theirs)


def _same_config(mine: str, theirs: str) -> None:
    def config(text: str) -> dict[str, str]:
        return {k.strip(): v.strip() for k, v in (line.split("=", 1) for line in text.splitlines()
                                                   if "=" in line and not line.startswith("="))}

    assert mask(mine.splitlines()[0]) == mask(theirs.splitlines()[0])
    assert config(mine) == config(theirs)


def _same_progress(mine: str, theirs: str) -> None:
    cells = [rows(text) for text in (mine, theirs)]
    for c in cells:
        c[-2][-1] = "N"  # Consume TPS: x.xx
    assert cells[0] == cells[1]


def _same_cluster(mine: str, theirs: str) -> None:
    columns = {5, 6, 8, 9}  # rates, hours, disk share: read at different moments
    assert numbers_masked(rows(mine), columns) == numbers_masked(rows(theirs), columns)


def _same_message(mine: str, theirs: str) -> None:
    # pocketmq prints the body (mqadmin writes it to a file), and does not compute mqadmin's MessageTrack lines
    # (which groups consumed the message); the properties come in another order (mqadmin's is a HashMap's).
    def fields(text: str) -> list[list[str]]:
        return [r for r in rows(text) if r[0] not in ("Message", "MessageTrack", "Properties:")]

    assert fields(mine) == fields(theirs)
    assert properties(mine) == properties(theirs)
    assert ["Message", "Body:", "body", "5"] in rows(mine)  # (the setup's message 5)
    assert not [r for r in rows(mine) if r[0] == "MessageTrack"]
    assert [r for r in rows(theirs) if r[0] == "MessageTrack"]
    assert [r for r in rows(theirs) if r[:3] == ["Message", "Body", "Path:"]]


_OWN = {
    "topicList": (("topicList",), _same_set),
    "topicRoute": (("topicRoute", "-t", TOPIC), _same_text),
    "topicStatus": (("topicStatus", "-t", TOPIC), _same_rows),
    "clusterList": (("clusterList",), _same_cluster),
    "brokerStatus": (("brokerStatus", "-b", "{broker}"), _same_keys),
    "getBrokerConfig": (("getBrokerConfig", "-b", "{broker}"), _same_config),
    "updateBrokerConfig": (("updateBrokerConfig", "-b", "{broker}", "-k", "autoCreateTopicEnable", "-v", "true"),
                           _same_rows),
    "getNamesrvConfig": (("getNamesrvConfig",), _same_sorted_rows),
    "updateNamesrvConfig": (("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false"), _same_rows),
    "consumerProgress": (("consumerProgress", "-g", GROUP), _same_progress),
    "consumerConnection": (("consumerConnection", "-g", GROUP), _same_sorted_rows),
    "producerConnection": (("producerConnection", "-g", PRODUCER_GROUP, "-t", TOPIC), _same_rows),
    "queryMsgById": (("queryMsgById", "-i", "{offset_msg_id}"), _same_message),
    "queryMsgByKey": (("queryMsgByKey", "-t", TOPIC, "-k", "key5"), _same_rows),
    "queryMsgByUniqueKey": (("queryMsgByUniqueKey", "-t", TOPIC, "-i", "{msg_id}"), _same_message),
    "resetOffsetByTime": (("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0"), _same_sorted_rows),
    "updateTopic": (("updateTopic", "-c", CLUSTER, "-t", f"MqaOwn{SUFFIX}", "-r", "2", "-w", "2"), _same_rows),
    "updateSubGroup": (("updateSubGroup", "-c", CLUSTER, "-g", f"MqaOwnGroup{SUFFIX}"), _same_rows),
}


@pytest.mark.parametrize("command", sorted(_OWN))
def test_pocketmq_command_prints_what_mqadmin_prints(
    command: str, sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    template, same = _OWN[command]
    values = {"broker": pocket.broker_addr, "offset_msg_id": pocket.offset_msg_ids[5], "msg_id": pocket.msg_ids[5]}
    args = tuple(a.format(**values) for a in template)
    # What an earlier test printed, unless the command's answer moves as the package's tests go on.
    cached = None if command in ("topicList", "consumerProgress", "resetOffsetByTime") else mqadmin.seen.get(args)
    if command == "consumerProgress":  # (resetOffsetByTime's test sent the group back to 0: it consumes again)
        wait_no_lag(pocket, mqadmin)
    theirs = cached or mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    code = pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]])
    mine, err = capsys.readouterr()
    assert code == 0, err
    same(mine, theirs)


def test_pocketmq_delete_commands_print_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    for name in ("A", "B"):  # mqadmin deletes A, pocketmq B
        mqadmin.run(pocket.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", f"MqaDel{name}{SUFFIX}")
        mqadmin.run(pocket.namesrv_addr, "updateSubGroup", "-c", CLUSTER, "-g", f"MqaDelGroup{name}{SUFFIX}")
    for command, option, value in (("deleteTopic", "-t", "MqaDel{}" + SUFFIX),
                                   ("deleteSubGroup", "-g", "MqaDelGroup{}" + SUFFIX)):
        theirs = mqadmin.run(pocket.namesrv_addr, command, "-c", CLUSTER, option, value.format("A"))
        capsys.readouterr()
        argv = [command, "-n", pocket.namesrv_addr, *SLOW_OK, "-c", CLUSTER, option, value.format("B")]
        assert pocketmq_main(argv) == 0
        mine = capsys.readouterr().out
        assert rows(mine.replace(value.format("B"), value.format("A"))) == rows(theirs)


def test_order_conf_commands(sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]) -> None:
    """updateOrderConf (put, get, delete) and `updateTopic -o true` (-b: the broker's part merged into the entry;
    -c: the cluster's brokers): mqadmin prints the same against Apache and pocketmq, and pocketmq's own commands
    (on topics B, mqadmin's on topics A) print what mqadmin prints against pocketmq. (A -b entry is merged into one
    already there: mqadmin prints the stack trace of the QUERY_NOT_FOUND its read of a missing entry meets, and
    carries on.)"""
    _, pocket = sides
    steps = (
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "put", "-v", "broker-x:1"),
        ("updateTopic", "-b", "{broker}", "-t", "MqaOrd{}" + SUFFIX, "-r", "2", "-w", "2", "-o", "true"),
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "get"),
        ("updateTopic", "-c", CLUSTER, "-t", "MqaOrdC{}" + SUFFIX, "-r", "3", "-w", "3", "-o", "true"),
        ("updateOrderConf", "-t", "MqaOrdC{}" + SUFFIX, "-m", "get"),
        ("updateOrderConf", "-t", "MqaOrd{}" + SUFFIX, "-m", "delete"),
        ("updateOrderConf", "-t", "MqaOrdC{}" + SUFFIX, "-m", "delete"),
    )
    outputs: list[str] = []
    for step in steps:
        apache, theirs = mqadmin.both(sides, *(lambda s, a=a: a.format("A", broker=s.broker_addr) for a in step))
        assert rows(theirs) == rows(apache), step
        capsys.readouterr()
        argv = [step[0], "-n", pocket.namesrv_addr, *SLOW_OK,
                *(a.format("B", broker=pocket.broker_addr) for a in step[1:])]
        assert pocketmq_main(argv) == 0
        mine = capsys.readouterr().out
        assert rows(mine.replace("MqaOrdB", "MqaOrdA").replace("MqaOrdCB", "MqaOrdCA")) == rows(theirs), step
        outputs.append(theirs)
    merged = ";".join({"broker-a": "broker-a:2", "broker-x": "broker-x:1"}[n]
                      for n in hash_map_order(["broker-x", "broker-a"]))
    assert f"orderConf=[{merged}]" in outputs[2]
    assert "set cluster orderConf. isOrder=true, orderConf=[broker-a:3]TopicConfig" in outputs[3]


def test_pocketmq_consume_message_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    topic = f"MqaOwnConsume{SUFFIX}"
    mqadmin.run(pocket.namesrv_addr, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "3", "-w", "3")
    mqadmin.run(pocket.namesrv_addr, "sendMessage", "-t", topic, "-p", "døgn", "-k", "k", "-b", "broker-a", "-i", "2")
    args = ("consumeMessage", "-t", topic, "-g", f"MqaOwnTools{SUFFIX}")
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
    mine = capsys.readouterr().out
    assert consumed(mine) == consumed(theirs)
    assert "body=[100, -61, -72, 103, 110]" in mine  # Java's signed bytes of "døgn"


def test_pocketmq_send_message_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    _, pocket = sides
    args = ("sendMessage", "-t", TOPIC, "-p", "own", "-c", "TagC", "-b", "broker-a", "-i", "2")
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    capsys.readouterr()
    assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
    assert rows(capsys.readouterr().out) == rows(theirs)


def test_pocketmq_query_msg_trace_by_id_prints_what_mqadmin_prints(
    sides: tuple[Side, Side], mqadmin: Mqadmin, capsys: pytest.CaptureFixture[str]
) -> None:
    """#ClientHost is the trace message's born host without its port (MessageExt.getBornHostString); pocketmq
    printed host:port. The consumer groups come in mqadmin's HashMap order, not the order they consumed in."""
    _, pocket = sides
    topic = f"MqaTrace{SUFFIX}"
    with SyncProducer(f"MqaTracePG{SUFFIX}", pocket.namesrv_addr, enable_msg_trace=True) as producer:
        sent = producer.send(Message(topic, b"traced", tags="TagT", keys="trace-key"))
    groups = ["MqaTraceSecond", "MqaTraceFirst"]  # consumed in this order; a HashMap holds them the other way
    assert hash_map_order(groups) == groups[::-1]
    for group in groups:
        got: list[MessageExt] = []

        def listener(msgs: list[MessageExt], _ctx: Any, got: list[MessageExt] = got) -> ConsumeConcurrentlyStatus:
            got.extend(msgs)
            # Still in the listener when the main thread shuts the consumer down: the SubAfter record is written
            # once the listener returns, so the shutdown must wait for the batch (await_termination_when_shutdown;
            # with the default 0 the batch was abandoned and the group's Sub row never came).
            threading.Event().wait(0.2)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = SyncPushConsumer(group, pocket.namesrv_addr, enable_msg_trace=True,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET", await_termination_when_shutdown=5.0)
        consumer.subscribe(topic, "*")
        consumer.register_message_listener(listener)
        consumer.start()
        try:
            deadline = time.monotonic() + 30
            while not got:
                assert time.monotonic() < deadline, group
                time.sleep(0.05)
        finally:
            consumer.shutdown()  # (sends the trace records still queued)
    args = ("queryMsgTraceById", "-i", sent.msg_id)
    deadline = time.monotonic() + 30
    while True:  # (each client's shutdown sent its records; the broker indexes them a moment later)
        capsys.readouterr()
        assert pocketmq_main([args[0], "-n", pocket.namesrv_addr, *SLOW_OK, *args[1:]]) == 0
        mine = capsys.readouterr().out
        if [row[0] for row in rows(mine)].count("Sub") == 2 and any(row[0] == "Pub" for row in rows(mine)):
            break
        assert time.monotonic() < deadline, mine
        time.sleep(0.2)
    theirs = mqadmin.run(pocket.namesrv_addr, *args)
    assert rows(mine) == rows(theirs)
    assert "127.0.0.1" in [cell for row in rows(mine) if row[0] == "Pub" for cell in row]
    assert [row[1] for row in rows(mine) if row[0] == "Sub"] == groups[::-1]


def test_export_configs(sides: tuple[Side, Side], mqadmin: Mqadmin, tmp_path: Path) -> None:
    """exportConfigs copies sixteen broker settings with Properties.setProperty, which refuses a null: three that
    pocketmq's GET_BROKER_CONFIG lacked (filterServerNums, slaveReadEnable, useTLS) failed it with a
    NullPointerException."""
    outputs = []
    for side in sides:
        where = tmp_path / side.name
        out = mqadmin.run(side.namesrv_addr, "exportConfigs", "-c", CLUSTER, "-f", str(where))
        outputs.append(rows(out.replace(str(where), "DIR")))
        exported = json.loads((where / "configs.json").read_text())
        assert exported["brokerConfigs"]["broker-a"]["useTLS"] == "false"
    assert outputs[1] == outputs[0]
