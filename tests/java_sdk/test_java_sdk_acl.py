"""Apache RocketMQ 5's Java SDK (rocketmq-client-java) with an account's key pair against pocketmq's gRPC endpoint
with ACL on: ``ClientConfiguration.newBuilder().setCredentialProvider(new StaticSessionCredentialsProvider(ak,
sk))``, the README's promise. One short JVM runs the harness's ``acl`` scenario only, against a cluster configured
as tests/proxy/test_grpc_acl.py's (aclEnable, a plain_acl.yml, the broker's own keys). Apache RocketMQ 5.5.0 is not
compared: its proxy no longer has ACL 1.0's plain_acl.yml (5.3 replaced it by ACL 2.0's users and policies), and
setting that up is another three JVMs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pocketmq.embedded import ThreadedCluster
from tests.java_sdk import java_sdk as js
from tests.java_sdk.java_sdk import HarnessRun
from tests.proxy.acl_accounts import ACL, ADMIN, USER


def stored(cluster: ThreadedCluster, topic: str) -> int:
    store = cluster.cluster.broker.store
    return sum(store.get_max_offset_in_queue(topic, q) for q in range(4))


@pytest.fixture(scope="module")
def acl_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HarnessRun, ThreadedCluster]]:
    js.classpath()  # fails before the cluster starts when the harness is not built
    root = tmp_path_factory.mktemp("java-sdk-acl")
    (root / "plain_acl.yml").write_text(ACL)
    run_id = f"A{uuid.uuid4().hex[:8]}"
    with ThreadedCluster(root / "pocketmq", grpc=True, acl_enable=True, acl_file=str(root / "plain_acl.yml"),
                         access_key=ADMIN[0], secret_key=ADMIN[1]) as cluster:
        asyncio.run(js.prepare(cluster.namesrv_addr, cluster.broker_addr, run_id, js.ACL_SCENARIOS, keys=ADMIN))
        yield js.run(cluster.grpc_endpoint, run_id, "pocketmq", root / "jvm", ["acl"], keys=USER), cluster


def test_java_sdk_with_an_accounts_keys_sends_and_receives_and_a_wrong_secret_sends_nothing(acl_run: Any) -> None:
    run, cluster = acl_run
    r = run.result("acl")
    [seen] = r["seen"]  # received and acked with the account's keys
    assert (seen["body"], seen["tag"], seen["messageId"]) == ("signed", "TagA", r["sent"])
    # The same access key with a wrong secret: the send's route query is refused with UNAUTHORIZED (40100).
    refused = r["wrongSecret"]
    assert refused["type"] == "UnauthorizedException", refused
    assert "40100" in refused["message"], refused
    assert f"Check signature failed for accessKey={USER[0]}" in refused["message"], refused
    assert stored(cluster, js.topic(run.run_id, "acl")) == 1  # the signed message only
