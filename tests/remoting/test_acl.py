"""Plain ACL's pieces without sockets: the signature against a vector computed by Java, permissions, white-list
patterns, the accounts file, and the validator's decisions (the socket tests are tests/broker/test_broker_acl.py and
tests/namesrv/test_namesrv_acl.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pocketmq.remoting.acl import AclClientRPCHook, SessionCredentials, cal_signature
from pocketmq.remoting.acl.config import AclConfigError, load_plain_acl, parse_plain_acl
from pocketmq.remoting.acl.permission import ANY, DENY, PUB, SUB, check_permission, parse_perm
from pocketmq.remoting.acl.remote_address import RemoteAddressStrategy
from pocketmq.remoting.acl.signer import combine_request_content
from pocketmq.remoting.acl.validator import PlainAccessValidator, parse_request
from pocketmq.remoting.codec import decode_frames, encode
from pocketmq.remoting.codes import RequestCode, SerializeType
from pocketmq.remoting.command import RemotingCommand
from pocketmq.remoting.native_codec import decode_native_frames, encode_native
from pocketmq.remoting.recall_header import RecallMessageRequestHeader

# A SEND_MESSAGE_V2 header as a Java client holds it after AclClientRPCHook added its AccessKey, with non-ASCII
# in the properties, and a non-ASCII body. The signatures were computed by a Java 17 program that does what
# RocketMQ 4.9.8's AclClientRPCHook, AclUtils.combineRequestContent and AclSigner do: a TreeMap of the ext fields,
# their values concatenated (Signature skipped), getBytes(UTF-8), the body appended, HmacSHA1 with the secret key's
# UTF-8 bytes, then Base64 (standard alphabet, padded).
VECTOR_EXT = {
    "a": "ProducerGroupA", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1700000000000",
    "h": "0", "i": "TAGS\x01TagA\x02KEYS\x01k1 k2\x02city\x01Zürich\x02", "j": "0", "k": "false",
    "AccessKey": "RocketMQ",
}
VECTOR_BODY = "hello 你好".encode()
VECTOR_SECRET = "12345678"
VECTOR_SIGNATURE = "v9zoVE024tx26BBOrkckBXUJHUw="
VECTOR_SIGNATURE_NO_BODY = "g1hJjxMbmNccVWPTMmL+9os3C9g="

ACL = {
    "globalWhiteRemoteAddresses": ["10.10.103.*", "192.168.0.{1,2}"],
    "accounts": [
        {"accessKey": "RocketMQ", "secretKey": 12345678, "whiteRemoteAddress": None, "admin": False,
         "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
         "topicPerms": ["topicA=DENY", "topicB=PUB|SUB", "topicC=SUB", "topicP=PUB"],
         "groupPerms": ["groupA=DENY", "groupB=PUB|SUB", "groupC=SUB"]},
        {"accessKey": "rocketmq2", "secretKey": "12345678", "whiteRemoteAddress": "192.168.1.*", "admin": True},
    ],
}


def test_the_signature_is_the_one_java_computes() -> None:
    content = combine_request_content(VECTOR_EXT, VECTOR_BODY)
    assert cal_signature(content, VECTOR_SECRET) == VECTOR_SIGNATURE
    assert cal_signature(combine_request_content(VECTOR_EXT, None), VECTOR_SECRET) == VECTOR_SIGNATURE_NO_BODY


def test_the_hook_signs_the_request_as_the_java_client_does() -> None:
    ext = {k: v for k, v in VECTOR_EXT.items() if k != "AccessKey"}
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext, VECTOR_BODY)
    AclClientRPCHook(SessionCredentials("RocketMQ", VECTOR_SECRET))(request)
    assert request.ext_fields["AccessKey"] == "RocketMQ"
    assert request.ext_fields["Signature"] == VECTOR_SIGNATURE
    # Signing again (a retry of the same command) gives the same signature: the old one is not signed.
    AclClientRPCHook(SessionCredentials("RocketMQ", VECTOR_SECRET))(request)
    assert request.ext_fields["Signature"] == VECTOR_SIGNATURE


def test_msgpack_values_sign_as_their_java_text() -> None:
    """A msgpack frame carries ints and booleans; they are signed as the text a native frame carries."""
    typed = {"a": "ProducerGroupA", "b": "TopicTest", "c": "TBW102", "d": 4, "e": 2, "f": 0, "g": 1700000000000,
             "h": 0, "i": VECTOR_EXT["i"], "j": 0, "k": False}
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, typed, VECTOR_BODY)
    AclClientRPCHook(SessionCredentials("RocketMQ", VECTOR_SECRET))(request)
    assert request.ext_fields["Signature"] == VECTOR_SIGNATURE
    validator = PlainAccessValidator(parse_plain_acl(ACL))
    # Both wire forms of the signed request pass the same check (topicB allows PUB).
    typed_b = dict(typed, b="topicB")
    for encode_frame, decode in ((encode, decode_frames), (encode_native, decode_native_frames)):
        request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, typed_b, VECTOR_BODY)
        AclClientRPCHook(SessionCredentials("RocketMQ", VECTOR_SECRET))(request)
        [received] = decode(encode_frame(request, None))
        assert validator("127.0.0.1:5555", received) is None


def test_permission_bits_follow_rocketmq() -> None:
    assert parse_perm("PUB|SUB") == parse_perm(" SUB|PUB ") == PUB | SUB
    assert parse_perm(None) == parse_perm("READ") == parse_perm("DENY") == DENY
    assert check_permission(PUB, PUB | SUB) and check_permission(SUB, SUB)
    assert not check_permission(SUB, PUB) and not check_permission(PUB, DENY | PUB)
    assert check_permission(ANY, SUB) and not check_permission(ANY, DENY)


@pytest.mark.parametrize(("pattern", "matching", "other"), [
    ("*", ["1.2.3.4", "::1"], []),
    ("192.168.1.7", ["192.168.1.7"], ["192.168.1.8", "::1"]),
    ("192.168.0.{1,2}", ["192.168.0.1", "192.168.0.2"], ["192.168.0.3"]),
    ("10.0.0.1,10.0.0.9", ["10.0.0.9"], ["10.0.0.2"]),
    ("10.10.103.*", ["10.10.103.0", "10.10.103.255"], ["10.10.104.1"]),
    ("192.168.1.1-100", ["192.168.1.1", "192.168.1.100"], ["192.168.1.101", "192.168.2.5"]),
    ("10.1-5.*.*", ["10.3.200.1"], ["10.6.0.1", "11.3.0.1"]),
    ("::1", ["0:0:0:0:0:0:0:1"], ["127.0.0.1"]),
    ("fe80:0:0:0:0:0:0:*", ["fe80::abcd"], ["fe81::1"]),
    ("", [], ["127.0.0.1"]),
])
def test_white_address_patterns(pattern: str, matching: list[str], other: list[str]) -> None:
    strategy = RemoteAddressStrategy(pattern)
    assert all(strategy(ip) for ip in matching)
    assert not any(strategy(ip) for ip in other)


@pytest.mark.parametrize("pattern", ["10.0.0", "a.b.c.d", "10.*.1.1", "*.1.1.1", "10.0.0.{1,x}", "10.0.0.5-2"])
def test_bad_white_address_patterns_are_config_errors(pattern: str) -> None:
    with pytest.raises(AclConfigError, match="white address"):
        RemoteAddressStrategy(pattern)


def test_the_yaml_file_is_read_as_rocketmq_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text(
        "globalWhiteRemoteAddresses:\n  - 10.10.103.*\n"
        "accounts:\n"
        "  - accessKey: RocketMQ\n    secretKey: 12345678\n    whiteRemoteAddress:\n    admin: false\n"
        "    defaultTopicPerm: DENY\n    defaultGroupPerm: SUB\n"
        "    topicPerms:\n      - topicA=DENY\n      - topicB=PUB|SUB\n"
        "    groupPerms:\n      - groupA=DENY\n"
        "  - accessKey: rocketmq2\n    secretKey: 12345678\n    admin: true\n"
    )
    config = load_plain_acl(path)
    account = config.accounts["RocketMQ"]
    assert account.secret_key == "12345678"  # a YAML number, held as text
    assert account.resource_perms == {"topicA": DENY, "topicB": PUB | SUB, "%RETRY%groupA": DENY}
    assert (account.default_topic_perm, account.default_group_perm, account.admin) == (DENY, SUB, False)
    assert config.accounts["rocketmq2"].admin
    assert config.global_white_remote_addresses[0]("10.10.103.7")
    assert "12345678" not in repr(account) + repr(config)


def test_a_json_file_works_too(tmp_path: Path) -> None:
    path = tmp_path / "acl.json"
    path.write_text(json.dumps(ACL))
    assert set(load_plain_acl(path).accounts) == {"RocketMQ", "rocketmq2"}


@pytest.mark.parametrize(("data", "error"), [
    ({"accounts": [{"accessKey": "short", "secretKey": "12345678"}]}, "longer than 6"),
    ({"accounts": [{"accessKey": "RocketMQ"}]}, "secretKey are required"),
    ({"accounts": [{"accessKey": "RocketMQ", "secretKey": "12345678", "topicPerms": ["topicA"]}]}, "name=PERM"),
    ({"accounts": [{"accessKey": "RocketMQ", "secretKey": "12345678", "whiteRemoteAddress": "x.y"}]},
     "whiteRemoteAddress"),
    ({"accounts": [{"accessKey": "RocketMQ", "secretKey": "12345678"}] * 2}, "defined twice"),
    ({"accounts": "RocketMQ"}, "expected a list"),
])
def test_bad_accounts_are_config_errors(data: object, error: str) -> None:
    with pytest.raises(AclConfigError, match=error):
        parse_plain_acl(data, "acl.yml")


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(AclConfigError, match="cannot read ACL file"):
        load_plain_acl(tmp_path / "missing.yml")


def _signed(code: int, ext: dict[str, object], body: bytes | None = None, key: str = "RocketMQ",
            secret: str = "12345678") -> RemotingCommand:
    request = RemotingCommand.request(code, ext, body)
    AclClientRPCHook(SessionCredentials(key, secret))(request)
    return request


@pytest.mark.parametrize(("request_", "address", "refusal"), [
    (RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "topicB"}), "127.0.0.1:1", "No accessKey"),
    (_signed(RequestCode.SEND_MESSAGE, {"topic": "topicB"}, key="Nobody12"), "127.0.0.1:1", "No acl config"),
    (_signed(RequestCode.SEND_MESSAGE, {"topic": "topicB"}, secret="wrong-secret"), "127.0.0.1:1",
     "Check signature failed for accessKey=RocketMQ"),
    (_signed(RequestCode.SEND_MESSAGE, {"topic": "topicA"}), "127.0.0.1:1",
     "No permission for topic:topicA: accessKey=RocketMQ needs PUB, its topicPerms give DENY"),
    (_signed(RequestCode.SEND_MESSAGE, {"topic": "other"}), "127.0.0.1:1",
     "No default permission for topic:other: accessKey=RocketMQ needs PUB, its defaultTopicPerm is DENY"),
    (_signed(RequestCode.PULL_MESSAGE, {"topic": "topicP", "consumerGroup": "groupB"}), "127.0.0.1:1",
     "No permission for topic:topicP: accessKey=RocketMQ needs SUB, its topicPerms give PUB"),
    (_signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupA"}), "127.0.0.1:1",
     "No permission for group:groupA"),
    (_signed(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "topicB"}), "127.0.0.1:1",
     "Need admin permission for request code=17, but accessKey=RocketMQ is not"),
])
def test_the_validator_refuses_with_a_clear_remark(request_: RemotingCommand, address: str, refusal: str) -> None:
    remark = PlainAccessValidator(parse_plain_acl(ACL))(address, request_)
    assert remark is not None and refusal in remark


@pytest.mark.parametrize(("request_", "address"), [
    (RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "topicA"}), "10.10.103.9:40000"),  # global list
    (RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {"AccessKey": "rocketmq2"}), "192.168.1.3:1"),
    (_signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupC"}), "127.0.0.1:1"),
    (_signed(RequestCode.PULL_MESSAGE, {"topic": "topicB", "consumerGroup": "someGroup"}), "127.0.0.1:1"),
    (_signed(RequestCode.SEND_MESSAGE, {"topic": "RMQ_SYS_TRACE_TOPIC"}), "127.0.0.1:1"),  # the trace exception
    (_signed(RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"}, key="rocketmq2"), "127.0.0.1:1"),
    (_signed(RequestCode.GET_MAX_OFFSET, {"topic": "topicA", "queueId": 0}), "127.0.0.1:1"),  # signature only
])
def test_the_validator_lets_these_through(request_: RemotingCommand, address: str) -> None:
    assert PlainAccessValidator(parse_plain_acl(ACL))(address, request_) is None


def test_a_changed_body_or_header_breaks_the_signature() -> None:
    validator = PlainAccessValidator(parse_plain_acl(ACL))
    request = _signed(RequestCode.SEND_MESSAGE, {"topic": "topicB", "queueId": 1}, b"original")
    assert validator("127.0.0.1:1", request) is None
    request.body = b"replaced"
    assert "Check signature failed" in (validator("127.0.0.1:1", request) or "")
    request.body = b"original"
    request.ext_fields["queueId"] = 2
    assert "Check signature failed" in (validator("127.0.0.1:1", request) or "")


@given(st.dictionaries(st.text(min_size=1), st.text() | st.integers() | st.booleans(), max_size=8),
       st.binary(max_size=64) | st.none())
def test_whatever_a_client_signs_the_server_accepts(ext: dict[str, object], body: bytes | None) -> None:
    ext = {k: v for k, v in ext.items() if k not in ("AccessKey", "Signature", "SecurityToken")}
    request = _signed(RequestCode.GET_MAX_OFFSET, ext, body)
    [received] = decode_native_frames(encode_native(request, None))
    assert PlainAccessValidator(parse_plain_acl(ACL))("127.0.0.1:1", received) is None


def test_a_recall_needs_pub_on_its_topic() -> None:
    """RECALL_MESSAGE (RocketMQ 5): RecallMessageRequestHeader's action is PUB on the topic."""
    request = RemotingCommand.request(RequestCode.RECALL_MESSAGE, RecallMessageRequestHeader("T", "handle"))
    assert parse_request("10.0.0.1:1234", request).resource_perms == {"T": PUB}


