"""What test_differential_fuzz_send.py sends in a send's properties and a batch's body: property texts in
MessageDecoder's form (name 0x01 value 0x02) that stress string2messageProperties, and batch bodies in
MessageDecoder.encodeMessages' layout, valid or corrupted one way at a time."""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import strategies as st

NAME_VALUE = "\x01"
PROPERTY_SEP = "\x02"
# Keys the broker or the store reads, and a few a producer sets
RESERVED = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "__STARTDELIVERTIME", "TRAN_MSG", "WAIT", "MAX_OFFSET",
            "MIN_OFFSET", "PGROUP", "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID", "CLUSTER",
            "REPLY_TO_CLIENT", "CORRELATION_ID", "MSG_REGION", "TRACE_ON", "TRANSACTION_CHECK_TIMES",
            "CHECK_IMMUNITY_TIME_IN_SECONDS", "INSTANCE_ID", "__SHARDINGKEY", "bornHost"]
# A delay above 0 and a transaction flag are asked for on purpose (below), not drawn: "DELAY" and "TRAN_MSG"
# values here are the odd ones (no int, 0, negative; no true).
ODD_VALUES = ["", " ", "false", "FALSE", "0", "-1", " 1", "abc", "1_0", "99999999999", "TagA", "TagA||TagB",
              "*", "a\x01b", "é", "\t", "\x00"]
key_texts = st.one_of(st.sampled_from(RESERVED), st.sampled_from(["", "k", "user", "é", "键", " ", "a b"]),
                      st.text(st.characters(min_codepoint=0, max_codepoint=0x2FF, exclude_characters="\x01\x02"),
                              max_size=8))
# Any character but the separator and half a surrogate pair (no UTF-8 for it)
any_character = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_characters="\x02",
                              categories=("L", "M", "N", "P", "S", "Z", "Cc", "Cf", "Co"))
value_texts = st.one_of(st.sampled_from(ODD_VALUES), st.text(any_character, max_size=12),
                        st.integers(1, 40_000).map(lambda n: "v" * n),  # past Short.MAX_VALUE too
                        st.integers(1, 12_000).map(lambda n: "é" * n))  # 2 bytes a character


@st.composite
def property_items(draw: Any) -> str:
    """One item of a properties text: a proper pair mostly, else a malformed one."""
    key, value = draw(key_texts), draw(value_texts)
    shape = draw(st.sampled_from(["pair", "pair", "pair", "no name-value separator", "two name-value separators",
                                  "empty item", "separator first"]))
    if shape == "no name-value separator":
        return key + value + PROPERTY_SEP
    if shape == "two name-value separators":
        return key + NAME_VALUE + value + NAME_VALUE + draw(value_texts) + PROPERTY_SEP
    if shape == "empty item":
        return PROPERTY_SEP
    if shape == "separator first":
        return NAME_VALUE + key + value + PROPERTY_SEP
    return key + NAME_VALUE + value + PROPERTY_SEP


@st.composite
def properties_texts(draw: Any, tags: bool = True) -> str:
    """A producer's properties text: TAGS first mostly, then up to 4 items, a key maybe twice, the last
    separator maybe left off; sometimes a delay level or a transaction flag that asks for something."""
    items = [f"TAGS{NAME_VALUE}TagA{PROPERTY_SEP}"] if tags and draw(st.booleans()) else []
    items += draw(st.lists(property_items(), max_size=4))
    if items and draw(st.booleans()):  # the same key again, another value
        key = items[0].split(NAME_VALUE, 1)[0]
        items.append(key + NAME_VALUE + draw(value_texts) + PROPERTY_SEP)
    asked = draw(st.sampled_from(["", "", "", "delay", "transaction", "start deliver", "wait"]))
    if asked == "delay":
        items.append(f"DELAY{NAME_VALUE}{draw(st.sampled_from(['1', '3', '18', '19', '+1', '100']))}{PROPERTY_SEP}")
    elif asked == "transaction":
        items.append(f"TRAN_MSG{NAME_VALUE}{draw(st.sampled_from(['true', 'TRUE', 'True']))}{PROPERTY_SEP}")
    elif asked == "start deliver":
        items.append(f"__STARTDELIVERTIME{NAME_VALUE}{draw(st.sampled_from(['0', '1', '4102444800000']))}"
                     f"{PROPERTY_SEP}")
    elif asked == "wait":
        items.append(f"WAIT{NAME_VALUE}{draw(st.sampled_from(['true', 'false']))}{PROPERTY_SEP}")
    text = "".join(items)
    if text and draw(st.booleans()):
        text = text[:-1]  # 4.9.7's messageProperties2String leaves the last separator off
    return text


