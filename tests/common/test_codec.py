"""The commit-log record codec (reference §1.1, §1.2, §1.6): layout, round trips, message ids (decode_all and
damaged input: test_codec_decode_all.py)."""

from __future__ import annotations

import ipaddress
import struct
import zlib

import pytest
from codec_test_records import V4_BORN, V4_STORE, V6_HOST, _record
from hypothesis import given, settings
from hypothesis import strategies as st

from pocketmq.common import (
    create_message_id,
    decode,
    decode_all,
    decode_message_id,
    encode,
    iter_records,
    pack_host,
    properties_to_string,
    string_to_properties,
    unpack_host,
)
from pocketmq.common.codec import CorruptRecordError

INT32 = st.integers(-(2**31), 2**31 - 1)
UINT31 = st.integers(0, 2**31 - 1)
INT64_NONNEG = st.integers(0, 2**63 - 1)


# -- byte layout, field by field (reference §1.1) -------------------------------------------------

def test_record_layout_matches_reference_field_by_field():
    body = b"Hello RocketMQ \x00\xff"
    topic = "TopicLayout"
    props = properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2"})
    rec = encode(
        topic=topic, body=body, properties=props, queue_id=3, flag=0x5A5A, queue_offset=77,
        physical_offset=123456789, sys_flag=0x2, born_timestamp=1_700_000_000_123, born_host=V4_BORN,
        store_timestamp=1_700_000_000_456, store_host=V4_STORE, reconsume_times=4,
        prepared_transaction_offset=987654,
    )
    b, t, p = len(body), len(topic.encode()), len(props.encode())
    assert len(rec) == 91 + b + t + p  # fixed overhead for IPv4/IPv4
    assert struct.unpack_from(">i", rec, 0)[0] == len(rec)  # TOTALSIZE
    assert struct.unpack_from(">I", rec, 4)[0] == 0xDAA320A7  # MAGICCODE
    assert struct.unpack_from(">i", rec, 4)[0] == -626843481
    assert struct.unpack_from(">i", rec, 8)[0] == zlib.crc32(body) & 0x7FFFFFFF  # BODYCRC
    assert struct.unpack_from(">i", rec, 12)[0] == 3  # QUEUEID
    assert struct.unpack_from(">i", rec, 16)[0] == 0x5A5A  # FLAG
    assert struct.unpack_from(">q", rec, 20)[0] == 77  # QUEUEOFFSET
    assert struct.unpack_from(">q", rec, 28)[0] == 123456789  # PHYSICALOFFSET
    assert struct.unpack_from(">i", rec, 36)[0] == 0x2  # SYSFLAG (no IPv6 bits)
    assert struct.unpack_from(">q", rec, 40)[0] == 1_700_000_000_123  # BORNTIMESTAMP
    assert rec[48:52] == bytes([192, 168, 1, 20]) and struct.unpack_from(">i", rec, 52)[0] == 53211  # BORNHOST
    assert struct.unpack_from(">q", rec, 56)[0] == 1_700_000_000_456  # STORETIMESTAMP
    assert rec[64:68] == bytes([10, 0, 0, 1]) and struct.unpack_from(">i", rec, 68)[0] == 10911  # STOREHOST
    assert struct.unpack_from(">i", rec, 72)[0] == 4  # RECONSUMETIMES
    assert struct.unpack_from(">q", rec, 76)[0] == 987654  # PREPARED TRANSACTION OFFSET
    assert struct.unpack_from(">i", rec, 84)[0] == b  # BODY length
    assert rec[88:88 + b] == body
    assert rec[88 + b] == t  # 1-byte TOPIC length
    assert rec[89 + b:89 + b + t] == topic.encode()
    assert struct.unpack_from(">h", rec, 89 + b + t)[0] == p  # 2-byte PROPERTIES length
    assert rec[91 + b + t:] == props.encode()


