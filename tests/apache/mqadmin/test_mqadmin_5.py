"""Apache RocketMQ 5.5.0's mqadmin: its commands that 4.9.7's broker lacks, on pocketmq and on Apache 5.5.0 after the
same setup there (sides5, conftest.py)."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pocketmq.client import (
    Message,
    SyncProducer,
    SyncPullConsumer,
)
from pocketmq.embedded import ThreadedCluster

from .sides import (
    CLUSTER,
    GROUP,
    QUEUES,
    SUFFIX,
    TOPIC,
    Mqadmin,
    Side,
    config,
    key_paths,
    mask,
    message_rows,
    properties_of,
    rows,
    wait_no_lag,
)

# --- 5.5.0's mqadmin ------------------------------------------------------------------------------------------


def test_mqadmin_5(sides: tuple[Side, Side], mqadmin: Mqadmin, mqadmin5: Mqadmin) -> None:
    # 5.x's topicStatus first asks each broker for the topic's config (GET_TOPIC_CONFIG, 351), which 4.9.7's
    # broker does not answer: pocketmq's answer to 5.5.0's tools is compared with 4.9.7's tools on Apache.
    apache = mqadmin.run(sides[0].namesrv_addr, "topicStatus", "-t", TOPIC)
    pocket = mqadmin5.run(sides[1].namesrv_addr, "topicStatus", "-t", TOPIC)
    *queues, tps = rows(pocket)  # 5.x adds the topic's put rate
    assert queues == rows(apache) and len(queues) == 1 + QUEUES
    assert tps[:3] == ["Topic", "Put", "TPS:"]
    apache, pocket = mqadmin5.both(sides, "consumerConnection", "-g", GROUP)
    assert rows(pocket) == rows(apache)
    apache, pocket = mqadmin5.both(sides, "queryMsgById", "-t", TOPIC, "-i", lambda s: s.offset_msg_ids[2])
    assert message_rows(pocket) == message_rows(apache)


def test_set_consume_mode_5(sides: tuple[Side, Side], pocket: ThreadedCluster, mqadmin5: Mqadmin) -> None:
    # 5.x's setConsumeMode (SET_MESSAGE_REQUEST_MODE, 401), which 4.9.7's broker does not have: the group's
    # mode on pocketmq's broker afterwards is what the command asked (its answers to Apache 5.5.0's broker are
    # compared in test_apache_assignment.py).
    group = f"{GROUP}-pop"  # not the group the package's other tests consume with
    out = mqadmin5.run(sides[1].namesrv_addr, "setConsumeMode", "-c", CLUSTER, "-t", TOPIC, "-g", group,
                       "-m", "POP", "-q", "2")
    assert f"set consume mode to {sides[1].broker_addr} success." in out
    assert f"topic[{TOPIC}] group[{group}] consume mode[POP] popShareQueueNum[2]" in out
    mode = pocket.cluster.broker.query_assignment_processor.mode_of(TOPIC, group)
    assert (mode.mode, mode.pop_share_queue_num) == ("POP", 2)


# --- 5.5.0's mqadmin against Apache 5.5.0 ---------------------------------------------------------------------


# Rates, hours, disk share and clusterList's timer backlog (5.x's #Timer(Progress), behind-offset): a moment's
_MEASURED = re.compile(r"\d+\.\d+|\b\d+-\d+(?=\()")


def _rows_measured_masked(text: str) -> list[list[str]]:
    return rows(_MEASURED.sub("N", mask(text)))


def test_cluster_list_and_broker_status_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's clusterList reads brokerActive (#ACTIVATED), getTransferredTps (#OutTPS, 4.x's getTransferedTps
    renamed) and the ack pool's figures from GET_BROKER_RUNTIME_INFO; the rates, hours and disk share differ."""
    apache, pocket = mqadmin5.both(sides5, "clusterList")
    assert _rows_measured_masked(pocket) == _rows_measured_masked(apache)
    assert rows(pocket)[1][-1] == "true"
    apache, pocket = mqadmin5.both(sides5, "brokerStatus", "-b", lambda s: s.broker_addr)
    status = [properties_of(text) for text in (apache, pocket)]
    read = {"brokerActive", "getTransferredTps", "ackThreadPoolQueueSize", "ackThreadPoolQueueHeadWaitTimeMills"}
    assert read <= set(status[0]) & set(status[1])
    assert status[1]["getTransferredTps"] == status[1]["getTransferedTps"]  # (one figure, both names)


