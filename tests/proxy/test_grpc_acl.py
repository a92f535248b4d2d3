"""ACL on the gRPC endpoint: a cluster with aclEnable checks every gRPC call against the same plain_acl.yml as its
broker, from the ``authorization`` header (HMAC-SHA1 of ``x-mq-date-time``), with the broker's own permission
rules; the Python SDK with an account's key pair, a wrong secret, no credentials, and a topic the account may only
subscribe to; a raw call signed in upper-case hex as the Java SDK signs."""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from rocketmq import ClientConfiguration, Credentials, Message, Producer

from pocketmq import embedded
from pocketmq.proxy.proxy_context import peer_address

from .acl_accounts import ACL, ADMIN, USER
from .conftest import D, S, endpoints
from .sdk_helpers import create_topic, wait_for

# The SDK may open a stream on the main thread, which needs a current event loop (see main_thread_loop).
pytestmark = pytest.mark.usefixtures("main_thread_loop")


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[embedded.ThreadedCluster]:
    root = tmp_path_factory.mktemp("grpc-acl")
    (root / "plain_acl.yml").write_text(ACL)
    with embedded.ThreadedCluster(root / "cluster", grpc=True, acl_enable=True, acl_file=str(root / "plain_acl.yml"),
                                  access_key=ADMIN[0], secret_key=ADMIN[1]) as cluster:
        for topic in ("AclOpen", "AclReadOnly"):
            create_topic(cluster, topic)
        yield cluster


def stored(cluster: embedded.ThreadedCluster, topic: str) -> int:
    store = cluster.cluster.broker.store
    return sum(store.get_max_offset_in_queue(topic, q) for q in range(4))


def producer(cluster: embedded.ThreadedCluster, topic: str, credentials: Any) -> Producer:
    p = Producer(ClientConfiguration(cluster.grpc_endpoint, credentials, request_timeout=5), (topic,))
    p.startup()
    return p


def message(topic: str) -> Message:
    msg = Message()
    msg.topic, msg.body, msg.tag = topic, b"signed", "TagA"
    return msg


def test_an_account_sends_where_it_may_and_is_refused_where_it_may_not(acl_cluster: Any) -> None:
    p = producer(acl_cluster, "AclOpen", Credentials(*USER))
    try:
        p.send(message("AclOpen"))
        wait_for(lambda: stored(acl_cluster, "AclOpen") == 1)
        with pytest.raises(Exception, match="No permission for topic:AclReadOnly"):
            p.send(message("AclReadOnly"))
    finally:
        p.shutdown()
    assert stored(acl_cluster, "AclReadOnly") == 0


@pytest.mark.parametrize("credentials", [Credentials(USER[0], "not-the-secret"), Credentials()],
                         ids=["wrong secret", "no credentials"])
def test_a_caller_without_the_accounts_key_sends_nothing(acl_cluster: Any, credentials: Any) -> None:
    before = stored(acl_cluster, "AclOpen")
    p = producer(acl_cluster, "AclOpen", credentials)  # the SDK starts, logging that its route was refused
    try:
        with pytest.raises(Exception):  # noqa: B017 (the SDK's error depends on which call was refused first)
            p.send(message("AclOpen"))
    finally:
        p.shutdown()
    assert stored(acl_cluster, "AclOpen") == before


def signed(access_key: str, secret_key: str, upper: bool) -> tuple[tuple[str, str], ...]:
    date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    signature = hmac.digest(secret_key.encode(), date.encode(), "sha1").hex()
    signature = signature.upper() if upper else signature
    return (("x-mq-client-id", "raw-acl@1"), ("x-mq-date-time", date), ("x-mq-language", "JAVA"),
            ("authorization", f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, "
                              f"Signature={signature}"))


def test_raw_calls_upper_case_signature_and_a_forged_one(acl_cluster: Any) -> None:
    with grpc.insecure_channel(acl_cluster.grpc_endpoint) as channel:
        query = channel.unary_unary("/apache.rocketmq.v2.MessagingService/QueryRoute",
                                    request_serializer=S.QueryRouteRequest.SerializeToString,
                                    response_deserializer=S.QueryRouteResponse.FromString)
        port = int(acl_cluster.grpc_endpoint.rsplit(":", 1)[1])
        request = S.QueryRouteRequest(topic=D.Resource(name="AclOpen"), endpoints=endpoints(port))
        ok = query(request, metadata=signed(*USER, upper=True))
        assert ok.status.code == D.Code.OK and ok.message_queues
        forged = query(request, metadata=signed(USER[0], "guess", upper=False))
        assert forged.status.code == D.Code.UNAUTHORIZED
        assert "Check signature failed for accessKey=RocketMQUser" in forged.status.message
        unknown = query(request, metadata=signed("nobody", "x", upper=False))
        assert unknown.status.code == D.Code.UNAUTHORIZED and "No acl config for nobody" in unknown.status.message


def test_a_white_listed_address_needs_no_signature_through_the_permissive_port(tmp_path: Any) -> None:
    # The permissive port splices each connection to gRPC over a Unix socket: the white list is matched against
    # the client's own address behind it (it saw the socket, and refused every white-listed caller).
    (tmp_path / "plain_acl.yml").write_text("globalWhiteRemoteAddresses:\n  - 127.0.0.1\n" + ACL)
    with embedded.ThreadedCluster(tmp_path / "cluster", grpc=True, acl_enable=True,
                                  acl_file=str(tmp_path / "plain_acl.yml"), access_key=ADMIN[0],
                                  secret_key=ADMIN[1]) as cluster:
        create_topic(cluster, "AclWhite")
        port = int(cluster.grpc_endpoint.rsplit(":", 1)[1])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            query = channel.unary_unary("/apache.rocketmq.v2.MessagingService/QueryRoute",
                                        request_serializer=S.QueryRouteRequest.SerializeToString,
                                        response_deserializer=S.QueryRouteResponse.FromString)
            answer = query(S.QueryRouteRequest(topic=D.Resource(name="AclWhite"), endpoints=endpoints(port)),
                           metadata=(("x-mq-client-id", "white@1"), ("x-mq-language", "JAVA")))
        assert answer.status.code == D.Code.OK and answer.message_queues


def test_peer_addresses_read_as_host_and_port() -> None:
    clients = {"front-client-7": "10.1.2.3:4567"}
    assert peer_address("ipv4:127.0.0.1:5000") == "127.0.0.1:5000"
    assert peer_address("ipv6:%5B::1%5D:5000") == "[::1]:5000"
    assert peer_address("unix-abstract:front-client-7", clients.get) == "10.1.2.3:4567"
    assert peer_address("unix-abstract:gone", clients.get) == "unix-abstract:gone"
