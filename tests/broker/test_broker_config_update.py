"""UPDATE_BROKER_CONFIG as RocketMQ's Configuration.update does it: the keys RocketMQ reads at each use take effect
at once (in the store's copy of the settings too), and every change is written into the properties file the broker
was started from, so it survives a restart; GET_BROKER_CONFIG answers the port actually bound."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from broker_harness import MQ, Cluster

from pocketmq.broker import BrokerConfigError, BrokerController
from pocketmq.broker.config import BrokerConfig
from pocketmq.common.codec import decode, decode_all
from pocketmq.common.constants import TRANSACTION_PREPARED_TYPE
from pocketmq.common.message import MessageExtBrokerInner
from pocketmq.common.topic_validator import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
from pocketmq.remoting.body import encode_body
from pocketmq.remoting.client_body import HeartbeatData, ProducerData
from pocketmq.remoting.codes import RequestCode, ResponseCode
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.transport import Channel
from pocketmq.storage.results import PutMessageStatus


async def update(mq: MQ, text: str) -> RemotingCommand:
    return await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=text.encode())


async def broker_config(mq: MQ) -> dict[str, str]:
    answer = await mq.invoke(RequestCode.GET_BROKER_CONFIG)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return dict(line.split("=", 1) for line in (answer.body or b"").decode().splitlines())


async def test_max_message_size_lowered_refuses_a_larger_message_from_the_next_put(cluster: Cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    assert (await mq.send("SizeT", b"x" * 2000)).code == ResponseCode.SUCCESS
    assert (await update(mq, "maxMessageSize=1024")).code == ResponseCode.SUCCESS
    assert (await broker_config(mq))["maxMessageSize"] == "1024"
    assert (await mq.send("SizeT", b"x" * 500)).code == ResponseCode.SUCCESS
    refused = await mq.send("SizeT", b"x" * 2000)
    assert refused.code == ResponseCode.MESSAGE_ILLEGAL and "1024" in (refused.remark or "")  # (Apache's: 13)
    # The commit log's own limit too, which the broker's own puts meet (a retry, a committed transaction): a
    # record of the size it took before the change is refused now.
    inner = MessageExtBrokerInner(topic="SizeT", body=b"x" * 2000, queue_id=0, properties={})
    result = await asyncio.to_thread(broker.store.put_message, inner)
    assert result.status == PutMessageStatus.MESSAGE_ILLEGAL, result
    for value in ("0", "-5"):
        answer = await update(mq, f"maxMessageSize={value}")
        assert answer.code == ResponseCode.SYSTEM_ERROR and "bad value for maxMessageSize" in (answer.remark or "")
    assert broker.store_config.max_message_size == 1024


async def test_retention_keys_reach_the_store_and_its_next_clean_round(cluster: Cluster) -> None:
    broker = await cluster.broker()  # (1 MiB commit-log files)
    mq = cluster.mq(broker)
    for i in range(3):
        assert (await mq.send("RetainT", bytes([i]) * 700_000)).code == ResponseCode.SUCCESS
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    files = broker.store.commit_log.mapped_file_queue.files
    assert len(files) == 3
    now = time.time()
    hour = time.localtime(now + 12 * 3600).tm_hour  # (never the hour of now + 2 h)
    text = (f"fileReservedTime=1\ndeleteWhen={hour:02d}\ndiskMaxUsedSpaceRatio=95\n"
            "diskSpaceWarningLevelRatio=97\ndiskSpaceCleanForciblyRatio=96\n")
    assert (await update(mq, text)).code == ResponseCode.SUCCESS
    sc = broker.store_config
    assert (sc.file_reserved_time, sc.delete_when, sc.disk_max_used_space_ratio) == (1, f"{hour:02d}", 95)
    # (RocketMQ 5's percent, the store's fraction)
    assert (sc.disk_space_warning_level_ratio, sc.disk_space_clean_forcibly_ratio) == (0.97, 0.96)
    clean = broker.store.clean_service
    # Two hours on, the files are older than an hour but it is not the hour to delete; twelve hours on it is.
    assert await asyncio.to_thread(clean.run_once, int((now + 2 * 3600) * 1000)) == 0
    assert await asyncio.to_thread(clean.run_once, int((now + 12 * 3600) * 1000)) == 2
    assert len(broker.store.commit_log.mapped_file_queue.files) == 1
    answer = await update(mq, "deleteWhen=4am")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "bad value for deleteWhen" in (answer.remark or "")
    # A digit that is not ASCII passed str.isdigit, and int() then failed every clean round (no file deleted).
    answer = await update(mq, "deleteWhen=0\u00b2")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "bad value for deleteWhen" in (answer.remark or "")


async def test_max_transfer_count_limits_the_next_pull(cluster: Cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    for i in range(5):
        assert (await mq.send("PullT", f"m{i}".encode())).code == ResponseCode.SUCCESS
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    assert (await update(mq, "maxTransferCountOnMessageInMemory=2")).code == ResponseCode.SUCCESS
    answer = await mq.pull("G", "PullT", 0, 0, max_nums=32)
    assert [m.body for m in decode_all(answer.body or b"")] == [b"m0", b"m1"]


async def test_transaction_keys_are_used_by_the_next_check(cluster: Cluster, poll: Any) -> None:
    # Started to ask about nothing for ten minutes (timeout) and to check every ten minutes (interval).
    broker = await cluster.broker(transaction_timeout=600, transaction_check_interval=600)
    mq = cluster.mq(broker)
    asked: asyncio.Queue[RemotingCommand] = asyncio.Queue()

    async def on_check(channel: Channel, request: RemotingCommand) -> None:
        await asked.put(request)

    mq.client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    heartbeat = encode_body(HeartbeatData("producer-1", [ProducerData("TxnPG")], []), mq.client.body_dialect)
    assert (await mq.invoke(RequestCode.HEART_BEAT, body=heartbeat)).code == ResponseCode.SUCCESS
    half = await mq.send("TxnT", b"ask", sys_flag=TRANSACTION_PREPARED_TYPE,
                         properties=mq.props("T", UNIQ_KEY="U-ask", TRAN_MSG="true", PGROUP="TxnPG"))
    assert half.code == ResponseCode.SUCCESS, half.remark
    answer = await update(mq, "transactionTimeOut=0\ntransactionCheckMax=1\ntransactionCheckInterval=20\n")
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    request = await asyncio.wait_for(asked.get(), 10.0)  # (the wait of 600 s cut short by the new interval)
    assert decode(request.body or b"").body == b"ask"
    # Asked once (transactionCheckMax=1), then moved to the check-max topic rather than asked again.
    service = broker.transactional_message_service
    await poll(lambda: service.discarded >= 1)
    assert asked.qsize() == 0
    await asyncio.to_thread(broker.store.wait_dispatched, 5.0)
    [moved] = decode_all(broker.store.get_message("t", RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0, 0, 10).body)
    assert moved.body == b"ask"
    answer = await update(mq, "transactionCheckInterval=0")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "bad value for transactionCheckInterval" in answer.remark


async def test_the_file_and_update_broker_config_refuse_the_same_values_alike(cluster: Cluster) -> None:
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    for line in ("transactionCheckInterval=0", "transactionCheckInterval=-1000", "maxMessageSize=0",
                 "deleteWhen=4am", "defaultTopicQueueNums=0", "deleteWhen=24", "diskMaxUsedSpaceRatio=200",
                 "diskSpaceWarningLevelRatio=-1"):
        answer = await update(mq, line)
        with pytest.raises(BrokerConfigError) as at_start:
            BrokerConfig.from_properties_text(line)
        assert answer.code == ResponseCode.SYSTEM_ERROR and f"<string>: {answer.remark}" == str(at_start.value)


@pytest.mark.timeout(60)  # (the old loop never gave the event loop back: this test hung, not failed)
async def test_a_transaction_check_interval_of_0_still_lets_the_broker_answer(cluster: Cluster) -> None:
    # Defence in depth: should an interval of 0 get past the checks, each pass still yields to the event loop.
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    broker.broker_config.transaction_check_interval = 0
    broker.transactional_message_check_service.interval_changed()
    rounds = broker.transactional_message_check_service.rounds
    for _ in range(3):
        answer = await asyncio.wait_for(mq.invoke(RequestCode.GET_BROKER_CONFIG), 10)
        assert answer.code == ResponseCode.SUCCESS
    assert broker.transactional_message_check_service.rounds > rounds
    broker.broker_config.transaction_check_interval = 60.0  # (not spinning through the cluster's shutdown)


async def test_black_listed_keys_are_no_permission_as_in_rocketmq_5(cluster: Cluster) -> None:
    # AdminBrokerProcessor.initConfigBlackList: the request is refused whole, its other keys unchanged too.
    broker = await cluster.broker()
    mq = cluster.mq(broker)
    for key in ("brokerConfigPath", "rocketmqHome", "configBlackList"):
        answer = await update(mq, f"autoCreateTopicEnable=false\n{key}=/tmp/x\n")
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert broker.broker_config.auto_create_topic_enable is True


async def test_get_broker_config_answers_the_bound_port_and_unsupported_keys_say_why(cluster: Cluster) -> None:
    broker = await cluster.broker()  # (listenPort=0)
    mq = cluster.mq(broker)
    assert (await broker_config(mq))["listenPort"] == str(broker.port) != "0"
    answer = await update(mq, "slaveReadEnable=true")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "RocketMQ key 'slaveReadEnable' is not supported by pocketmq (no slaves)"


CONF = ("# the broker's settings\nbrokerClusterName=DefaultCluster\n\n! comments stay\nautoCreateTopicEnable=true\n"
        "brokerPermission=6\n")


async def test_changes_survive_a_restart_on_the_file_the_broker_started_from(tmp_path: Path, dev_broker: Any) -> None:
    store = tmp_path / "dev"
    conf = tmp_path / "dev.conf"
    async with dev_broker(store, CONF) as dev:
        changes = "brokerPermission=4\nautoCreateTopicEnable=false\nmaxMessageSize=1024\nfileReservedTime=1\n"
        answer = await update(dev.mq, changes)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        # Written when the change is answered, the other lines kept; the file as it was in .bak.
        assert conf.read_text() == ("# the broker's settings\nbrokerClusterName=DefaultCluster\n\n! comments stay\n"
                                    "autoCreateTopicEnable=false\nbrokerPermission=4\nmaxMessageSize=1024\n"
                                    "fileReservedTime=1\n")
        assert (tmp_path / "dev.conf.bak").read_text() == CONF
    async with dev_broker(store, None) as dev:
        got = await broker_config(dev.mq)
        assert (got["brokerPermission"], got["autoCreateTopicEnable"]) == ("4", "false")
        assert (got["maxMessageSize"], got["fileReservedTime"]) == ("1024", "1")
        assert got["listenPort"] == dev.broker.rsplit(":", 1)[1]
        assert (await dev.mq.send("SizeT", b"x" * 2000)).code == ResponseCode.TOPIC_NOT_EXIST  # (no auto-create)


async def test_the_file_keeps_its_line_endings_encoding_and_permissions(cluster: Cluster, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    # CRLF lines, a Latin-1 comment, a key set twice (the last wins when read), no newline at the end; the file
    # holds the broker's key pair, so only its owner may read it.
    original = (b"# r\xe9glages du broker\r\nlongPollingEnable=true\r\nsecretKey=s3cret\r\naccessKey=broker\r\n"
                b"longPollingEnable = true\r\nbrokerPermission=6")
    conf.write_bytes(original)
    conf.chmod(0o600)
    link = tmp_path / "link.conf"
    link.symlink_to(conf)
    config = BrokerConfig.from_properties(link, defaults=vars(cluster.config("broker")))
    broker = BrokerController(config, config_file=link)
    await broker.start()
    cluster.brokers.append(broker)
    mq = cluster.mq(broker)
    assert (await update(mq, "longPollingEnable=false\nchannelExpiredTimeout=60000\n")).code == ResponseCode.SUCCESS
    assert conf.read_bytes() == (b"# r\xe9glages du broker\r\nlongPollingEnable=false\r\nsecretKey=s3cret\r\n"
                                 b"accessKey=broker\r\nlongPollingEnable=false\r\nbrokerPermission=6\r\n"
                                 b"channelExpiredTimeout=60000\r\n")
    assert link.is_symlink() and stat.S_IMODE(os.stat(conf).st_mode) == 0o600
    assert BrokerConfig.from_properties(conf).channel_expired_timeout == 60.0


async def test_a_value_with_trailing_blanks_is_taken_as_the_file_takes_it(cluster: Cluster) -> None:
    # Properties.load keeps a value's trailing blanks; the file's reader strips them, so an update does too.
    assert BrokerConfig.from_properties_text("maxMessageSize=1024 \n").max_message_size == 1024
    mq = cluster.mq(await cluster.broker())
    for text in ("maxMessageSize=1024 \n", "autoCreateTopicEnable=false\t\n"):
        answer = await update(mq, text)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert (await broker_config(mq))["maxMessageSize"] == "1024"