def test_consumer_progress_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's consumerProgress prints #Inflight, each queue's pullOffset (the group's last pull) less its consumer
    offset; pocketmq sent no pullOffset, read as 0: minus the consumed messages."""
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", GROUP)
    # The empty retry queue at 0: listed by 5.5.0 only (Side.lists_empty_retry_queue).
    theirs = _rows_measured_masked(apache)
    theirs.remove([f"%RETRY%{GROUP}", "broker-a", "0", "0", "0", "0", "0", "N/A"])
    assert _rows_measured_masked(pocket) == theirs
    assert ["Consume", "Inflight", "Total:", "0"] in rows(pocket)


def test_consumer_progress_with_messages_in_flight_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """#Inflight where the group pulled past its commit: queue 0's five messages pulled and two committed (3 in
    flight), two of queue 1's three pulled and one committed (1 in flight); the broker keeps each queue's last pull
    (the pull offset, never behind the commit), the Diff counts from the commit."""
    topic, group = f"MqaInflight{SUFFIX}", f"MqaInflightGroup{SUFFIX}"
    mqadmin5.both(sides5, "updateTopic", "-c", CLUSTER, "-t", topic, "-r", "2", "-w", "2")
    mqadmin5.both(sides5, "updateSubGroup", "-c", CLUSTER, "-g", group)

    def pull_past_the_commit(side: Side) -> None:
        with SyncProducer(f"{group}P", side.namesrv_addr, protocol="rocketmq") as producer:
            for queue_id, count in ((0, 5), (1, 3)):
                for i in range(count):
                    producer.send(Message(topic, b"inflight %d" % i), selector=lambda mqs, _m, q: mqs[q],
                                  arg=queue_id)
        with SyncPullConsumer(group, side.namesrv_addr, protocol="rocketmq") as consumer:
            queues = sorted(consumer.fetch_subscribe_message_queues(topic), key=lambda q: q.queue_id)
            for mq, pulled, committed in ((queues[0], 5, 2), (queues[1], 2, 1)):
                assert len(consumer.pull(mq, "*", 0, pulled).msg_found_list) == pulled
                consumer.update_consume_offset(mq, committed)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(pull_past_the_commit, sides5))
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", group)
    assert _rows_measured_masked(pocket) == _rows_measured_masked(apache)
    # (#QID, #Broker Offset, #Consumer Offset, #Diff, #Inflight)
    assert [r[2:7] for r in rows(pocket) if r[0] == topic] == [["0", "5", "2", "3", "3"], ["1", "3", "1", "2", "1"]]
    assert ["Consume", "Inflight", "Total:", "4"] in rows(pocket)
    mqadmin5.both(sides5, "deleteTopic", "-c", CLUSTER, "-t", topic)
    mqadmin5.both(sides5, "deleteSubGroup", "-c", CLUSTER, "-g", group)


def test_update_topic_list_and_update_sub_group_list_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin,
                                                        tmp_path: Path) -> None:
    """5.x's batch creations (UPDATE_AND_CREATE_TOPIC_LIST, 18; UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, 225), as
    mqadmin sends them from a file of configs: each topic routed with its queues, each group's config kept (but
    5.x's subscriptionDataSet, which pocketmq does not keep: the file has none)."""
    topics = [f"MqaList{n}{SUFFIX}" for n in "AB"]
    groups = [f"MqaListGroup{n}{SUFFIX}" for n in "AB"]
    topic_file, group_file = tmp_path / "topics.json", tmp_path / "groups.json"
    topic_file.write_text(json.dumps([{"topicName": t, "readQueueNums": 2, "writeQueueNums": 3, "perm": 6,
                                       "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False,
                                       "attributes": {}} for t in topics]))
    group_file.write_text(json.dumps([{"groupName": g, "consumeEnable": True, "consumeFromMinEnable": True,
                                       "consumeBroadcastEnable": False, "retryQueueNums": 1, "retryMaxTimes": 5,
                                       "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
                                       "notifyConsumerIdsChangedEnable": True, "groupSysFlag": 0,
                                       "consumeTimeoutMinute": 15, "attributes": {}}
                                      for g in groups]))
    for command, file in (("updateTopicList", topic_file), ("updateSubGroupList", group_file)):
        apache, pocket = mqadmin5.both(sides5, command, "-b", lambda s: s.broker_addr, "-f", str(file))
        assert rows(pocket) == rows(apache)
        assert "success, please check the result later." in pocket
    for topic in topics:
        apache, pocket = mqadmin5.both(sides5, "topicRoute", "-t", topic)
        assert mask(pocket) == mask(apache)
        assert '"readQueueNums":2' in pocket and '"writeQueueNums":3' in pocket
    for group in groups:
        apache, pocket = mqadmin5.both(sides5, "getConsumerConfig", "-g", group)
        assert config(pocket) == config(apache)
        assert config(pocket)["retryMaxTimes"] == "5"