def test_ipv6_hosts_widen_fields_and_set_sysflag_bits():
    body = b"v6"
    rec = encode(topic="T6", body=body, born_host=V6_HOST, store_host=V6_HOST, store_timestamp=42,
                 born_timestamp=41, reconsume_times=9)
    assert len(rec) == 91 + 24 + len(body) + 2  # each IPv6 host adds 12 bytes
    sys_flag = struct.unpack_from(">i", rec, 36)[0]
    assert sys_flag & 0x10 and sys_flag & 0x20  # BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
    assert rec[48:64] == ipaddress.IPv6Address("2001:db8::1").packed
    assert struct.unpack_from(">i", rec, 64)[0] == 10911
    assert struct.unpack_from(">q", rec, 68)[0] == 42  # STORETIMESTAMP moves by 12
    assert rec[76:92] == ipaddress.IPv6Address("2001:db8::1").packed  # STOREHOST
    assert struct.unpack_from(">i", rec, 96)[0] == 9  # RECONSUMETIMES
    assert struct.unpack_from(">i", rec, 108)[0] == len(body)
    m = decode(rec, check_crc=True)
    assert m.born_host == "[2001:db8::1]:10911" and m.store_host == "[2001:db8::1]:10911"
    assert m.store_timestamp == 42 and m.body == body and m.topic == "T6"


def test_only_born_host_ipv6_sets_only_its_bit():
    rec = encode(topic="T", body=b"x", born_host=V6_HOST, store_host=V4_STORE)
    sys_flag = struct.unpack_from(">i", rec, 36)[0]
    assert sys_flag & 0x30 == 0x10
    m = decode(rec)
    assert m.born_host == "[2001:db8::1]:10911" and m.store_host == "10.0.0.1:10911"


# -- round trips ----------------------------------------------------------------------------------

def test_encode_decode_round_trip_all_fields():
    props = {"TAGS": "TagA", "KEYS": "order-1 order-2", "UNIQ_KEY": "ABCDEF", "custom": "värde"}
    rec = _record(properties=properties_to_string(props), queue_id=7, flag=-1, queue_offset=2**40,
                  physical_offset=2**41 + 5, sys_flag=0x8, born_timestamp=1, store_timestamp=2,
                  reconsume_times=16, prepared_transaction_offset=2**33)
    m = decode(rec, check_crc=True)
    assert (m.store_size, m.queue_id, m.flag, m.queue_offset, m.commit_log_offset, m.sys_flag) == (
        len(rec), 7, -1, 2**40, 2**41 + 5, 0x8)
    assert (m.born_timestamp, m.store_timestamp, m.reconsume_times, m.prepared_transaction_offset) == (
        1, 2, 16, 2**33)
    assert m.born_host == "192.168.1.20:53211" and m.store_host == "10.0.0.1:10911"
    assert m.topic == "TopicTest" and m.body == b"body-bytes"
    assert m.properties == props and m.tags == "TagA" and m.keys == ["order-1", "order-2"]
    assert m.uniq_key == "ABCDEF"
    assert m.body_crc == zlib.crc32(b"body-bytes") & 0x7FFFFFFF
    assert m.offset_msg_id == create_message_id(V4_STORE, 2**41 + 5) and m.msg_id == "ABCDEF"  # msgId: the UNIQ_KEY


def test_empty_body_and_no_properties_round_trip():
    rec = _record(body=b"", properties="")
    assert len(rec) == 91 + len("TopicTest")
    m = decode(rec, check_crc=True)
    assert m.body == b"" and m.properties == {}


def test_decode_at_offset_inside_a_larger_buffer():
    a = _record(body=b"first", physical_offset=0)
    b = _record(body=b"second", physical_offset=len(a))
    buf = bytearray(b"\x00" * 3 + a + b)
    m = decode(memoryview(buf), 3 + len(a))
    assert m.body == b"second" and m.commit_log_offset == len(a)


def test_decode_all_and_iter_records_walk_a_concatenation_and_stop_at_blank():
    recs = [_record(body=f"m{i}".encode() * i, queue_offset=i) for i in range(5)]
    blank = struct.pack(">iI", 500, 0xCBD43194) + bytes(492)
    buf = b"".join(recs) + blank + _record(body=b"after blank")
    msgs = decode_all(buf)
    assert [m.body for m in msgs] == [f"m{i}".encode() * i for i in range(5)]
    assert [m.queue_offset for m in iter_records(buf)] == [0, 1, 2, 3, 4]
    assert decode_all(b"") == []


