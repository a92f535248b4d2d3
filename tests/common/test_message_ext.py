"""MessageExt's lazily parsed properties and computed offsetMsgId."""

from __future__ import annotations

from pocketmq.common import create_message_id, decode, encode, pack_host, properties_to_string

STORE = pack_host("10.0.0.1", 10911)


def decoded(props: str, physical_offset: int = 4660, store_host: bytes = STORE):
    rec = encode(topic="T", body=b"b", born_host=pack_host("127.0.0.1", 1), store_host=store_host,
                 properties=props, physical_offset=physical_offset)
    return decode(rec)


def test_puts_before_the_first_read_are_seen_by_it_and_win_over_stored_values() -> None:
    m = decoded(properties_to_string({"TAGS": "a", "MAX_OFFSET": "1"}))
    m.put_property("MAX_OFFSET", "9")
    m.put_encoded_properties("MIN_OFFSET\x010\x02CONSUME_START_TIME\x0142\x02")
    assert m.properties == {"TAGS": "a", "MAX_OFFSET": "9", "MIN_OFFSET": "0", "CONSUME_START_TIME": "42"}
    # After the read, puts go to the dict itself.
    m.put_property("TAGS", "b")
    m.put_encoded_properties("X\x01y\x02")
    assert m.properties["TAGS"] == "b" and m.properties["X"] == "y" and m.tags == "b"


def test_a_stored_string_without_its_last_separator_still_takes_puts() -> None:
    m = decoded("TAGS\x01a")  # how some producers encode: no separator after the last pair
    m.put_property("KEYS", "k1")
    assert m.properties == {"TAGS": "a", "KEYS": "k1"} and m.keys == ["k1"]


def test_equality_compares_properties_however_they_are_held() -> None:
    a, b = decoded("TAGS\x01a\x02"), decoded("TAGS\x01a\x02")
    assert b.properties == {"TAGS": "a"}  # b parsed, a not yet
    a.put_property("KEYS", "k")
    assert a.properties_string == "TAGS\x01a\x02KEYS\x01k\x02"  # onto a's string
    b.put_property("KEYS", "k")  # into b's dict
    assert a == b and "KEYS" in repr(a)
    b.put_property("KEYS", "z")
    assert a != b


def test_msg_id_is_the_offset_msg_id_of_the_store_host_and_offset() -> None:
    assert decoded("", 4660).msg_id == "0A00000100002A9F0000000000001234" == create_message_id(STORE, 4660)
    v6 = pack_host("2001:db8::1", 10911)
    assert decoded("", 2**40 + 1, v6).msg_id == create_message_id(v6, 2**40 + 1)


def test_msg_id_is_the_uniq_key_when_the_producer_set_one() -> None:
    # As RocketMQ's MessageClientExt: msgId is what the send returned, offsetMsgId the store's.
    m = decoded(properties_to_string({"UNIQ_KEY": "7F0000010A0B0C0D0E0F101112130000"}), 4660)
    assert m.msg_id == "7F0000010A0B0C0D0E0F101112130000"
    assert m.offset_msg_id == "0A00000100002A9F0000000000001234"
    assert decoded("", 4660).offset_msg_id == decoded("", 4660).msg_id
