"""Apache RocketMQ 5's gRPC proxy (ProxyStartup in cluster mode) beside an ApacheRocketMQ's name server and broker,
for the tests that compare pocketmq's gRPC endpoint with it (tests/proxy, tests/java_sdk) and for the bench."""

from __future__ import annotations

import json
from typing import Any

from tests.apache.apache_rocketmq import ApacheRocketMQ, JavaProcess, ServerProcess, free_port


class ApacheProxy(ServerProcess):
    """``proxy_props`` are rmq-proxy.json keys beside the cluster's name and name server and the ports
    (``minInvisibleTimeMillsForRecv``...). ``jvm`` replaces the server's JVM flags (the bench's)."""

    def __init__(self, rmq: ApacheRocketMQ, jvm: tuple[str, ...] | None = None, **proxy_props: Any) -> None:
        self.rmq = rmq
        self.jvm = jvm
        self.proxy_props = proxy_props
        self.port = free_port(0)
        self.process: JavaProcess | None = None

    def start(self) -> ApacheProxy:
        conf = self.rmq.home / "rmq-proxy.json"
        conf.write_text(json.dumps({"rocketMQClusterName": self.rmq.cluster_name, "namesrvAddr": self.rmq.namesrv_addr,
                                    "grpcServerPort": self.port, "remotingListenPort": free_port(0),
                                    **self.proxy_props}))
        argv = self.rmq.java("org.apache.rocketmq.proxy.ProxyStartup", "-pc", str(conf), "-pm", "cluster",
                             "-n", self.rmq.namesrv_addr, jvm=self.jvm)
        self.launch(JavaProcess("proxy", argv, self.rmq.home), self.rmq.env(), "rocketmq-proxy startup successfully")
        return self

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"