_HEAD = struct.Struct(">iiiii")  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
_SHORT = struct.Struct(">h")
FIXED = 22
flags = st.one_of(st.just(0), st.integers(-3, 8), st.integers(-(2**31), 2**31 - 1))
item_bodies = st.one_of(st.just(b"m"), st.binary(min_size=1, max_size=24), st.just(b""))


def java_int(n: int) -> int:
    """``n`` wrapped as Java's int arithmetic wraps it."""
    return (n + 2**31) % 2**32 - 2**31


def encode_item(flag: int, body: bytes, props: bytes, total: int | None = None, magic: int = 0,
                body_len: int | None = None, props_len: int | None = None) -> bytes:
    """One message of a batch body; each length as given, else the true one."""
    total = FIXED + len(body) + len(props) if total is None else total
    body_len = len(body) if body_len is None else body_len
    return (_HEAD.pack(java_int(total), magic, 0, flag, java_int(body_len)) + body
            + _SHORT.pack(len(props) if props_len is None else props_len) + props)


@st.composite
def batch_bodies(draw: Any) -> tuple[str, bytes]:
    """(what was done to it, a batch body): valid, or with one message's field wrong."""
    count = draw(st.integers(0, 4))
    # A message's properties text is at most 32,767 bytes: its length is a short
    items = [(draw(flags), draw(item_bodies), draw(st.one_of(properties_texts(), st.just("")))[:10_000].encode())
             for _ in range(count)]
    damage = draw(st.sampled_from(["valid", "valid", "valid", "total size", "magic", "body length",
                                   "properties length", "truncated", "trailing bytes"])) if items else "valid"
    target = draw(st.integers(0, len(items) - 1)) if items else 0
    out = []
    for i, (flag, body, props) in enumerate(items):
        if i != target or damage in ("valid", "truncated", "trailing bytes"):
            out.append(encode_item(flag, body, props))
        elif damage == "total size":
            out.append(encode_item(flag, body, props, total=draw(st.integers(-(2**31), 2**31 - 1))))
        elif damage == "magic":
            out.append(encode_item(flag, body, props, magic=draw(st.sampled_from(
                [0xAABBCCDD - 2**32, 0xDAA320A7 - 2**32, -1, 1]))))
        elif damage == "body length":
            delta = draw(st.sampled_from([-(len(body) + 1), -1, 1, 2**20, 2**31 - 1 - len(body)]))
            out.append(encode_item(flag, body, props, body_len=len(body) + delta,
                                   total=FIXED + len(body) + delta + len(props)
                                   if draw(st.booleans()) else None))
        else:
            new_len = draw(st.sampled_from([-1, -(2**15), min(len(props) + 1, 2**15 - 1),
                                            len(props) - 1 if props else 1, 2**15 - 1]))
            out.append(encode_item(flag, body, props, props_len=new_len,
                                   total=FIXED + len(body) + new_len if draw(st.booleans()) else None))
    data = b"".join(out)
    if damage == "truncated":
        data = data[:draw(st.integers(0, max(len(data) - 1, 0)))]
    elif damage == "trailing bytes":
        data += draw(st.binary(min_size=1, max_size=30))
    return damage, data
