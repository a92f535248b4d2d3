"""GrpcAccessValidator: RocketMQ's ACL (plain_acl.yml accounts) on the gRPC endpoint, as RocketMQ 5's proxy checks
its calls: who is calling, from the ``authorization`` header every SDK sends with credentials,

    MQv2-HMAC-SHA1 Credential=<accessKey>, SignedHeaders=x-mq-date-time, Signature=<hex HMAC-SHA1(secretKey, date)>

and what the call touches (PlainAccessValidator.parse of a gRPC message: a send needs PUB on its topic, a receive,
ack or change of invisible time SUB on the topic and on the group...). The account's permissions are judged by the
broker's own ``PlainAccessValidator``: one rule for both protocols. A refusal is UNAUTHORIZED (40100), as
RocketMQ's proxy answers its AuthenticationException and AuthorizationException.
"""

from __future__ import annotations

import hmac
from typing import Any

from pocketmq.common.mix_all import get_retry_topic
from pocketmq.remoting.acl.permission import ANY, PUB, SUB
from pocketmq.remoting.acl.validator import AccessResource, AclError, PlainAccessValidator, remote_ip

from .protocol import load
from .proxy_context import ProxyContext
from .proxy_exception import GrpcProxyException

pb = load()

ALGORITHM = "MQv2-HMAC-SHA1"


def parse_authorization(value: str) -> tuple[str | None, str | None]:
    """(access key, hex signature) of an ``authorization`` header; None for what it does not carry."""
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != ALGORITHM:
        return None, None
    fields = {}
    for part in rest.split(","):
        key, _, val = part.strip().partition("=")
        fields[key] = val.strip()
    credential = fields.get("Credential") or ""
    access_key = credential.split("/", 1)[0] or None
    return access_key, fields.get("Signature") or None


class GrpcAccessResource(AccessResource):
    """What one gRPC call asks for; signed over its ``x-mq-date-time`` header."""

    __slots__ = ("_date_time",)

    def __init__(self, ctx: ProxyContext, method: str) -> None:
        self.remote_ip = remote_ip(ctx.remote_address)
        self.request_code = method
        self.access_key, self.signature = parse_authorization(ctx.authorization)
        self.security_token = None
        self.resource_perms = {}
        self._date_time = ctx.date_time

    def signature_matches(self, secret_key: str) -> bool:
        if self.signature is None:
            return False
        expected = hmac.digest(secret_key.encode("utf-8"), self._date_time.encode("utf-8"), "sha1").hex()
        return hmac.compare_digest(expected, self.signature.lower())


def _topic(resource: Any) -> str:
    name: str = resource.name
    return name


def _group(resource: Any) -> str:
    return get_retry_topic(resource.name)


def resources_of(method: str, request: Any, access: GrpcAccessResource) -> None:
    """The resources ``request`` touches and the permission each needs."""
    add = access.add
    if method == "SendMessage":
        for message in request.messages:
            add(_topic(message.topic), PUB)
    elif method in ("ReceiveMessage",):
        add(_topic(request.message_queue.topic), SUB)
        add(_group(request.group), SUB)
    elif method in ("AckMessage", "ChangeInvisibleDuration", "ForwardMessageToDeadLetterQueue"):
        add(_topic(request.topic), SUB)
        add(_group(request.group), SUB)
    elif method in ("EndTransaction", "RecallMessage"):
        add(_topic(request.topic), PUB)
    elif method == "QueryRoute":
        add(_topic(request.topic), ANY)
    elif method == "QueryAssignment":
        add(_topic(request.topic), SUB)
        add(_group(request.group), SUB)
    elif method in ("Heartbeat", "NotifyClientTermination"):
        if request.HasField("group"):
            add(_group(request.group), SUB)
    elif method == "Telemetry" and request.WhichOneof("command") == "settings":
        settings = request.settings
        if settings.HasField("publishing"):
            for topic in settings.publishing.topics:
                add(_topic(topic), PUB)
        if settings.HasField("subscription"):
            add(_group(settings.subscription.group), SUB)
            for entry in settings.subscription.subscriptions:
                add(_topic(entry.topic), SUB)


class GrpcAccessValidator:
    def __init__(self, validator: PlainAccessValidator) -> None:
        self.validator = validator

    def check(self, ctx: ProxyContext, method: str, request: Any) -> None:
        """Raise GrpcProxyException(UNAUTHORIZED) unless the caller may make this call."""
        access = GrpcAccessResource(ctx, method)
        resources_of(method, request, access)
        try:
            self.validator.validate(access)
        except AclError as e:
            raise GrpcProxyException(pb.Code.UNAUTHORIZED, str(e)) from None
