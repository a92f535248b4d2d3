"""The server's side of plain ACL: RocketMQ's ``PlainAccessValidator.parse`` (what a request needs) and
``PlainPermissionManager.validate`` (whether its account has it).

A request passes when, in this order:

1. its address is in ``globalWhiteRemoteAddresses``; else
2. it names an ``AccessKey`` of an account, and
3. its address is in that account's ``whiteRemoteAddress`` (no signature needed); else
4. its ``Signature`` is right for the account's secret key (``signer``), and
5. the code is not admin-only, or the account is ``admin``; and every resource the request touches (``parse_request``)
   is allowed: its entry in ``topicPerms``/``groupPerms`` when there is one, else ``defaultTopicPerm`` /
   ``defaultGroupPerm``. (Sending PUB to the trace topic RMQ_SYS_TRACE_TOPIC skips this step, as in RocketMQ.)

A refusal is an ``AclError`` whose text says which key, which resource and which permission; the server answers
NO_PERMISSION (16) with it. (RocketMQ 4.9.8 answers SYSTEM_ERROR with the exception's text.)
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Collection, Mapping
from typing import Any

from pocketmq.common.mix_all import UNIQUE_MSG_QUERY_FLAG, is_retry_topic
from pocketmq.common.mix_all import get_retry_topic as retry_topic
from pocketmq.common.mq_version import V4_9_3
from pocketmq.common.topic_validator import RMQ_SYS_TRACE_TOPIC

from .. import fastjson
from ..codes import RequestCode
from ..command import RemotingCommand
from ..errors import BodyError
from ..remoting_serializable import java_ext_fields
from .config import PlainAccount, PlainAclConfig, load_plain_acl
from .permission import (
    BROKER_ADMIN_CODES,
    NAMESRV_PROTECTED_CODES,
    PUB,
    SUB,
    check_permission,
    describe_resource,
    perm_text,
)
from .signer import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, cal_signature, combine_request_content

# MixAll.UNIQUE_MSG_QUERY_FLAG is left out of what is checked for clients up to 4.9.3, as Apache 5.x's
# PlainAccessResource.parse does (4.9.7 leaves it out for every client, so it refuses every signed query by key).


class AclError(Exception):
    """A request refused by the ACL; the text is the response's remark."""


class AccessResource:
    """What one request asks for (RocketMQ's PlainAccessResource of a request)."""

    __slots__ = ("remote_ip", "request_code", "access_key", "signature", "security_token", "resource_perms", "_ext",
                 "_body", "_version")

    def __init__(self, remote_ip: str, request: RemotingCommand, ext: dict[str, str]) -> None:
        self.remote_ip = remote_ip
        self.request_code: int | str = request.code
        self.access_key = ext.get(ACCESS_KEY)
        self.signature = ext.get(SIGNATURE)
        self.security_token = ext.get(SECURITY_TOKEN)
        self.resource_perms: dict[str, int] = {}
        self._ext = ext
        self._body = request.body
        self._version = request.version

    def add(self, resource: str | None, perm: int) -> None:
        if resource is not None:
            self.resource_perms[resource] = perm

    def signature_matches(self, secret_key: str) -> bool:
        """Whether the request was signed with ``secret_key`` (AclSigner's scheme over ``content()``)."""
        if self.signature is None:
            return False
        # As bytes: compare_digest refuses str with non-ASCII, and a signature is whatever the request carried.
        return hmac.compare_digest(cal_signature(self.content(), secret_key).encode(),
                                   self.signature.encode("utf-8", "replace"))

    def content(self) -> bytes:
        """What the client signed (``combine_request_content``), from what the request carries."""
        ext = self._ext
        if self._version <= V4_9_3 and UNIQUE_MSG_QUERY_FLAG in ext:
            ext = {k: v for k, v in ext.items() if k != UNIQUE_MSG_QUERY_FLAG}
        return combine_request_content(ext, self._body)