def test_ha_status_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """haStatus (GET_BROKER_HA_STATUS, 907) of a master without slaves: its commit log's max offset (each store's
    own), no slave."""
    apache, pocket = mqadmin5.both(sides5, "haStatus", "-b", lambda s: s.broker_addr)
    cells = [rows(text) for text in (apache, pocket)]
    for c in cells:
        assert c[1][0] == "#MasterCommitLogMaxOffset" and int(c[1][1]) > 0
        c[1][1] = "N"
    assert cells[1] == cells[0]
    assert ["#SlaveNum", "0"] in cells[1]


def test_reset_offset_of_one_queue_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin) -> None:
    """5.x's resetOffsetByTime -b -q -o (resetOffsetByQueueId: UPDATE_CONSUMER_OFFSET, then
    INVOKE_BROKER_TO_RESET_OFFSET with queueId and offset): the group's running consumer consumes that queue again
    from the offset, and nothing else; an offset outside the queue is refused. pocketmq reset every queue to its
    first message (its running consumer consumed everything again), and stored 999."""
    before = [len(side.consumed) for side in sides5]
    args = ("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "0", "-b", lambda s: s.broker_addr, "-q", "0")
    apache, pocket = mqadmin5.both(sides5, *args, "-o", "1")
    assert rows(pocket) == rows(apache)
    assert rows(pocket)[-1] == ["reset", "consumer", "offset", "to", "1"]
    again = []
    for side, n in zip(sides5, before, strict=True):
        # (Apache's consumer learns of it at its next pull of the queue, and waits its offset_illegal_delay)
        wait_no_lag(side, mqadmin5, lambda side=side, n=n: len(side.consumed) > n)
        again.append(sorted((m.queue_id, m.queue_offset) for m in side.consumed[n:]))
    assert again[1] == again[0] == [(0, 1)]
    refusals = []
    for side in sides5:
        with pytest.raises(AssertionError) as refused:
            mqadmin5.run(side.namesrv_addr, *(a(side) if callable(a) else a for a in args), "-o", "999")
        refusals.append(set(re.findall(r"CODE: 1\s+DESC: (Target offset [^\n]*?\])", str(refused.value))))
    assert refusals[1] == refusals[0] == {"Target offset 999 not in consume queue range [0-2]"}
    for side in sides5:
        wait_no_lag(side, mqadmin5)
    apache, pocket = mqadmin5.both(sides5, "consumerProgress", "-g", GROUP)
    theirs = _rows_measured_masked(apache)
    theirs.remove([f"%RETRY%{GROUP}", "broker-a", "0", "0", "0", "0", "0", "N/A"])
    assert _rows_measured_masked(pocket) == theirs


def test_export_metrics_5(sides5: tuple[Side, Side], mqadmin5: Mqadmin, tmp_path: Path) -> None:
    """5.x's exportMetrics splits getTransferredTps: without it (pocketmq sent 4.x's name only) it failed with a
    NullPointerException and wrote nothing."""
    outputs, exported = [], []
    for side in sides5:
        where = tmp_path / side.name
        out = mqadmin5.run(side.namesrv_addr, "exportMetrics", "-c", CLUSTER, "-f", str(where))
        outputs.append(rows(out.replace(str(where), "DIR")))
        exported.append(key_paths(json.loads((where / "metrics.json").read_text())))
    assert outputs[1] == outputs[0] == [["export", "DIR/metrics.json", "success"]]
    assert exported[1] == exported[0]
