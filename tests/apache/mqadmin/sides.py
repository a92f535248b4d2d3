"""The two servers as tests/apache/mqadmin's tests see them (Side), Apache's mqadmin run against either (Mqadmin),
the names the package's setup made on both, and the masking of what legitimately differs between their outputs."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pocketmq.client import MessageExt, SyncProducer, SyncPushConsumer
from tests.apache.apache_rocketmq import ApacheRocketMQ

SUFFIX = uuid.uuid4().hex[:6]
TOPIC = f"MqaTopic{SUFFIX}"
GROUP = f"MqaGroup{SUFFIX}"
PRODUCER_GROUP = f"MqaProducer{SUFFIX}"
QUEUES = 4
MESSAGES = 8
CLUSTER = "DefaultCluster"
# Where mqadmin's queryMsgBy* write a message body (MessageBodyPath); the tests remove their own files.
MSG_BODY_DIR = Path("/tmp/rocketmq/msgbodys")


@dataclass
class Side:
    """One server as the tests see it: its name server and broker, and what the setup left there."""

    name: str
    namesrv_addr: str
    broker_addr: str
    msg_ids: list[str] = field(default_factory=list)
    offset_msg_ids: list[str] = field(default_factory=list)
    setup_output: dict[str, str] = field(default_factory=dict)
    clients: list[SyncProducer | SyncPushConsumer] = field(default_factory=list)
    consumed: list[MessageExt] = field(default_factory=list)
    # The group's retry queue, empty, listed by consumerProgress at 0 once the consumer has committed that 0: on
    # 5.x after its first long poll of it; never on 4.9.7 and pocketmq, whose QUERY_CONSUMER_OFFSET answers 0
    # for it, an offset the consumer never changes, so never commits (docs/compatibility.md).
    lists_empty_retry_queue: bool = False


class Mqadmin:
    """Apache's mqadmin of one version, run against any name server."""

    def __init__(self, tools: ApacheRocketMQ) -> None:
        self.tools = tools
        self.seen: dict[tuple[str, ...], str] = {}  # pocketmq's output of each command run (args without -n)

    def run(self, namesrv_addr: str, *args: str) -> str:
        """The command's output. mqadmin exits 0 after a failure and prints the exception on stderr; one that
        timed out (a request slower than mqadmin's fixed 5 s on a loaded machine) is run again, except
        sendMessage, which would store a second message."""
        for attempt in range(ATTEMPTS):
            done = self.tools.mqadmin(*args, "-n", namesrv_addr)
            failed = done.returncode != 0 or "Exception" in done.stdout + done.stderr
            if not failed:
                return done.stdout
            if attempt == ATTEMPTS - 1 or args[0] == "sendMessage" or not _TIMEOUT.search(done.stderr):
                break
            time.sleep(1.0)
        raise AssertionError((args, done.returncode, done.stdout, done.stderr[-3000:]))

    def both(self, sides: tuple[Side, Side], *args: str | Callable[[Side], str]) -> tuple[str, str]:
        """The command on both servers at once; an argument may depend on the side (its broker address...)."""

        def one(side: Side) -> str:
            resolved = tuple(a(side) if callable(a) else a for a in args)
            out = self.run(side.namesrv_addr, *resolved)
            if side.name == "pocketmq":
                self.seen[resolved] = out
            return out

        with ThreadPoolExecutor(2) as pool:
            apache, pocket = pool.map(one, sides)
        return apache, pocket


ATTEMPTS = 5
# pocketmq's commands wait 3 s for each answer by default; a loaded machine may take longer.
SLOW_OK = ("--timeout", "30")
_TIMEOUT = re.compile(r"Remoting(Timeout|Connect|SendRequest)Exception|TimeoutException")


# --- masking what legitimately differs ------------------------------------------------------------------------

_MASKS = [
    (re.compile(r"/?\d+\.\d+\.\d+\.\d+:\d+"), "ADDR"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d{3})?"), "TIME"),
    (re.compile(r"\b[0-9A-F]{32,}\b"), "ID"),
    (re.compile(r"\S+@\S+#\d+"), "CLIENTID"),  # IP@pid#nanotime
    (re.compile(r"\bV\d+_\d+_\d+(_SNAPSHOT)?\b"), "VERSION"),
]


def mask(text: str) -> str:
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