@pytest.mark.parametrize(("version", "signed_with_flag", "accepted"), [
    (399, False, True),  # 4.9.3 and before: the flag is not part of what is checked (Apache 5.x)
    (401, True, True),  # 4.9.4 signs it: MQVersion.Version.V4_9_4.ordinal()
    (404, True, True),
    (409, True, True),
    (401, False, False),
])
def test_a_query_by_unique_key_is_checked_by_the_client_s_version(version: int, signed_with_flag: bool,
                                                                  accepted: bool) -> None:
    """MixAll.UNIQUE_MSG_QUERY_FLAG is signed by clients after 4.9.3 (V4_9_3's ordinal is 399, not 404)."""
    ext = {"topic": "topicB", "key": "k", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 1}
    request = _signed(RequestCode.QUERY_MESSAGE, {**ext, "_UNIQUE_KEY_QUERY": "true"} if signed_with_flag else ext)
    request.ext_fields["_UNIQUE_KEY_QUERY"] = "true"
    request.version = version
    remark = PlainAccessValidator(parse_plain_acl(ACL))("127.0.0.1:1", request)
    assert (remark is None) is accepted, remark


@pytest.mark.parametrize("signature", ["AAAAé=", "\ud800", ""])
def test_a_signature_that_is_not_base64_text_is_refused_as_wrong(signature: str) -> None:
    request = _signed(RequestCode.SEND_MESSAGE, {"topic": "topicB"})
    request.ext_fields["Signature"] = signature
    remark = PlainAccessValidator(parse_plain_acl(ACL))("127.0.0.1:1", request)
    assert remark is not None and remark.startswith("Check signature failed for accessKey=RocketMQ")


