"""What a send puts on the wire: the V2 header, compression, the request codes."""

from __future__ import annotations

import time
import zlib

from pocketmq.client import Message
from pocketmq.client.batch import generate_from_list
from pocketmq.client.impl.mq_client_api import create_send_command as build_command
from pocketmq.client.impl.producer.send_request import SendRequestOptions, build_send_request
from pocketmq.common.message import string_to_properties
from pocketmq.remoting.client_body import MessageQueue
from pocketmq.remoting.codes import RequestCode
from pocketmq.remoting.header import parse_send_message_request_header

MQ = MessageQueue("TopicTest", "broker-b", 3)
OPTIONS = SendRequestOptions("PG", "TBW102", 4, 4096, 5)


def test_v2_header_content() -> None:
    msg = Message("TopicTest", b"hello", tags="TagA", keys="k1 k2", properties={"a": "1"}, flag=5)
    before = time.time_ns() // 1_000_000
    header, body, uniq = build_send_request(msg, MQ, OPTIONS)
    cmd = build_command(header, body)
    assert cmd.code == RequestCode.SEND_MESSAGE_V2 and not cmd.is_oneway
    ext = cmd.ext_fields
    assert {k: ext[k] for k in "abcdefhjkmn"} == {
        "a": "PG", "b": "TopicTest", "c": "TBW102", "d": 4, "e": 3, "f": 0, "h": 5, "j": 0,
        "k": False, "m": False, "n": "broker-b",
    }
    assert before <= ext["g"] <= time.time_ns() // 1_000_000
    assert "l" not in ext  # maxReconsumeTimes only for retry topics
    assert string_to_properties(ext["i"]) == {
        "TAGS": "TagA", "KEYS": "k1 k2", "WAIT": "true", "a": "1", "UNIQ_KEY": uniq
    }
    assert uniq == msg.uniq_key and cmd.body == b"hello"
    # A broker reading the V2 form gets the same header back.
    assert parse_send_message_request_header(cmd.code, ext) == header


def test_batch_and_oneway_codes() -> None:
    batch = generate_from_list([Message("TopicTest", b"a"), Message("TopicTest", b"b")], 1 << 22)
    header, body, _ = build_send_request(batch, MQ, OPTIONS)
    cmd = build_command(header, body, oneway=True)
    assert cmd.code == RequestCode.SEND_BATCH_MESSAGE and cmd.ext_fields["m"] is True and cmd.is_oneway


def test_bodies_from_compress_over_are_zlib_compressed() -> None:
    big = bytes(range(256)) * 16  # 4096 bytes: the threshold itself compresses
    msg = Message("TopicTest", big)
    header, body, _ = build_send_request(msg, MQ, OPTIONS)
    assert header.sys_flag == 0x301  # COMPRESSED_FLAG | ZLIB compression type, as 4.9.8 sends
    assert zlib.decompress(body) == big and len(body) < len(big)
    assert msg.body is big  # the caller's message is untouched

    header, body, _ = build_send_request(Message("TopicTest", big[:-1]), MQ, OPTIONS)
    assert header.sys_flag == 0 and body == big[:-1]
    never = SendRequestOptions("PG", compress_over=1 << 30)
    assert build_send_request(Message("TopicTest", big), MQ, never)[0].sys_flag == 0


def test_transaction_and_retry_topic_fields() -> None:
    msg = Message("TopicTest", b"x")
    msg.put_property("TRAN_MSG", "TRUE")
    assert build_send_request(msg, MQ, OPTIONS)[0].sys_flag == 0x4  # TRANSACTION_PREPARED_TYPE

    retry = Message("%RETRY%CG", b"x")
    retry.put_property("RECONSUME_TIME", "3")
    retry.put_property("MAX_RECONSUME_TIMES", "16")
    header, _, _ = build_send_request(retry, MQ, OPTIONS)
    assert (header.reconsume_times, header.max_reconsume_times) == (3, 16)
