"""A body a 4.x producer compressed, received through the gRPC endpoint: what the SDKs get must say what its bytes
are. pocketmq's client inflates it as it decodes the POP answer, so it goes out as IDENTITY with the inflated
bytes and their digest (GZIP on inflated bytes made the Go SDK's PushConsumer discard the message)."""

from __future__ import annotations

import hashlib
import zlib
from typing import Any

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.client import Message, Producer
from pocketmq.common.codec import decode, decode_message_id
from pocketmq.common.constants import COMPRESSED_FLAG

from .conftest import D, S, create_topic, metadata, start_proxy
from .test_grpc_consumption import receive_request, received


async def test_a_compressed_4x_body_is_received_inflated_as_identity(tmp_path: Any) -> None:
    body = "grüße ".encode() * 2000  # 14 KB: over the producer's 4 KiB threshold, compressed
    async with embedded.EmbeddedCluster(tmp_path, revive_interval=0.05) as cluster:
        await create_topic(cluster, "Zipped")
        async with Producer("ZipProducer", cluster.namesrv_addr) as producer:
            result = await producer.send(Message("Zipped", body, tags="TagZ"))
        _, commit_log_offset = decode_message_id(result.offset_msg_id)
        stored = decode(cluster.store.select_one_message_by_offset(commit_log_offset))
        assert stored.sys_flag & COMPRESSED_FLAG and stored.body != body  # stored as the producer compressed it
        proxy = await start_proxy(cluster, consumer_min_long_polling_timeout_millis=100)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                stub = service_pb2_grpc.MessagingServiceStub(channel)
                [msg] = await received(stub, receive_request("Zipped"), 1)
        finally:
            await proxy.stop()
    assert msg.body == body
    sp = msg.system_properties
    assert sp.body_encoding == D.Encoding.IDENTITY
    assert (sp.body_digest.type, sp.body_digest.checksum) == (D.DigestType.MD5, hashlib.md5(body).hexdigest().upper())


async def test_only_a_body_that_did_not_inflate_goes_out_as_gzip_and_no_marker_is_a_user_property(
        tmp_path: Any) -> None:
    body = b"mine to inflate " * 500  # compressed by the producer (over 4 KiB)
    async with embedded.EmbeddedCluster(tmp_path, revive_interval=0.05) as cluster:
        await create_topic(cluster, "Zipped")
        async with Producer("ZipProducer", cluster.namesrv_addr) as producer:
            # A user's property of the name pocketmq's client once marked a body that did not inflate with.
            await producer.send(Message("Zipped", body, tags="Mine", properties={"BODY_INFLATE_ERROR": "mine"}))
        proxy = await start_proxy(cluster, consumer_min_long_polling_timeout_millis=100)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                stub = service_pb2_grpc.MessagingServiceStub(channel)
                # A 5.x producer's body said to be GZIP that is no zlib stream: stored as sent, it cannot inflate.
                bad = D.Message(topic=D.Resource(name="Zipped"), body=b"not zlib", system_properties=D.SystemProperties(
                    message_id="0102FC0000000171190B1C3CCC0000BAD0", tag="Bad", message_type=D.MessageType.NORMAL,
                    body_encoding=D.Encoding.GZIP))
                sent = await stub.SendMessage(S.SendMessageRequest(messages=[bad]), metadata=metadata())
                assert sent.status.code == D.Code.OK, sent.status
                got = {m.system_properties.tag: m for m in await received(stub, receive_request("Zipped"), 2)}
        finally:
            await proxy.stop()
    mine, broken = got["Mine"], got["Bad"]
    # The inflated bytes, said to be IDENTITY (GZIP here failed the Python SDK's whole receive), and the user's
    # property as the user's.
    assert (mine.body, mine.system_properties.body_encoding) == (body, D.Encoding.IDENTITY)
    assert dict(mine.user_properties) == {"BODY_INFLATE_ERROR": "mine"}
    # The stored bytes, GZIP as they are; the decoder's mark is nobody's user property (Apache shows none).
    assert (broken.body, broken.system_properties.body_encoding) == (b"not zlib", D.Encoding.GZIP)
    assert dict(broken.user_properties) == {}


async def test_a_body_that_inflates_past_the_largest_message_goes_out_as_stored(tmp_path: Any) -> None:
    """8 KB of deflated zeros is an 8 MiB body, more than any producer may send (4 MiB): the endpoint inflated every
    popped body up to 16 MiB before writing the first (a few KB of such messages were GBs of its memory, and the
    SDK's 4 MiB receive limit failed the stream). Now each is inflated as it is written, at most to the largest
    message; past that it goes as stored, GZIP, as Apache's proxy sends every compressed body."""
    bomb = zlib.compress(bytes(8 * 1024 * 1024), 9)
    async with embedded.EmbeddedCluster(tmp_path, revive_interval=0.05) as cluster:
        await create_topic(cluster, "Bombs")
        proxy = await start_proxy(cluster, consumer_min_long_polling_timeout_millis=100)
        try:
            async with grpc.aio.insecure_channel(proxy.endpoint) as channel:
                stub = service_pb2_grpc.MessagingServiceStub(channel)
                for tag, body in (("Bomb", bomb), ("Fine", zlib.compress(b"fine " * 1000))):
                    msg = D.Message(topic=D.Resource(name="Bombs"), body=body, system_properties=D.SystemProperties(
                        message_id=f"0102FC0000000171190B1C3CCC0000B{len(tag)}{tag[0]}0", tag=tag,
                        message_type=D.MessageType.NORMAL, body_encoding=D.Encoding.GZIP))
                    sent = await stub.SendMessage(S.SendMessageRequest(messages=[msg]), metadata=metadata())
                    assert sent.status.code == D.Code.OK, sent.status
                got = {m.system_properties.tag: m for m in await received(stub, receive_request("Bombs"), 2)}
        finally:
            await proxy.stop()
    assert (got["Bomb"].body, got["Bomb"].system_properties.body_encoding) == (bomb, D.Encoding.GZIP)
    assert (got["Fine"].body, got["Fine"].system_properties.body_encoding) == (b"fine " * 1000, D.Encoding.IDENTITY)
