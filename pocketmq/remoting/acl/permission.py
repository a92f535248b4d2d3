"""RocketMQ's ``acl.common.Permission``: the bits an account holds on a topic or a group, and the request codes
only an admin account may send."""

from __future__ import annotations

from pocketmq.common.mix_all import RETRY_GROUP_TOPIC_PREFIX, is_retry_topic

from ..codes import RequestCode

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

# A group's permissions are kept under its retry topic's name (MixAll.RETRY_GROUP_TOPIC_PREFIX), as RocketMQ does.

_BY_TEXT = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}


def parse_perm(text: str | None) -> int:
    """``Permission.parsePermFromString``: PUB, SUB, PUB|SUB (or SUB|PUB), DENY; anything else, or none, is DENY."""
    if text is None:
        return DENY
    return _BY_TEXT.get(text.strip(), DENY)


def perm_text(perm: int) -> str:
    if perm & DENY:
        return "DENY"
    names = [name for bit, name in ((PUB, "PUB"), (SUB, "SUB")) if perm & bit]
    if perm & ANY:
        names.append("ANY")
    return "|".join(names) or "none"


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``: DENY owns nothing; ANY is met by PUB or SUB; else one needed bit owned."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def describe_resource(resource: str) -> str:
    """``PlainAccessResource.printStr``: ``group:G`` for a group's retry topic, ``topic:T`` otherwise."""
    if is_retry_topic(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


# Permission.ADMIN_CODE (RocketMQ 4.9.8) ...
ROCKETMQ_ADMIN_CODES = frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
})
# ... and pocketmq's additions: every other request that changes a broker's state for everyone (offsets of a whole
# group, files, permissions, the ACL itself). RocketMQ 4.9.8 lets any signed account send these.
BROKER_ADMIN_CODES = ROCKETMQ_ADMIN_CODES | frozenset({
    RequestCode.UPDATE_AND_CREATE_TOPIC_LIST,  # (RocketMQ 5 requires its CREATE action, as for one topic)
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode.RESET_CONSUMER_OFFSET_IN_BROKER,
    RequestCode.CLONE_GROUP_OFFSET,
    RequestCode.TRIGGER_DELETE_FILES,
    RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
    RequestCode.CLEAN_UNUSED_TOPIC,
    RequestCode.DELETE_EXPIRED_COMMITLOG,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER,
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
})
# What a name server checks with ACL on (RocketMQ 4.9.8's name server checks nothing): the requests that change
# routes or name-server state, each for admins only. Reads (routes, cluster info) stay open to every client.
NAMESRV_PROTECTED_CODES = frozenset({
    RequestCode.REGISTER_BROKER,
    RequestCode.UNREGISTER_BROKER,
    RequestCode.DELETE_TOPIC_IN_NAMESRV,
    RequestCode.PUT_KV_CONFIG,
    RequestCode.DELETE_KV_CONFIG,
    RequestCode.UPDATE_NAMESRV_CONFIG,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER,
})
