"""The records test_codec.py and test_codec_decode_all.py encode (one module, as the tests were before their split)."""

from __future__ import annotations

from pocketmq.common import encode, pack_host

V4_BORN = pack_host("192.168.1.20", 53211)
V4_STORE = pack_host("10.0.0.1", 10911)
V6_HOST = pack_host("2001:db8::1", 10911)


def _record(**kw) -> bytes:
    params = dict(topic="TopicTest", body=b"body-bytes", born_host=V4_BORN, store_host=V4_STORE)
    params.update(kw)
    return encode(**params)
