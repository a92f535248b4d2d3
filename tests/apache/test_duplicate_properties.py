"""A message whose encoded properties name KEYS, UNIQ_KEY or TAGS twice, or give one empty before a real one (a
client writing the properties string itself can): found by key and filtered by tag on the value the broker reads
for it, the last non-empty one (Java's HashMap of MessageDecoder.string2messageProperties), on Apache RocketMQ
4.9.7 and on pocketmq alike, with the C dispatch step and without it."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pocketmq.common.codec import decode_all
from pocketmq.embedded import ThreadedCluster
from pocketmq.remoting.codes import RequestCode as R
from tests.apache.apache_rocketmq import ApacheRocketMQ
from tests.apache.differential import call, request

FAR = 2**63 - 1


def _outcomes(addr: str, run: str) -> dict[str, Any]:
    topic = f"Dup{run}"
    created = call(addr, request(R.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}))
    assert created.code == 0, created
    sends = {"keys": "KEYS\x01kA\x02KEYS\x01kB\x02", "emptykeys": "KEYS\x01\x02KEYS\x01kE\x02",
             "uniq": f"UNIQ_KEY\x01UA{run}\x02UNIQ_KEY\x01UB{run}\x02", "tags": "TAGS\x01tA\x02TAGS\x01tB\x02"}
    for body, props in sends.items():
        sent = call(addr, request(R.SEND_MESSAGE_V2, {
            "a": "PG", "b": topic, "c": "TBW102", "d": 1, "e": 0, "f": 0, "g": int(time.time() * 1000), "h": 0,
            "i": props, "j": 0, "k": "false", "m": "false"}, body.encode()))
        assert sent.code == 0, sent
    out: dict[str, Any] = {}
    deadline = time.monotonic() + 30
    while True:  # (a send is answered before its dispatch; the index follows)
        for key in ("kA", "kB", "kE", f"UA{run}", f"UB{run}"):
            found = call(addr, request(R.QUERY_MESSAGE, {"topic": topic, "key": key, "maxNum": 32,
                                                         "beginTimestamp": 0, "endTimestamp": FAR}))
            out[f"query {key[:2]}"] = (found.code, sorted(m.body for m in decode_all(found.raw_body or b"")))
        if all(out[q][0] == 0 for q in ("query kB", "query kE", "query UB")) or time.monotonic() > deadline:
            break  # (each send is indexed after its answer, and in no set order with the others)
        time.sleep(0.2)
    for tag in ("tA", "tB"):
        pulled = call(addr, request(R.PULL_MESSAGE, {
            "consumerGroup": f"g{run}", "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
            "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": tag,
            "expressionType": "TAG"}))
        out[f"pull {tag}"] = (pulled.code, sorted(m.body for m in decode_all(pulled.raw_body or b""))
                              if pulled.code == 0 else [])
    return out


@pytest.mark.parametrize("c_dispatch", [True, False], ids=["c", "python"])
def test_the_last_non_empty_value_is_the_one_found_as_on_apache_rocketmq(
    apache_rocketmq: ApacheRocketMQ, tmp_path: Path, c_dispatch: bool
) -> None:
    run = uuid.uuid4().hex[:6]
    with ThreadedCluster(tmp_path) as pocket:
        index = pocket.cluster.brokers[0].store.index_service
        assert index is not None and index.index_record is not None  # (built by `make`)
        if not c_dispatch:
            index.index_record = None
        pocketmq = _outcomes(pocket.broker_addr, run)
    apache = _outcomes(apache_rocketmq.broker_addr, run)
    assert pocketmq["query kB"] == (0, [b"keys"]) and pocketmq["pull tB"] == (0, [b"tags"])
    assert pocketmq == apache
