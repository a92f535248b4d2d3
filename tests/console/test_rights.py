"""Who may change the cluster through the console: nobody through a read-only console, nobody from another
site, and with ACL on only an admin account (the brokers decide, the console passes their refusal on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp", reason="the console extra")
pytest.importorskip("prometheus_client", reason="the console extra")

import aiohttp  # noqa: E402

from pocketmq.console import ConsoleServer  # noqa: E402
from pocketmq.embedded import EmbeddedCluster  # noqa: E402

ACL_YAML = """\
accounts:
  - accessKey: brokerAdmin
    secretKey: brokerSecret
    admin: true
  - accessKey: appUser1
    secretKey: appSecret1
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


async def post(url: str, body: Any, **kw: Any) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as s, s.post(url, json=body, **kw) as r:
        return r.status, await r.json()


async def test_a_read_only_console_refuses_every_admin_action(cluster):
    async with ConsoleServer(cluster.namesrv_addr, port=0) as console:
        for path, body in (("api/topic", {"topic": "T1"}), ("api/topic/delete", {"topic": "TBW102"}),
                           ("api/group/reset", {"group": "G", "topic": "T", "timestamp": 0}),
                           ("api/send", {"topic": "T", "body": "x"})):
            status, answer = await post(console.url + path, body)
            assert status == 403 and "read-only" in answer["error"], path
        assert "T1" not in await console.admin.fetch_all_topic_list()


async def test_another_site_cannot_drive_an_admin_console(cluster, console):
    # A form another site posts (text/plain: no preflight) is refused, and so is a request with a foreign Origin.
    async with aiohttp.ClientSession() as s:
        async with s.post(console.url + "api/topic", data='{"topic": "Csrf1"}',
                          headers={"Content-Type": "text/plain"}) as r:
            assert r.status == 415
        async with s.post(console.url + "api/topic", json={"topic": "Csrf2"},
                          headers={"Origin": "http://evil.example"}) as r:
            assert r.status == 403
    topics = await console.admin.fetch_all_topic_list()
    assert "Csrf1" not in topics and "Csrf2" not in topics
    status, _ = await post(console.url + "api/topic", {"topic": "SameOrigin"}, headers={"Origin": console.url[:-1]})
    assert status == 200


async def test_with_acl_admin_actions_need_an_admin_account(tmp_path: Path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text(ACL_YAML)
    async with EmbeddedCluster(tmp_path / "cluster", acl_enable=True, acl_file=str(acl), access_key="brokerAdmin",
                               secret_key="brokerSecret") as cluster:
        async with ConsoleServer(cluster.namesrv_addr, port=0, admin=True, access_key="appUser1",
                                 secret_key="appSecret1") as user:
            status, answer = await post(user.url + "api/topic", {"topic": "ByUser"})
            assert status == 403 and answer["code"] == 16  # the broker's NO_PERMISSION, passed on
        async with ConsoleServer(cluster.namesrv_addr, port=0, admin=True, access_key="brokerAdmin",
                                 secret_key="brokerSecret") as admin:
            status, answer = await post(admin.url + "api/topic", {"topic": "ByAdmin"})
            assert status == 200, answer
            assert "ByAdmin" in await admin.admin.fetch_all_topic_list()


async def test_bad_input_gets_a_clear_error_and_the_console_keeps_serving(cluster, console):
    async with aiohttp.ClientSession() as s:
        for method, path, body, status in (
            ("POST", "api/topic", {"topic": "Q", "queues": "many"}, 400),
            ("POST", "api/topic", {"topic": "Q", "queues": 0}, 400),
            ("POST", "api/topic", [1, 2], 400),
            ("POST", "api/group/reset", {"group": "G", "topic": "T", "timestamp": "noon"}, 400),
            ("GET", "api/messages?topic=T&begin=yesterday", None, 400),
            ("GET", "api/messages", None, 400),
            ("GET", "api/topic?topic=NoSuchTopic", None, 404),
            ("GET", "api/storage/record?offset=12345678", None, 404),
            ("GET", "api/storage/record?offset=x", None, 400),
        ):
            async with s.request(method, console.url + path, json=body) as r:
                answer = await r.json()
                assert r.status == status, (path, answer)
                assert answer["error"]
        async with s.get(console.url + "api/cluster") as r:
            assert r.status == 200


# Raw bodies, as a client may send what json.dumps would not: literals past any integer, nesting past the parser.
TOO_DEEP = b"[" * 100_000 + b"]" * 100_000
LONG_MAX = (1 << 63) - 1


@pytest.mark.parametrize("method, path, body, field", [
    ("GET", f"api/messages?topic=T&begin=0&end={LONG_MAX + 1}", None, "end"),
    ("GET", f"api/messages?topic=T&begin={-LONG_MAX - 2}", None, "begin"),
    ("GET", f"api/storage/record?offset={LONG_MAX + 1}", None, "offset"),
    ("POST", "api/topic", b'{"topic": "Q", "queues": 2.5}', "queues"),
    ("POST", "api/topic", b'{"topic": "Q", "queues": 1e400}', "queues"),
    ("POST", "api/topic", b'{"topic": "Q", "queues": ' + b"9" * 5000 + b"}", "queues"),
    ("POST", "api/topic", b'{"topic": "Q", "queues": true}', "queues"),
    ("POST", "api/topic", b'{"topic": "Q", "cluster": {"a": 1}}', "cluster"),
    ("POST", "api/topic", b'{"topic": ["Q"]}', "topic"),
    ("POST", "api/topic", TOO_DEEP, "JSON"),
    ("POST", "api/topic/delete", b'{"topic": "Q", "cluster": [1, 2]}', "cluster"),
    ("POST", "api/group/reset", b'{"group": "G", "topic": "T", "timestamp": 99999999999999999999999999999}',
     "timestamp"),
    ("POST", "api/group/reset", b'{"group": "G", "topic": "T", "timestamp": -99999999999999999999999999999}',
     "timestamp"),
    ("POST", "api/send", b'{"topic": "T", "body": "x", "tags": [1]}', "tags"),
    ("POST", "api/send", b'{"topic": "T", "body": "x", "keys": {"a": 1}}', "keys"),
    ("POST", "api/send", b'{"topic": "T", "body": {"a": 1}}', "body"),
])
async def test_a_value_of_the_wrong_kind_or_range_is_a_400_naming_its_field(cluster, console, method, path, body,
                                                                             field):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    async with aiohttp.ClientSession() as s, s.request(method, console.url + path, data=body, headers=headers) as r:
        answer = await r.json()
        assert r.status == 400, answer
    assert field in answer["error"], answer
    topics = await console.admin.fetch_all_topic_list()
    assert "Q" not in topics  # (queues 2.5 made a topic of 2 queues)
