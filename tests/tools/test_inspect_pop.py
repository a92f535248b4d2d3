"""inspect shows POP's records (docs/storage.md section 15) whole and in words: the checkpoint a pop writes and the
acks that answer it, both the copy the timer wheel holds and the one in the revive queue, written by a real broker
and read by `python -m pocketmq.storage inspect` as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from pocketmq import EmbeddedCluster
from pocketmq.client import Message, Producer, SimpleConsumer
from pocketmq.common import MessageExtBrokerInner
from pocketmq.storage import DefaultMessageStore, MessageStoreConfig


def inspect(store: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "pocketmq.storage", "inspect", str(store), "--commitlog", *args],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


async def test_checkpoints_and_acks_are_shown_whole_and_named(tmp_path: Path) -> None:
    # Without the pop buffer a checkpoint is written at the pop, not 10 s later.
    async with EmbeddedCluster(tmp_path, enable_pop_buffer_merge=False, revive_queue_num=1) as cluster:
        async with Producer("p", cluster.namesrv_addr) as producer:
            for i in range(3):
                await producer.send(Message("PopSeen", b"m%d" % i, tags="t"))
        await cluster.wait_dispatched()
        async with SimpleConsumer("a-group-with-a-name-longer-than-a-preview", cluster.namesrv_addr,
                                  subscriptions={"PopSeen": "*"}, init_mode=0, await_duration=3) as consumer:
            got: list = []
            while len(got) < 3:
                got += await consumer.receive(16, invisible_duration=60)
            await consumer.ack(got[0])
            await consumer.ack_batch(got[1:])
        async with SimpleConsumer("soon", cluster.namesrv_addr, subscriptions={"PopSeen": "*"}, init_mode=0,
                                  await_duration=3) as consumer:
            # Due in its revive queue a second before its revive time: at once, past the timer wheel.
            soon = await consumer.receive(1, invisible_duration=1)
        await cluster.wait_dispatched()
    store = tmp_path / "store"
    records = [r for f in json.loads(inspect(store, "--json"))["commitlog"]["files"] for r in f["records"]]
    assert all(r["pop"] is None for r in records if r["topic"] == "PopSeen")
    pops = [r["pop"] for r in records if r["pop"] is not None]
    cks = [p for p in pops if p["kind"] == "ck"]
    acks = [p for p in pops if p["kind"] in ("ack", "bAck")]
    assert {p["kind"] for p in acks} == {"ack", "bAck"}
    assert {(p["revive_topic"], p["revive_queue"]) for p in pops} == {("rmq_sys_REVIVE_LOG_DefaultCluster", 0)}
    direct = [p for p in cks if not p["in_timer"]]
    assert [p["fields"]["c"] for p in direct] == ["soon"] and direct[0]["fields"]["it"] == 1000
    cks = [p for p in cks if p["in_timer"]]
    assert sum(p["fields"]["n"] for p in cks) == 3
    assert all(p["in_timer"] for p in acks)  # due at their revive time, a minute away
    popped = {(m.queue_id, m.queue_offset) for m in got}
    assert {(p["fields"]["q"], p["fields"]["so"] + d) for p in cks for d in p["fields"]["d"]} == popped
    assert {(p["fields"]["q"], o) for p in acks for o in p["fields"].get("aol", [p["fields"]["ao"]])} == popped
    assert {p["fields"]["c"] for p in acks + cks} == {"a-group-with-a-name-longer-than-a-preview"}
    assert len(soon) == 1

    text = inspect(store)
    ck = next(r for r in records if r["pop"] is not None and r["pop"]["kind"] == "ck")
    body = json.dumps(ck["pop"]["fields"], separators=(",", ":"))
    assert f"body {body}\n" in text  # the whole body, not a 60-character preview
    assert ("POP checkpoint (ck), the timer's copy, put in rmq_sys_REVIVE_LOG_DefaultCluster queue 0 at its "
            "TIMER_DELIVER_MS") in text
    f = ck["pop"]["fields"]
    offsets = ", ".join(str(f["so"] + d) for d in f["d"])
    assert (f"group {f['c']} (c) popped {f['n']} (n) of PopSeen (t) queue {f['q']} (q), offsets {offsets} (so + d), "
            "popped at ") in text
    assert "invisible 60000 ms (it): revive time " in text and "acked in bm: none; broker broker-a (bn)" in text
    assert "POP ack (ack), the timer's copy" in text and "POP batch ack (bAck), the timer's copy" in text
    assert "POP checkpoint (ck), in revive queue 0\n" in text and "group soon (c) popped 1 (n) of PopSeen" in text
    assert re.search(r" offset\(s\) \d+(, \d+)* \(aol\), of the checkpoint from offset \d+ \(so\) popped at ", text)


def test_a_body_that_is_no_checkpoint_is_said_so(tmp_path: Path) -> None:
    store = DefaultMessageStore(MessageStoreConfig(store_path_root_dir=str(tmp_path / "s"),
                                                   mapped_file_size_commit_log=1024 * 1024, max_hash_slot_num=64,
                                                   max_index_num=256))
    store.load()
    store.start()
    store.put_message(MessageExtBrokerInner("rmq_sys_REVIVE_LOG_C", b"not json", {"TAGS": "ck"}))
    store.put_message(MessageExtBrokerInner("rmq_sys_REVIVE_LOG_C", b'{"so":1}', {"TAGS": "ack"}))
    store.shutdown()
    text = inspect(tmp_path / "s")
    assert "POP checkpoint (ck), in revive queue 0\n      ! its body is no checkpoint: not JSON: b'not json'" in text
    assert "POP ack (ack), in revive queue 0\n      ! its body is no ack: bad ack" in text