def test_decode_all_gives_each_record_its_own_topic_and_hosts():
    # decode_all reuses the previous record's topic and host strings when the bytes are the same: every
    # change must still show, back and forth, and a topic of the same length is still compared.
    other_born, other_store = pack_host("192.168.1.21", 53211), pack_host("10.0.0.2", 10911)
    layout = [("TopicA", V4_BORN, V4_STORE), ("TopicB", V4_BORN, V4_STORE), ("TopicB", other_born, V4_STORE),
              ("TopicB", other_born, other_store), ("TopicA", V4_BORN, V4_STORE), ("Topic", V4_BORN, other_store)]
    buf = b"".join(_record(topic=t, born_host=b, store_host=s) for t, b, s in layout)
    got = [(m.topic, m.born_host, m.store_host) for m in decode_all(buf)]
    assert got == [(t, unpack_host(b), unpack_host(s)) for t, b, s in layout]


def test_decode_rejects_bad_crc_magic_and_truncation():
    rec = bytearray(_record(body=b"payload"))
    decode(bytes(rec), check_crc=True)
    flipped = bytearray(rec)
    flipped[88] ^= 0x01  # a body byte
    with pytest.raises(CorruptRecordError):
        decode(bytes(flipped), check_crc=True)
    decode(bytes(flipped))  # without the CRC check it still parses
    bad_magic = bytearray(rec)
    bad_magic[4:8] = b"\x00\x00\x00\x00"
    with pytest.raises(CorruptRecordError):
        decode(bytes(bad_magic))
    with pytest.raises(CorruptRecordError):
        decode(bytes(rec[:60]))
    with pytest.raises(CorruptRecordError):
        decode(bytes(rec[:-1]))  # TOTALSIZE says one byte more than there is
    wrong_total = bytearray(rec)
    struct.pack_into(">i", wrong_total, 0, len(rec) - 1)
    with pytest.raises(CorruptRecordError):
        decode(bytes(wrong_total))


# -- hypothesis: any message round-trips ----------------------------------------------------------

_prop_text = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                     min_size=1, max_size=20)
_hosts = st.one_of(
    st.tuples(st.ip_addresses(v=4), st.integers(0, 65535)),
    st.tuples(st.ip_addresses(v=6), st.integers(0, 65535)),
)


def _host_matches(text: str, ip, port: int) -> bool:
    addr, _, p = text.rpartition(":")
    return ipaddress.ip_address(addr.strip("[]")) == ip and int(p) == port


@settings(max_examples=300, deadline=None)
@given(
    # (a retry topic past 127 characters makes a message version 2 record, as RocketMQ 5 writes it)
    topic=st.from_regex(r"[%|a-zA-Z0-9_-]{1,127}", fullmatch=True)
    | st.from_regex(r"%RETRY%[a-zA-Z0-9_-]{121,248}", fullmatch=True),
    body=st.binary(max_size=3000),
    props=st.dictionaries(_prop_text, _prop_text, max_size=8),
    born=_hosts, stored=_hosts,
    queue_id=UINT31, flag=INT32, queue_offset=INT64_NONNEG, physical_offset=INT64_NONNEG,
    sys_flag=st.sampled_from([0, 0x1, 0x2, 0x4, 0x8, 0xC, 0x40, 0x80, 0x300]),
    born_ts=INT64_NONNEG, store_ts=INT64_NONNEG, reconsume=UINT31, prepared=INT64_NONNEG,
)
def test_property_encode_decode_round_trips(topic, body, props, born, stored, queue_id, flag, queue_offset,
                                            physical_offset, sys_flag, born_ts, store_ts, reconsume, prepared):
    born_host = pack_host(str(born[0]), born[1])
    store_host = pack_host(str(stored[0]), stored[1])
    props_s = properties_to_string(props)
    rec = encode(topic=topic, body=body, properties=props_s, queue_id=queue_id, flag=flag,
                 queue_offset=queue_offset, physical_offset=physical_offset, sys_flag=sys_flag,
                 born_timestamp=born_ts, born_host=born_host, store_timestamp=store_ts, store_host=store_host,
                 reconsume_times=reconsume, prepared_transaction_offset=prepared)
    v6_bits = (0x10 if born[0].version == 6 else 0) | (0x20 if stored[0].version == 6 else 0)
    v2 = len(topic) > 127
    assert len(rec) == 91 + v2 + len(body) + len(topic) + len(props_s.encode()) + 12 * bin(v6_bits).count("1")
    assert rec[4:8] == (b"\xda\xa3\x20\xab" if v2 else b"\xda\xa3\x20\xa7")
    m = decode(rec, check_crc=True)
    assert m.topic == topic and m.body == body and m.properties == props
    assert m.store_size == len(rec)
    assert (m.queue_id, m.flag, m.queue_offset, m.commit_log_offset) == (queue_id, flag, queue_offset,
                                                                          physical_offset)
    assert m.sys_flag == sys_flag | v6_bits
    assert (m.born_timestamp, m.store_timestamp, m.reconsume_times, m.prepared_transaction_offset) == (
        born_ts, store_ts, reconsume, prepared)
    assert _host_matches(m.born_host, born[0], born[1])
    assert _host_matches(m.store_host, stored[0], stored[1])
    assert m.offset_msg_id == create_message_id(store_host, physical_offset)
    assert decode_message_id(m.offset_msg_id)[1] == physical_offset
    # and again when the record sits inside a pull body between others
    assert [x.body for x in decode_all(rec + rec)] == [body, body]


