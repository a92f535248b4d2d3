"""Message properties, UNIQ_KEY (MessageClientIDSetter) and the client id."""

from __future__ import annotations

import os
import re
import socket
import time

from pocketmq.client import Message
from pocketmq.client.client_config import ClientConfig, get_client_ip
from pocketmq.client.message_id import (
    create_uniq_id,
    get_ip_str_from_id,
    get_nearly_time_from_id,
    get_pid_from_id,
    set_uniq_id,
    uniq_id_maker,
)
from pocketmq.common.message import properties_to_string, string_to_properties


def test_tags_keys_and_flags_live_in_the_properties() -> None:
    msg = Message("T", b"body", tags="TagA", keys=["k1", "k2"], properties={"color": "red"}, flag=7)
    assert msg.properties == {"TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true", "color": "red"}
    assert (msg.tags, msg.keys, msg.flag, msg.wait_store_msg_ok, msg.delay_time_level) == (
        "TagA", ["k1", "k2"], 7, True, 0
    )
    assert Message("T", b"x", keys="a b").keys == ["a", "b"]
    delayed = Message("T", b"x", delay_time_level=3, wait_store_msg_ok=False)
    assert delayed.properties == {"DELAY": "3", "WAIT": "false"}
    assert delayed.wait_store_msg_ok is False
    assert "TAGS" not in Message("T", b"x", tags="").properties
    # The wire form round-trips.
    assert string_to_properties(properties_to_string(msg.properties)) == msg.properties


def test_repr_does_not_dump_the_body() -> None:
    assert "<100000 bytes>" in repr(Message("T", b"x" * 100_000))


def test_uniq_id_layout() -> None:
    uid = create_uniq_id()
    assert re.fullmatch(r"[0-9A-F]{32}", uid)
    assert get_ip_str_from_id(uid) == get_client_ip()
    assert get_pid_from_id(uid) == os.getpid() & 0xFFFF
    assert abs(get_nearly_time_from_id(uid) - time.time() * 1000) < 60_000


def test_uniq_id_time_part_keeps_all_32_bits() -> None:
    # Past the 24th day of a month the milliseconds since its start exceed 2^31: Java's (int) cast keeps the
    # low 32 bits and getNearlyTimeFromID reads them unsigned. A 31-bit mask put such ids 24.8 days early.
    uid = create_uniq_id()
    head, tail = uid[:20], uid[28:]
    late = head + f"{2**31 + 12_345:08X}" + tail
    assert int(late[20:28], 16) == 2**31 + 12_345
    made = get_nearly_time_from_id(late)
    assert made % 1000 == (2**31 + 12_345) % 1000  # the month start is whole seconds: the span survives
    assert time.time() * 1000 - made < 62 * 86_400_000  # this month or the last, never a wrap to the past


def test_uniq_ids_differ_only_in_time_and_counter() -> None:
    ids = [create_uniq_id() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert {i[:20] for i in ids} == {ids[0][:20]}  # ip + pid + per-process random
    counters = [int(i[28:], 16) for i in ids]
    assert all((b - a) % 65536 == 1 for a, b in zip(counters, counters[1:], strict=False))


def test_a_batch_of_more_than_65536_messages_gets_distinct_ids() -> None:
    maker = uniq_id_maker()
    ids = [next(maker) for _ in range(70_000)]
    assert len(set(ids)) == 70_000  # (the counter wraps past 65,535: the time part must have moved on by then)


def test_a_forked_process_makes_ids_of_its_own() -> None:
    # Forked workers kept their parent's pid and random int, and its counter: siblings made the same ids.
    parent = create_uniq_id()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its id to the pipe, then out without running the test session's teardown
        try:
            os.write(write, create_uniq_id().encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = f.read()
    os.waitpid(pid, 0)
    assert get_pid_from_id(child) == pid & 0xFFFF != get_pid_from_id(parent)
    assert child[12:20] != parent[12:20]  # (the random int, which tells apart processes whose pids agree)


def test_set_uniq_id_keeps_an_existing_id() -> None:
    msg = Message("T", b"x")
    first = set_uniq_id(msg)
    assert msg.uniq_key == first == set_uniq_id(msg)


def test_client_id() -> None:
    assert ClientConfig("h:1").build_mq_client_id() == f"{get_client_ip()}@{os.getpid()}"
    assert ClientConfig("h:1", client_ip="10.0.0.9", instance_name="DEFAULT").build_mq_client_id() == (
        f"10.0.0.9@{os.getpid()}"
    )
    cfg = ClientConfig("h:1", client_ip="10.0.0.9", instance_name="i1", unit_name="u")
    assert cfg.build_mq_client_id() == "10.0.0.9@i1@u"
    socket.inet_aton(get_client_ip())  # an IPv4 address, as the UNIQ_KEY layout needs
