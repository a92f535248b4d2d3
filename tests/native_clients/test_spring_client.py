"""A Spring Boot application on rocketmq-spring-boot-starter against pocketmq (issue 27).

spring/ is a Maven project (`make spring-client` builds spring/target/spring-client.jar, `make test` does so
first). Its only RocketMQ settings are rocketmq.name-server and rocketmq.producer.group; its topics and groups
come as demo.* properties on the command line. It sends with RocketMQTemplate (syncSend, asyncSend,
syncSendOrderly, sendMessageInTransaction, sendAndReceive), listens with @RocketMQMessageListener (concurrent,
orderly, and a RocketMQReplyListener), prints JSON lines of what happened and exits when its listeners have had
what it was told to expect. A missing build fails the test with the command that makes it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from real_clients import (
    FAST_RETRY_BROKER,
    TAGS,
    Driver,
    body_for,
    create_topic,
    expected,
    pocketmq_messages,
    pull_with_pocketmq,
    reported,
    send_with_pocketmq,
    unique,
)

from pocketmq import embedded
from pocketmq.client import MessageExt

HERE = Path(__file__).resolve().parent
SPRING_DIR = HERE / "spring"
SPRING_JAR = Path(os.environ.get("POCKETMQ_SPRING_CLIENT_JAR", SPRING_DIR / "target" / "spring-client.jar"))
JAVA = shutil.which("java")
# A small JVM that starts fast: the application is a test driver, not a server.
JVM_OPTIONS = ["-Xmx256m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
APP_TIMEOUT = 240.0

# The UNKNOWN local transaction is checked back after 2 s instead of 6 s, and checks run every 0.5 s, not 60 s.
FAST_TRANSACTION_CHECK: dict[str, Any] = {"transaction_timeout": 2.0, "transaction_check_interval": 0.5}


@pytest.fixture(autouse=True)
def spring_client_built() -> Iterator[None]:
    assert JAVA is not None, "java is not installed: run `make spring-client` (it installs a JDK from Debian)"
    assert SPRING_JAR.exists(), f"the Spring application is not built ({SPRING_JAR}): run `make spring-client`"
    built = SPRING_JAR.stat().st_mtime
    sources = [SPRING_DIR / "pom.xml", *(p for p in (SPRING_DIR / "src").rglob("*") if p.is_file())]
    stale = [str(p.relative_to(SPRING_DIR)) for p in sources if p.stat().st_mtime > built]
    assert not stale, f"{SPRING_JAR} is older than {stale}: run `make spring-client`"
    yield


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Any]:
    async with embedded.EmbeddedCluster(tmp_path / "pocketmq", **FAST_RETRY_BROKER, **FAST_TRANSACTION_CHECK) as c:
        yield c


async def run_app(cluster: Any, tmp_path: Path, **demo: Any) -> Driver:
    """Runs the application to its end; its stdout is JSON lines, its stderr (Spring's log) goes to a file.

    The Java client gives a name server 3 s to answer while a listener container starts, and a Spring context
    whose container fails to start stops. On a machine crowded far past its cores that happens before the
    application has done anything (no "started" event): then it is started once more, as a restart policy would.
    """
    for attempt in (1, 2):
        driver = await _start_app(cluster, tmp_path, attempt, demo)
        try:
            await driver.wait_for(lambda d: bool(d.of("done")), timeout=APP_TIMEOUT + 30)
            await asyncio.wait_for(driver.proc.wait(), 30)
        finally:
            await driver.kill()
        stderr = driver.stderr_path.read_text(errors="replace")
        if attempt == 1 and not driver.of("started") and "exception.RemotingTimeoutException" in stderr:
            continue
        break
    await driver.done(timeout=1)
    return driver


async def _start_app(cluster: Any, tmp_path: Path, attempt: int, demo: dict[str, Any]) -> Driver:
    home = tmp_path / "spring-home"  # the RocketMQ client writes its log under user.home
    home.mkdir(exist_ok=True)
    argv = [str(JAVA), *JVM_OPTIONS, f"-Duser.home={home}", f"-Djava.io.tmpdir={home}", "-jar", str(SPRING_JAR),
            f"--rocketmq.name-server={cluster.namesrv_addr}", f"--demo.timeout={APP_TIMEOUT}"]
    argv += [f"--demo.{name.replace('_', '-')}={value}" for name, value in demo.items()]
    stderr_path = tmp_path / f"spring-{attempt}.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=tmp_path, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=stderr)
    driver = Driver("spring", proc, stderr_path)
    driver.reader = asyncio.create_task(driver.read())
    return driver


def stored_by_keys(stored: list[MessageExt]) -> dict[str, MessageExt]:
    return {" ".join(m.keys): m for m in stored}


def assert_sent_and_stored(sent: list[dict[str, Any]], stored: dict[str, MessageExt], count: int) -> None:
    """Each message Spring reports as SEND_OK is stored once, at the reported queue and offset, intact."""
    assert sorted(e["i"] for e in sent) == list(range(count))
    assert {e["status"] for e in sent} == {"SEND_OK"}
    for e in sent:
        m = stored[e["keys"]]
        assert (m.body.decode(), m.tags) == (e["body"], e["tags"])
        assert (m.properties["idx"], m.properties.get("city")) == (str(e["i"]), "Zürich" if e["i"] % 10 == 7 else None)
        assert (m.queue_id, m.queue_offset, m.uniq_key, m.offset_msg_id) == (
            e["queue_id"], e["offset"], e["msg_id"], e["offset_msg_id"])
        # The Java client compresses bodies over 4 KiB (sysFlag bit 0); the store keeps them so.
        assert bool(m.sys_flag & 1) == (len(e["body"].encode()) > 4096)


async def test_spring_boot_application_sends_and_listens_through_pocketmq(cluster: Any, tmp_path: Path) -> None:
    topic, orderly_topic, txn_topic, reply_topic = (unique(p) for p in ("SpringT", "SpringOrderT", "SpringTxnT",
                                                                        "SpringReplyT"))
    for t in (topic, orderly_topic, txn_topic, reply_topic):
        await create_topic(cluster, t)
    ours = pocketmq_messages(topic, unique("frompocketmq"), 20)
    await send_with_pocketmq(cluster, ours)
    count, prefix = 20, unique("sp")
    app = await run_app(cluster, tmp_path, topic=topic, orderly_topic=orderly_topic, txn_topic=txn_topic,
                        reply_topic=reply_topic, group=unique("SpringG"), prefix=prefix, count=count,
                        expect_concurrent=len(ours) + 2 * count, expect_orderly=count, expect_txn=2, replies=3)
    sent = {mode: [e for e in app.of("sent") if e["mode"] == mode]
            for mode in ("sync", "async", "orderly", "transaction")}

    # syncSend and asyncSend: stored intact with tags, keys and user properties; one callback per async send.
    stored = stored_by_keys(await pull_with_pocketmq(cluster, topic))
    assert_sent_and_stored(sent["sync"], stored, count)
    assert_sent_and_stored(sent["async"], stored, count)
    assert all(e.get("callback") for e in sent["async"])

    # The concurrent listener got what pocketmq sent and what the application sent, properties intact.
    concurrent = {e["keys"]: e for e in app.messages if e["listener"] == "concurrent"}
    assert {k: reported(e) for k, e in concurrent.items() if k in {expected(m)["keys"] for m in ours}} == {
        expected(m)["keys"]: expected(m) for m in ours}
    for e in sent["sync"] + sent["async"]:
        got = concurrent[e["keys"]]
        assert (got["body"], got["tags"], got["props"]["idx"], got["msg_id"]) == (
            e["body"], e["tags"], str(e["i"]), e["msg_id"])
    assert len(concurrent) == len(ours) + 2 * count
    assert {e["topic"] for e in concurrent.values()} == {topic}

    # syncSendOrderly: each order id on one queue, and the orderly listener got each queue in order.
    queue_of = {}
    for order in range(4):
        queues = {e["queue_id"] for e in sent["orderly"] if e["order"] == order}
        assert len(queues) == 1, f"order {order} spread over {queues}"
        queue_of[order] = queues.pop()
    orderly = [e for e in app.messages if e["listener"] == "orderly"]
    for order, q in queue_of.items():
        seen = [int(e["props"]["idx"]) for e in orderly if e["queue_id"] == q and int(e["props"]["idx"]) % 4 == order]
        assert seen == list(range(order, count, 4)), f"order {order} on queue {q}"

    # sendMessageInTransaction: COMMIT is delivered, ROLLBACK never, UNKNOWN after the broker's check-back
    # (CHECK_TRANSACTION_STATE to the application's producer), which commits it.
    txn = {e["outcome"]: e for e in sent["transaction"]}
    assert {o: (e["status"], e["local_state"]) for o, e in txn.items()} == {
        "COMMIT": ("SEND_OK", "COMMIT_MESSAGE"), "ROLLBACK": ("SEND_OK", "ROLLBACK_MESSAGE"),
        "UNKNOWN": ("SEND_OK", "UNKNOW")}
    # (A slow JVM may answer the others after transactionTimeOut too: then they are checked as well, and the
    # application answers what it answered before.)
    checks = app.of("check")
    assert ("2", "UNKNOWN") in {(c["idx"], c["outcome"]) for c in checks}
    delivered = {e["keys"]: e for e in app.messages if e["listener"] == "txn"}
    assert set(delivered) == {txn["COMMIT"]["keys"], txn["UNKNOWN"]["keys"]}
    assert all(e["topic"] == txn_topic and e["props"]["TRAN_MSG"] == "true" for e in delivered.values())
    pulled = stored_by_keys(await pull_with_pocketmq(cluster, txn_topic))
    assert set(pulled) == set(delivered)
    assert [pulled[txn[o]["keys"]].body.decode() for o in ("COMMIT", "UNKNOWN")] == [
        body_for(f"{prefix}t", 0), body_for(f"{prefix}t", 2)]
    assert [pulled[txn[o]["keys"]].tags for o in ("COMMIT", "UNKNOWN")] == [TAGS[0], TAGS[2]]

    # sendAndReceive: the RocketMQReplyListener's answers came back through the broker.
    assert [(r["request"], r["reply"]) for r in app.of("reply")] == [
        (f"{prefix}-ping-{i}", f"pong {prefix}-ping-{i}") for i in range(3)]
    assert sorted(r["body"] for r in app.of("request")) == [f"{prefix}-ping-{i}" for i in range(3)]