# -- message ids (reference §1.6) ----------------------------------------------------------------

def test_offset_msg_id_reference_example():
    msg_id = create_message_id(pack_host("10.0.0.1", 10911), 4660)
    assert msg_id == "0A00000100002A9F0000000000001234"
    assert decode_message_id(msg_id) == ("10.0.0.1:10911", 4660)
    assert decode_message_id(msg_id.lower()) == ("10.0.0.1:10911", 4660)


def test_offset_msg_id_ipv6_is_56_hex_chars():
    msg_id = create_message_id(V6_HOST, 2**40 + 1)
    assert len(msg_id) == 56 and msg_id == msg_id.upper()
    assert msg_id.startswith(ipaddress.IPv6Address("2001:db8::1").packed.hex().upper() + "00002A9F")
    assert decode_message_id(msg_id) == ("[2001:db8::1]:10911", 2**40 + 1)


def test_decode_message_id_rejects_garbage():
    with pytest.raises(ValueError):
        decode_message_id("0A000001")
    with pytest.raises(ValueError):
        decode_message_id("zz" * 16)


def test_pack_host_layout():
    assert pack_host("10.0.0.1", 10911) == bytes([10, 0, 0, 1]) + (10911).to_bytes(4, "big")
    assert len(pack_host("::1", 1)) == 20
    assert unpack_host(pack_host("127.0.0.1", 65535)) == "127.0.0.1:65535"
    assert unpack_host(pack_host("::1", 80)) == "[::1]:80"


# -- properties (reference §1.2) ------------------------------------------------------------------

def test_properties_encoding_separators_and_trailing_separator():
    s = properties_to_string({"TAGS": "TagA", "KEYS": "k1 k2"})
    assert s == "TAGS\x01TagA\x02KEYS\x01k1 k2\x02"
    assert properties_to_string({}) == ""
    assert properties_to_string({"A": None, "B": "b"}) == "B\x01b\x02"  # null values are skipped


def test_string_to_properties_keeps_only_non_empty_names_and_values():
    s = "A\x01a\x02\x01novalue\x02B\x01\x02\x02C\x01c\x02junk\x02D\x01d"
    assert string_to_properties(s) == {"A": "a", "C": "c", "D": "d"}
    assert string_to_properties("") == {}
    props = {"k": "v", "UNIQ_KEY": "0A0B", "x y": "with space"}
    assert string_to_properties(properties_to_string(props)) == props


@given(st.dictionaries(_prop_text, _prop_text, max_size=10))
def test_property_properties_round_trip(props):
    s = properties_to_string(props)
    assert s.count("\x02") == len(props)
    assert string_to_properties(s) == props
