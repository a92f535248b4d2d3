"""The client's record-decoding C accelerator (``pocketmq/common/_speedups.c``) is built, chosen unless
``POCKETMQ_NO_EXTENSIONS=1``, and decodes exactly as the Python reference (``codec._decode_common_py``) does: the
same messages, field for field and with the same properties string, and the same place to stop, whatever the
buffer holds (runs of one shape and mixed ones, IPv6 hosts, compressed bodies, non-UTF-8 text, damaged bytes,
a cut-off end, a pull's extra properties or none).

These tests load the module directly, so they test the C under ``POCKETMQ_NO_EXTENSIONS=1`` as well; a checkout
where it was not built fails them (``make`` builds it)."""

from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pocketmq.common import codec, pack_host, properties_to_string, speedups
from pocketmq.common.constants import BORNHOST_V6_FLAG, COMPRESSED_FLAG, STOREHOSTADDRESS_V6_FLAG
from pocketmq.common.message import MessageExt, unpack_host

SOURCE = Path(speedups.__file__).with_name("_speedups.c")
_speedups = importlib.import_module("pocketmq.common._speedups")  # (fails, as it should, when not built)

HOSTS = [pack_host("127.0.0.1", 10911), pack_host("10.0.0.7", 53112), pack_host("2001:db8::1", 10911)]
TEXT = st.text(alphabet=st.sampled_from("ab\x01\x02é中"), max_size=12)


def test_the_c_module_is_chosen_unless_switched_off() -> None:
    assert hashlib.sha256(SOURCE.read_bytes()).hexdigest() == _speedups.SOURCE_HASH, "rebuild: make"
    if os.environ.get("POCKETMQ_NO_EXTENSIONS") == "1":
        assert speedups.speedups is None and codec._decode_records is None
    else:
        assert speedups.speedups is _speedups and codec._decode_records is _speedups.decode_records


# (The strategies are made once, here, not at each draw: making and validating them was most of the test's time.)
_PROPS = st.one_of(st.just("UNIQ_KEY\x01" + "A" * 32 + "\x02WAIT\x01true\x02"),
                   st.builds(lambda pairs: properties_to_string(dict(pairs)), st.lists(st.tuples(TEXT, TEXT),
                                                                                      max_size=3)), TEXT)
_INT32 = st.integers(-(2**31), 2**31 - 1)
_INT64 = st.integers(-(2**63), 2**63 - 1)
_UINT63 = st.integers(0, 2**63 - 1)
_TOPICS = st.sampled_from(["TopicA", "TopicA", "主题", "%RETRY%g"])
_BODIES = st.sampled_from([b"x" * 16, b"x" * 16, b"", b"\x00\xff" * 9])
_SYS_FLAGS = st.sampled_from([0, 0, COMPRESSED_FLAG, 0x8])
_HOSTS = st.sampled_from(HOSTS)


@st.composite
def records(draw: st.DrawFn) -> bytes:
    """One record: mostly alike (runs of one shape), some of another shape, host or flag."""
    props = draw(_PROPS)
    return codec.encode(
        topic=draw(_TOPICS),
        body=draw(_BODIES),
        properties=props,
        queue_id=draw(_INT32),
        flag=draw(_INT32),
        queue_offset=draw(_INT64),
        physical_offset=draw(_UINT63),
        sys_flag=draw(_SYS_FLAGS),
        born_timestamp=draw(_INT64),
        born_host=draw(_HOSTS),
        store_timestamp=draw(_UINT63),
        store_host=draw(_HOSTS),
        reconsume_times=draw(_INT32),
        prepared_transaction_offset=draw(_INT64),
    )


def _both(buf: bytes, offset: int, decompress: bool, extra: str) -> tuple[tuple[int, list[MessageExt]], ...]:
    py: list[MessageExt] = []
    c: list[MessageExt] = []
    stop_py = codec._decode_common_py(buf, offset, decompress, py, extra)
    slow = BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG | (COMPRESSED_FLAG if decompress else 0)
    stop_c = _speedups.decode_records(buf, offset, slow, c, MessageExt, unpack_host, extra,
                                      "\x02" + extra if extra else "")
    return (stop_py, py), (stop_c, c)


def _same(a: tuple[int, list[MessageExt]], b: tuple[int, list[MessageExt]]) -> None:
    assert a[0] == b[0]
    assert [m.properties_string for m in a[1]] == [m.properties_string for m in b[1]]
    assert a[1] == b[1]


@given(st.lists(records(), max_size=8), st.booleans(), st.sampled_from(["", "MIN_OFFSET\x010\x02MAX_OFFSET\x019\x02"]),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=3), st.integers(0, 40))
@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
def test_decode_records_agrees_with_the_python(recs: list[bytes], decompress: bool, extra: str,
                                               damage: list[tuple[int, int]], cut: int) -> None:
    buf = bytearray(b"".join(recs))
    for at, value in damage:
        if buf:
            buf[at % len(buf)] = value
    data = bytes(buf[: max(0, len(buf) - cut)] if cut % 3 == 0 else buf)
    py, c = _both(data, 0, decompress, extra)
    _same(py, c)
    if recs and len(data) > len(recs[0]):
        _same(*_both(data, len(recs[0]), decompress, extra))  # (from a later record, as after a slow one)


def test_invalid_utf8_stops_where_the_python_stops() -> None:
    good = codec.encode(topic="T", body=b"b", properties="K\x01v\x02", born_host=HOSTS[0], store_host=HOSTS[0])
    bad_props = good[:-2] + b"\xff\x02"
    bad_topic = good.replace(b"\x01T", b"\x01\xff", 1)
    for data in (good + bad_props + good, good + bad_topic + good):
        py, c = _both(data, 0, False, "X\x011\x02")
        _same(py, c)
        assert py[0] == len(good)


def test_another_class_is_called_with_the_fields() -> None:
    """Messages are made by storing into MessageExt's slots (its __init__ does no more); any other class is
    called with the 16 stored fields, as _decode_common_py calls MessageExt."""
    data = codec.encode(topic="T", body=b"b", properties="K\x01v\x02", queue_offset=7, born_host=HOSTS[0],
                        store_host=HOSTS[1])
    out: list[tuple[object, ...]] = []
    assert _speedups.decode_records(data, 0, 0, out, lambda *f: f, unpack_host, "", "") == len(data)
    (fields,) = out
    assert len(fields) == 16 and fields[4] == 7 and fields[13:] == (b"b", "T", "K\x01v\x02")
    (msg,) = _both(data, 0, False, "")[1][1]
    assert msg._properties is None and msg.body_inflate_error is None and msg.properties == {"K": "v"}
