"""broker.conf read with Java's Properties.load syntax, as Apache RocketMQ's BrokerStartup reads it (Properties.load,
then MixAll.properties2Object), and updateBrokerConfig's write-back of such a file.

What Apache's broker makes of the four files of the first test, from the audit that ran them through 4.9.7's and
5.5.0's Properties.load + properties2Object (pocketmq read them wrongly or refused them before):
brokerName=brokeré, brokerClusterName=Clüster; storePathRootDir=C:\\rocketmq\\store;
messageDelayLevel=[1s 5s 10s 30s 1m 2m 3m]; listenPort=10921, deleteWhen=05."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_harness import Cluster
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.broker import BrokerConfig, BrokerConfigError
from pocketmq.broker.config_properties import decode_properties_file, update_properties_bytes
from pocketmq.common.properties_text import parse_properties
from pocketmq.remoting.codes import RequestCode, ResponseCode


@pytest.mark.parametrize(("text", "expected"), [
    ("brokerName=broker\\u00e9\nbrokerClusterName=Cl\\u00FCster\n",
     {"broker_name": "brokeré", "broker_cluster_name": "Clüster"}),
    ("storePathRootDir=C:\\\\rocketmq\\\\store\n", {"store_path_root_dir": "C:\\rocketmq\\store"}),
    ("messageDelayLevel=1s 5s 10s 30s \\\n   1m 2m 3m\n", {"message_delay_level": "1s 5s 10s 30s 1m 2m 3m"}),
    ("listenPort 10921\ndeleteWhen : 05\n", {"listen_port": 10921, "delete_when": "05"}),
])
def test_a_file_reads_as_apaches_broker_reads_it(tmp_path: Path, text: str, expected: dict[str, object]) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("# the audit's case\n" + text)
    config = BrokerConfig.from_properties(conf)
    assert {name: getattr(config, name) for name in expected} == expected


@pytest.mark.parametrize(("text", "message"), [
    # (a continued line's error names the line it starts on)
    ("brokerName=b\nmaxMessageSize=10 \\\n  24\n", r"broker.conf:2: bad value for maxMessageSize: .*'10 24'"),
    ("brokerName=b\nautoCreateTopicEnabel \\\n  true\n",
     r"broker.conf:2: unknown broker config key 'autoCreateTopicEnabel'; did you mean 'autoCreateTopicEnable'"),
    # (Apache's broker stops at start: Properties.load throws "Malformed \uxxxx encoding.")
    ("brokerName=b\n\nbrokerClusterName=C\\u00g9\n", r"broker.conf:3: malformed \\uxxxx escape '\\\\u00g9'"),
])
def test_errors_name_the_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(text)
    with pytest.raises(BrokerConfigError, match=message):
        BrokerConfig.from_properties(conf)


def test_bytes_that_are_not_utf8_are_refused_in_a_setting_only(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_bytes(b"# r\xe9glages \\\nbrokerName=b \\\n  caf\xe9\n")  # (a comment never continues)
    with pytest.raises(BrokerConfigError, match=r"broker.conf:3: byte 0xe9 is not UTF-8"):
        BrokerConfig.from_properties(conf)
    conf.write_bytes(b"brokerName=b\\\n\n# caf\xe9 \\\nbrokerClusterName=c\r\n")
    c = BrokerConfig.from_properties(conf)
    assert (c.broker_name, c.broker_cluster_name) == ("b", "c")


def test_the_write_back_replaces_every_line_of_a_continued_setting() -> None:
    data = (b"# delay levels \\\nmessageDelayLevel=1s 5s \\\r\n   10s\r\nbrokerName=b\\\\\r\n"
            b"maxMessageSize=1\\\n")  # (the file ends in a continuing backslash)
    out = update_properties_bytes(data, {"messageDelayLevel": "2s", "brokerName": "C:\\b é", "fileReservedTime": "1"})
    assert out == (b"# delay levels \\\nmessageDelayLevel=2s\r\nbrokerName=C:\\\\b \\u00e9\r\nmaxMessageSize=1\\\n"
                   b"\nfileReservedTime=1\n")  # (a blank line: the appended key is a setting of its own)
    assert parse_properties(decode_properties_file(out, "f")) == {
        "messageDelayLevel": "2s", "brokerName": "C:\\b é", "maxMessageSize": "1", "fileReservedTime": "1"}


def test_printed_settings_read_back_the_same() -> None:
    # (`pocketmq broker -p` and GET_BROKER_CONFIG: what Java's Properties.load, or pocketmq's, reads back)
    config = BrokerConfig(broker_name="brokeré", store_path_root_dir="C:\\rocketmq\\store", namesrv_addr="h:1;h:2")
    text = config.to_properties()
    assert "brokerName=broker\\u00e9" in text and "storePathRootDir=C:\\\\rocketmq\\\\store" in text
    assert "namesrvAddr=h:1;h:2" in text and text.isascii()
    assert BrokerConfig.from_properties_text(text) == config


LINES = ["a=1\n", "a = 2 \\\n", "   continued\n", "b:\\u00e9\\\\\r\n", "# c \\\n", "! x\r", "\n", "key\\ sp=v\n",
         "x=\\\n", "c=tail\\", "   \\\n", "\u00e9=\u00e9\n", "listenPort 1\n", "\\\n# after a lone backslash\n",
         "d\\\n", "=\\\r\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=12),
       st.dictionaries(st.sampled_from(["a", "b", "c", "x", "d", "", "key sp", "é"]) | st.text(), st.text(),
                       min_size=1, max_size=4))
def test_a_written_back_value_reads_back_as_written(lines: list[str], values: dict[str, str]) -> None:
    data = "".join(lines).encode()
    before = parse_properties(decode_properties_file(data, "f"))
    after = parse_properties(decode_properties_file(update_properties_bytes(data, values), "f"))
    assert after == {**before, **values}


async def test_update_broker_config_reads_its_body_as_javas_properties_load(cluster: Cluster) -> None:
    mq = cluster.mq(await cluster.broker())
    answer = await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxMessageSize \\\n  2048\n")
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    got = await mq.invoke(RequestCode.GET_BROKER_CONFIG)
    assert parse_properties((got.body or b"").decode())["maxMessageSize"] == "2048"
    # RocketMQ's answer to a body Properties.load throws on: SYSTEM_ERROR "string2Properties error"
    answer = await mq.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"maxMessageSize=\\u12")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "string2Properties error: line 1: malformed \\uxxxx escape '\\\\u12'"
