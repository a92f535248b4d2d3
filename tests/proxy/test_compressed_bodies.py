"""A body a 4.x producer compressed, received through the gRPC endpoint: what the SDKs get must say what its bytes
are. pocketmq's client inflates it as it decodes the POP answer, so it goes out as IDENTITY with the inflated
bytes and their digest (GZIP on inflated bytes made the Go SDK's PushConsumer discard the message)."""

from __future__ import annotations

import hashlib
from typing import Any

import grpc
from rocketmq.grpc_protocol import service_pb2_grpc

from pocketmq import embedded
from pocketmq.client import Message, Producer
from pocketmq.common.codec import decode, decode_message_id
from pocketmq.common.constants import COMPRESSED_FLAG

from .conftest import D, create_topic, start_proxy
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
