"""mqadmin's commands as `pocketmq <command>` on a cluster with ACL on: signed with an account's keys (options or
environment), refused without one; clusterList's row of a broker whose stats it could not read."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pocketmq.embedded import ThreadedCluster

from .cli_helpers import brokers, cli, cli_json, wait_routed

ACL_YAML = """\
accounts:
  - accessKey: cliAdmin01
    secretKey: cliAdminSecret
    admin: true
  - accessKey: cliUser01
    secretKey: cliUserSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""
ADMIN_KEYS = ["--access-key", "cliAdmin01", "--secret-key", "cliAdminSecret"]
USER_KEYS = ["--access-key", "cliUser01", "--secret-key", "cliUserSecret"]


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    root = tmp_path_factory.mktemp("admin-cli-acl")
    (root / "plain_acl.yml").write_text(ACL_YAML)
    with ThreadedCluster(root / "cluster", acl_enable=True, acl_file=str(root / "plain_acl.yml"),
                         access_key="cliAdmin01", secret_key="cliAdminSecret") as c:
        yield c


@pytest.mark.parametrize("protocol", ["msgpack", "rocketmq"])
def test_commands_sign_with_credentials_on_an_acl_cluster(
    acl_cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str], protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = f"CliAcl_{protocol}"
    p = ["--protocol", protocol]
    # Without credentials, a broker refuses: one line with NO_PERMISSION (16) and the broker's remark.
    code, out, err = cli(capsys, acl_cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, *p)
    assert code == 1 and out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("pocketmq updateTopic: CODE: 16") and "No accessKey is configured" in err
    # A signed account without admin rights is refused too, and told why.
    code, _, err = cli(capsys, acl_cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, *p, *USER_KEYS)
    assert code == 1 and len(err.splitlines()) == 1 and "CODE: 16" in err and "Need admin permission" in err, err
    # A wrong secret: the signature does not match.
    code, _, err = cli(capsys, acl_cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, *p,
                       "--access-key", "cliAdmin01", "--secret-key", "notTheSecret")
    assert code == 1 and len(err.splitlines()) == 1 and "CODE: 16" in err and "Check signature failed" in err, err
    # One half of an account is a usage error, before any request.
    code, _, err = cli(capsys, acl_cluster, "topicList", "--access-key", "cliAdmin01")
    assert code == 1 and "--access-key and --secret-key go together" in err

    code, out, err = cli(capsys, acl_cluster, "updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w",
                         "2", *p, *ADMIN_KEYS)
    assert code == 0 and "create topic to " in out, err
    wait_routed(acl_cluster, topic, 1)
    # sendMessage and consumeMessage open a producer and a consumer of their own: they sign too.
    code, out, err = cli(capsys, acl_cluster, "sendMessage", "-t", topic, "-p", "signed", *p, *USER_KEYS)
    assert code == 0 and "SEND_OK" in out, err
    assert acl_cluster.wait_dispatched()
    code, out, err = cli(capsys, acl_cluster, "consumeMessage", "-t", topic, "-g", "CliAclG", *p, *USER_KEYS)
    assert code == 0 and "BODY: signed" in out, err
    status = cli_json(capsys, acl_cluster, "topicStatus", "-t", topic, *p, *USER_KEYS)
    assert sum(s["maxOffset"] for s in status) == 1
    # The account may come from the environment instead (kept out of `ps`).
    monkeypatch.setenv("POCKETMQ_ACCESS_KEY", "cliAdmin01")
    monkeypatch.setenv("POCKETMQ_SECRET_KEY", "cliAdminSecret")
    code, out, err = cli(capsys, acl_cluster, "deleteTopic", "-t", topic, "-c", "DefaultCluster", *p)
    assert code == 0 and "from NameServer success" in out, err


def test_cluster_list_names_on_stderr_a_broker_whose_stats_it_could_not_read(
    acl_cluster: ThreadedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    # The name server's cluster table is open; the broker's runtime stats need an account. The row stays, blank, as
    # mqadmin prints it (its stack trace on stderr becomes one line naming the broker and the refusal).
    [broker] = brokers(acl_cluster)
    code, out, err = cli(capsys, acl_cluster, "clusterList")
    assert code == 0 and [line.split()[:4] for line in out.splitlines()[1:]] == [
        ["DefaultCluster", "broker-a", "0", broker.address]]
    assert err.startswith(f"pocketmq clusterList: no runtime stats from broker-a ({broker.address}), its row is left "
                          "blank: CODE: 16 DESC: No accessKey is configured") and len(err.splitlines()) == 1, err
    code, out, err = cli(capsys, acl_cluster, "clusterList", *ADMIN_KEYS)
    assert code == 0 and err == "" and len(out.splitlines()[1].split()) == 10, out  # (a version: no blank column)