def test_signed_content_is_java_s_for_lone_surrogates_and_names_beyond_u_ffff() -> None:
    """Java's TreeMap orders names by UTF-16 code units ("\\U0001F600" is D83D DE00, before "\\uE000"), and
    String.getBytes(UTF-8) writes "?" for a lone surrogate (a JSON header can carry "\\ud800")."""
    assert combine_request_content({"\ue000": "b", "\U0001f600": "a", "A": "0"}, None) == b"0ab"
    assert combine_request_content({"k": "x\ud800y"}, b"!") == b"x?y!"
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE, {"topic": "topicB", "k": "x\ud800y",
                                                                 "AccessKey": "RocketMQ"})
    request.ext_fields["Signature"] = cal_signature(b"RocketMQx?ytopicB", "12345678")
    assert PlainAccessValidator(parse_plain_acl(ACL))("127.0.0.1:1", request) is None


def _heartbeat(body: bytes | None, ext: dict[str, object] | None = None) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.HEART_BEAT, ext if ext is not None else {"AccessKey": "RocketMQ"},
                                      body)
    request.serialize_type = SerializeType.JSON  # (a native frame's body: Java's JSON)
    return request


@pytest.mark.parametrize(("body", "needed"), [
    (b'{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"t"},{}]}]}',
     {"%RETRY%g": SUB, "t": SUB}),
    (b'{"clientID":"c","producerDataSet":null,"consumerDataSet":[{}]}', {}),  # the heartbeat's own to refuse
    (b'{"consumerDataSet":{"groupName":"g","subscriptionDataSet":{"topic":"t"}}}', {"%RETRY%g": SUB, "t": SUB}),
    (b"{consumerDataSet:[{groupName:5}]}", {"%RETRY%5": SUB}),
    (b"{}", {}),
])
def test_a_heartbeat_s_groups_and_topics_are_read_as_4_9_7_reads_them(body: bytes, needed: dict[str, int]) -> None:
    """Found by tests/apache/test_differential_fuzz_acl.py: 4.9.7 reads only the consumers' groups and topics,
    skips a missing one, and takes an object where a set goes (fastjson) as a set of that one object."""
    assert parse_request("127.0.0.1:1", _heartbeat(body)).resource_perms == needed


@pytest.mark.parametrize("body", [None, b"{", b"[]", b"null", b'{"consumerDataSet":null}',
                                  b'{"consumerDataSet":[null]}', b'{"consumerDataSet":"g"}',
                                  b'{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[null]}]}'])
def test_a_heartbeat_body_java_cannot_walk_is_refused(body: bytes | None) -> None:
    remark = PlainAccessValidator(parse_plain_acl(ACL))("10.10.103.9:1", _heartbeat(body))
    assert remark is not None and remark.startswith("cannot read the heartbeat body"), remark


def test_a_request_without_header_fields_is_not_read_further() -> None:
    """4.9.7's parse stops at a null extFields: from a global white-listed address a heartbeat passes whatever
    its body (the heartbeat refuses what it cannot read); from anywhere else it is refused for its missing key."""
    validator = PlainAccessValidator(parse_plain_acl(ACL))
    assert validator("10.10.103.9:1", _heartbeat(b"{", {})) is None
    assert (validator("127.0.0.1:1", _heartbeat(b"{", {})) or "").startswith("No accessKey is configured")