def remote_ip(remote_address: str) -> str:
    """The host of ``host:port`` (or of ``[v6]:port``)."""
    host, sep, _port = remote_address.rpartition(":")
    return host.strip("[]") if sep else remote_address


def parse_request(remote_address: str, request: RemotingCommand) -> AccessResource:
    """The resources ``request`` touches and the permission each needs (PlainAccessValidator.parse)."""
    ext = java_ext_fields(request.ext_fields)
    resource = AccessResource(remote_ip(remote_address), request, ext)
    if not ext:
        # A frame without header fields is Java's null extFields, on which 4.9.7 reads nothing more (a
        # heartbeat's body neither): only a global white-listed address gets it through
        return resource
    code = request.code
    get = ext.get
    # (A reply is stored in the topic its header names: 4.9.8 checks nothing for the reply codes, so any account
    # could write any topic through them.)
    if code == RequestCode.SEND_MESSAGE or code == RequestCode.SEND_REPLY_MESSAGE:
        _add_send(resource, get("topic"), get("group"))
    elif code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
        _add_send(resource, get("b"), get("a"))
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        resource.add(_retry(get("group")), SUB)
    elif code == RequestCode.PULL_MESSAGE or code == RequestCode.LITE_PULL_MESSAGE:
        resource.add(get("topic"), SUB)
        resource.add(_retry(get("consumerGroup")), SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        resource.add(get("topic"), SUB)
    elif code == RequestCode.RECALL_MESSAGE:  # (5.x: RecallMessageRequestHeader's action is PUB)
        resource.add(get("topic"), PUB)
    elif code == RequestCode.HEART_BEAT:
        _add_heartbeat(resource, request)
    elif code == RequestCode.UNREGISTER_CLIENT or code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
        resource.add(_retry(get("consumerGroup")), SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET or code in _POP_CODES:
        # (POP: consuming a topic as the group, as a pull does; BATCH_ACK_MESSAGE names both in its body and is
        # checked by signature only.)
        resource.add(_retry(get("consumerGroup")), SUB)
        resource.add(get("topic"), SUB)
    return resource


_POP_CODES = frozenset({
    RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.PEEK_MESSAGE,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME, RequestCode.NOTIFICATION, RequestCode.POLLING_INFO,
})


def _retry(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def _add_send(resource: AccessResource, topic: str | None, group: str | None) -> None:
    # A send to a retry topic (a consumer giving a message back) needs SUB on the group, any other send PUB.
    if topic is not None and is_retry_topic(topic):
        resource.add(_retry(group), SUB)
    else:
        resource.add(topic, PUB)


def _add_heartbeat(resource: AccessResource, request: RemotingCommand) -> None:
    """Each consumer's group and subscribed topics, read as 4.9.7's PlainAccessValidator.parse reads them: only
    what it reads counts, so a body the heartbeat itself then refuses (a null producer set, a consumer without a
    group) is the heartbeat's to refuse, as there; a missing group or topic is skipped; what Java could not walk
    (no JSON, no JSON object, a null set, consumer or subscription, a text or number for one) is refused."""
    try:
        heartbeat = request.decode_body()
    except BodyError as e:
        raise AclError(f"cannot read the heartbeat body to check its groups: {e}") from None
    if not isinstance(heartbeat, Mapping):
        raise AclError("cannot read the heartbeat body to check its groups: it is no JSON object")
    for consumer in _maps(heartbeat.get("consumerDataSet", []), "consumerDataSet"):
        group = consumer.get("groupName")
        if group is not None:
            resource.add(retry_topic(fastjson.java_string(group)), SUB)
        for subscription in _maps(consumer.get("subscriptionDataSet", []), "subscriptionDataSet"):
            topic = subscription.get("topic")
            if topic is not None:
                resource.add(fastjson.java_string(topic), SUB)


def _maps(value: object, key: str) -> list[Mapping[str, Any]]:
    if isinstance(value, Mapping):
        return [value]  # (fastjson reads an object where a collection goes as a collection of that one object)
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise AclError(f"cannot read the heartbeat body to check its groups: {key} is no list of objects")
    return value


class PlainAccessValidator:
    """``validator(remote_address, request)`` -> None when allowed, else the refusal's text: what a
    RemotingServer's ``request_validator`` is.

    ``checked_codes``: the codes checked at all (None: every code, as a broker checks); ``admin_codes``: those
    only admin accounts may send.
    """

    def __init__(
        self,
        config: PlainAclConfig,
        admin_codes: Collection[int] = BROKER_ADMIN_CODES,
        checked_codes: Collection[int] | None = None,
    ) -> None:
        self.config = config
        self.admin_codes = frozenset(int(c) for c in admin_codes)
        self.checked_codes = None if checked_codes is None else frozenset(int(c) for c in checked_codes)

    @classmethod
    def for_broker(cls, path: str | os.PathLike[str]) -> PlainAccessValidator:
        return cls(load_plain_acl(path))

    @classmethod
    def for_namesrv(cls, path: str | os.PathLike[str]) -> PlainAccessValidator:
        """Checks only the requests that change routes (permission.NAMESRV_PROTECTED_CODES), each admin-only."""
        return cls(load_plain_acl(path), NAMESRV_PROTECTED_CODES, NAMESRV_PROTECTED_CODES)

    def __call__(self, remote_address: str, request: RemotingCommand) -> str | None:
        if self.checked_codes is not None and request.code not in self.checked_codes:
            return None
        try:
            self.validate(parse_request(remote_address, request))
        except AclError as e:
            return str(e)
        return None

    def validate(self, resource: AccessResource) -> None:
        """Raise AclError unless ``resource`` is allowed (PlainPermissionManager.validate)."""
        config = self.config
        ip = resource.remote_ip
        if any(white(ip) for white in config.global_white_remote_addresses):
            return
        code = resource.request_code
        access_key = resource.access_key
        if access_key is None:
            raise AclError(f"No accessKey is configured: request code {code} from {ip} is not signed, and {ip} "
                           "is not in globalWhiteRemoteAddresses")
        account = config.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}: no such accessKey (request code {code} from {ip})")
        if account.white_remote_address(ip):
            return
        if not resource.signature_matches(account.secret_key):
            raise AclError(f"Check signature failed for accessKey={access_key} (request code {code}): wrong secret "
                           "key, or the request was changed after it was signed")
        if resource.resource_perms.get(RMQ_SYS_TRACE_TOPIC) == PUB:
            return
        self._check_perm(resource, account)

    def _check_perm(self, resource: AccessResource, account: PlainAccount) -> None:
        code = resource.request_code
        if code in self.admin_codes and not account.admin:
            raise AclError(f"Need admin permission for request code={code}, but accessKey={account.access_key} "
                           "is not")
        needed_perms = resource.resource_perms
        owned_perms = account.resource_perms
        if not needed_perms or (not owned_perms and account.admin):
            return
        for name, needed in needed_perms.items():
            is_group = is_retry_topic(name)
            owned = owned_perms.get(name)
            if owned is None:
                owned = account.default_group_perm if is_group else account.default_topic_perm
                if not check_permission(needed, owned):
                    setting = "defaultGroupPerm" if is_group else "defaultTopicPerm"
                    raise AclError(f"No default permission for {describe_resource(name)}: accessKey="
                                   f"{account.access_key} needs {perm_text(needed)}, its {setting} is "
                                   f"{perm_text(owned)}")
            elif not check_permission(needed, owned):
                setting = "groupPerms" if is_group else "topicPerms"
                raise AclError(f"No permission for {describe_resource(name)}: accessKey={account.access_key} "
                               f"needs {perm_text(needed)}, its {setting} give {perm_text(owned)}")
