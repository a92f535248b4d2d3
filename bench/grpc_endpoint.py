"""What the permissive port's splice costs: sequential SendMessage round trips through the sniffing front
(plaintext and TLS on one port) against gRPC bound on the port itself (--grpc-tls disabled / enforcing).

    python bench/grpc_endpoint.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time

import grpc
from rocketmq.grpc_protocol import definition_pb2 as D
from rocketmq.grpc_protocol import service_pb2 as S
from rocketmq.grpc_protocol import service_pb2_grpc as G

from pocketmq.embedded import EmbeddedCluster
from pocketmq.proxy.config import ProxyConfig, TlsMode
from pocketmq.proxy.proxy_startup import GrpcProxy
from pocketmq.remoting.body import TopicConfig


def run_calls(endpoint: str, cert: bytes | None, calls: int) -> list[float]:
    channel = (grpc.secure_channel(endpoint, grpc.ssl_channel_credentials(root_certificates=cert)) if cert
               else grpc.insecure_channel(endpoint))
    stub = G.MessagingServiceStub(channel)
    md = (("x-mq-client-id", "bench@1"),)
    request = S.SendMessageRequest(messages=[D.Message(
        topic=D.Resource(name="Bench"), body=b"x" * 128,
        system_properties=D.SystemProperties(message_id="0102FC0000000171190B1C3CCC000000E9",
                                             message_type=D.MessageType.NORMAL))])
    for _ in range(200):
        stub.SendMessage(request, metadata=md)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        r = stub.SendMessage(request, metadata=md)
        times.append(time.perf_counter() - t)
        assert r.status.code == D.Code.OK, r.status
    channel.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    holder: dict = {}
    ready, done = threading.Event(), threading.Event()

    async def serve() -> None:
        async with EmbeddedCluster(tempfile.mkdtemp()) as cluster:
            cluster.broker.topic_config_manager.update_topic_config(TopicConfig("Bench", 4, 4, 6))
            await cluster.broker.register_broker_all()
            for mode in TlsMode:
                holder[mode] = await GrpcProxy(ProxyConfig(cluster.namesrv_addr, grpc_server_port=0,
                                                           tls_mode=mode)).start()
            ready.set()
            await asyncio.to_thread(done.wait)
            for proxy in holder.values():
                await proxy.stop()

    thread = threading.Thread(target=asyncio.run, args=(serve(),))
    thread.start()
    ready.wait()
    rows = [("plaintext, gRPC on the port (disabled)", holder[TlsMode.DISABLED], False),
            ("plaintext through the front (permissive)", holder[TlsMode.PERMISSIVE], False),
            ("TLS, gRPC on the port (enforcing)", holder[TlsMode.ENFORCING], True),
            ("TLS through the front (permissive)", holder[TlsMode.PERMISSIVE], True)]
    try:
        for name, proxy, tls in rows * 2:  # alternating passes
            t = run_calls(proxy.endpoint, proxy.certificate_pem if tls else None, args.calls)
            t.sort()
            print(f"{name:44s} median {statistics.median(t) * 1e6:7.0f} us  p99 {t[int(len(t) * 0.99)] * 1e6:7.0f} us"
                  f"  {len(t) / sum(t):7.0f} calls/s")
    finally:
        done.set()
        thread.join()


if __name__ == "__main__":
    main()