def rows(text: str) -> list[list[str]]:
    """A command's output as rows of whitespace-separated cells: column widths are not compared."""
    return [line.split() for line in mask(text).splitlines() if line.strip()]


def numbers_masked(cells: list[list[str]], columns: set[int]) -> list[list[str]]:
    return [[("N" if i in columns and row[0] != cells[0][0] else c) for i, c in enumerate(row)] for row in cells]


# What one broker adds and the other not: Apache 4.9.7 adds CLUSTER and drops WAIT; pocketmq keeps the producer's
# properties and stamps MSG_REGION and TRACE_ON as Apache 5.x does (docs/broker.md, "The region stamp").
BROKER_ADDED = ("CLUSTER", "WAIT", "MSG_REGION", "TRACE_ON")


def raw_properties(text: str) -> dict[str, str]:
    """The Properties: line of a message printout, as the broker stored them."""
    line = next(line for line in text.splitlines() if line.startswith("Properties:"))
    body = line.split(":", 1)[1].strip().strip("{}")
    return dict(item.split("=", 1) for item in body.split(", "))


def properties(text: str) -> dict[str, str]:
    """The Properties: line of a message printout, without what only one of the brokers adds or drops
    (BROKER_ADDED)."""
    props = raw_properties(text)
    return {k: ("ID" if k == "UNIQ_KEY" else v) for k, v in props.items() if k not in BROKER_ADDED}


def wait_no_lag(side: Side, mq: Mqadmin, consumed: Callable[[], bool] = lambda: True) -> None:
    """Until the group's messages are consumed and its offsets committed: consumerProgress shows no lag (and the
    retry queue where the side lists it)."""
    deadline = time.monotonic() + 60
    while True:
        progress = ""
        if consumed():
            try:
                progress = mq.run(side.namesrv_addr, "consumerProgress", "-g", GROUP)
            except AssertionError as e:  # no offset committed yet: CODE 206 on Apache, an empty table on pocketmq
                progress = str(e)
        if "Diff Total: 0" in progress and ("%RETRY%" in progress or not side.lists_empty_retry_queue):
            return
        assert time.monotonic() < deadline, (side.name, progress)
        time.sleep(0.2)


def message_rows(text: str) -> list[list[str]]:
    """A message printout without its Properties (compared apart) and commit-log offset (the properties only one
    broker adds, BROKER_ADDED, make the records' lengths differ), nor mqadmin's MessageTrack lines, which say
    UNKNOWN when a request of their lookup failed (a timeout on a loaded machine); test_query_msg_by_id checks
    them."""
    return [r for r in rows(text) if r[0] not in ("Properties:", "CommitLog", "MessageTrack")]


def properties_of(text: str) -> dict[str, str]:
    """brokerStatus's ``key : value`` lines."""
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def key_paths(obj: object, prefix: str = "") -> set[str]:
    if not isinstance(obj, dict):
        return {prefix}
    return {p for k, v in obj.items() for p in key_paths(v, f"{prefix}/{k}")}


def config(text: str) -> dict[str, str]:
    """getBrokerConfig's and getNamesrvConfig's ``key  =  value`` lines."""
    return dict((k.strip(), v.strip()) for k, v in (line.split("=", 1) for line in text.splitlines()
                                                      if "=" in line and not line.startswith("=")))


def consumed(text: str) -> tuple[list[str], int, str]:
    """consumeMessage's output: its queue lines (in a HashSet's order: sorted here), its "Consume ok" lines, and
    its message line without what differs (record sizes and offsets, times; the properties only one broker adds,
    BROKER_ADDED; the properties' order, a HashMap's in mqadmin)."""
    lines = mask(text).splitlines()
    queue_lines = sorted(line for line in lines if line.startswith("MessageQueue"))
    message = next(line for line in lines if line.startswith("MSGID"))
    message = re.sub(r"(storeSize|commitLogOffset|bornTimestamp|storeTimestamp)=\d+", r"\1=N", message)
    props = re.search(r"properties=\{([^}]*)\}", message)
    assert props is not None, message
    kept = sorted(p for p in props.group(1).split(", ") if p.partition("=")[0] not in BROKER_ADDED)
    message = message.replace(props.group(0), "properties={" + ", ".join(kept) + "}")
    return queue_lines, lines.count("Consume ok"), message
