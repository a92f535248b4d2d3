"""The plain ACL file (RocketMQ's ``conf/plain_acl.yml``, read as ``PlainPermissionManager.load`` reads it)::

    globalWhiteRemoteAddresses:        # these addresses need no signature at all
      - 10.10.103.*
    accounts:
      - accessKey: RocketMQ            # longer than 6 characters, as is secretKey
        secretKey: 12345678
        whiteRemoteAddress:            # this account's addresses that need no signature
        admin: false                   # admins may send the admin-only request codes (permission.py)
        defaultTopicPerm: DENY         # for topics not in topicPerms; missing = DENY
        defaultGroupPerm: SUB          # for groups not in groupPerms; missing = DENY
        topicPerms:
          - topicA=DENY
          - topicB=PUB|SUB
          - topicC=SUB
        groupPerms:
          - groupA=DENY
          - groupB=PUB|SUB

YAML needs PyYAML; a ``.json`` file with the same keys needs nothing. The file is read once, when the server
starts (RocketMQ also watches it for changes; pocketmq does not).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pocketmq.common.mix_all import get_retry_topic as retry_topic

from .permission import parse_perm
from .remote_address import AclConfigError, RemoteAddressStrategy

log = logging.getLogger(__name__)

# AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH: a key must be longer than this.
KEY_MIN_LENGTH = 6
_ACCOUNT_KEYS = frozenset({
    "accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm", "topicPerms",
    "groupPerms",
})
_TOP_KEYS = frozenset({"globalWhiteRemoteAddresses", "accounts", "dataVersion"})


@dataclass(frozen=True, slots=True)
class PlainAccount:
    """One account of the ACL file, its permissions resolved to bits (RocketMQ's PlainAccessResource)."""

    access_key: str
    secret_key: str
    white_remote_address: RemoteAddressStrategy
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    # Topic names and groups' retry-topic names (``%RETRY%group``) -> permission bits.
    resource_perms: Mapping[str, int]

    def __repr__(self) -> str:  # never print the secret
        return f"PlainAccount(access_key={self.access_key!r}, admin={self.admin})"


@dataclass(frozen=True, slots=True)
class PlainAclConfig:
    """An ACL file, checked: its global white list and its accounts by access key."""

    global_white_remote_addresses: tuple[RemoteAddressStrategy, ...]
    accounts: Mapping[str, PlainAccount]
    source: str = "<memory>"


def load_plain_acl(path: str | os.PathLike[str]) -> PlainAclConfig:
    """Read and check an ACL file; AclConfigError says what is wrong and where."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise AclConfigError(f"cannot read ACL file {source}: {e.strerror or e}") from None
    if source.endswith(".json"):
        try:
            data = json.loads(text) if text.strip() else None
        except json.JSONDecodeError as e:
            raise AclConfigError(f"{source}: not JSON: {e}") from None
    else:
        data = _load_yaml(text, source)
    return parse_plain_acl(data, source)


def _load_yaml(text: str, source: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise AclConfigError(
            f"{source}: reading a YAML ACL file needs PyYAML (pip install pyyaml); or write the same keys as JSON "
            "in a .json file") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise AclConfigError(f"{source}: not YAML: {e}") from None


def parse_plain_acl(data: object, source: str = "<memory>") -> PlainAclConfig:
    """An ACL config from the file's data (a mapping as YAML or JSON gives it; None for an empty file)."""
    if data is None:
        log.warning("ACL file %s is empty: every request not from a white-listed address is refused", source)
        data = {}
    if not isinstance(data, Mapping):
        raise AclConfigError(f"{source}: expected a mapping with 'accounts' and 'globalWhiteRemoteAddresses'")
    for key in data:
        if key not in _TOP_KEYS:
            log.warning("ACL file %s: unknown key %r ignored", source, key)
    white = tuple(
        _strategy(p, f"{source}: globalWhiteRemoteAddresses")
        for p in _list(data.get("globalWhiteRemoteAddresses"), f"{source}: globalWhiteRemoteAddresses"))
    accounts: dict[str, PlainAccount] = {}
    for n, raw in enumerate(_list(data.get("accounts"), f"{source}: accounts")):
        where = f"{source}: accounts[{n}]"
        if not isinstance(raw, Mapping):
            raise AclConfigError(f"{where}: expected a mapping with accessKey, secretKey, ...")
        account = _account(raw, where)
        if account.access_key in accounts:
            raise AclConfigError(f"{where}: accessKey {account.access_key!r} is defined twice")
        accounts[account.access_key] = account
    return PlainAclConfig(white, accounts, source)


def _account(raw: Mapping[str, Any], where: str) -> PlainAccount:
    for key in raw:
        if key not in _ACCOUNT_KEYS:
            log.warning("%s: unknown key %r ignored", where, key)
    access_key, secret_key = _text(raw.get("accessKey")), _text(raw.get("secretKey"))
    # (PlainPermissionManager.checkPlainAccessConfig: both present and longer than 6 characters)
    if access_key is None or secret_key is None or len(access_key) <= KEY_MIN_LENGTH \
            or len(secret_key) <= KEY_MIN_LENGTH:
        raise AclConfigError(f"{where}: accessKey and secretKey are required and must be longer than "
                             f"{KEY_MIN_LENGTH} characters (accessKey {access_key!r})")
    where = f"{where} ({access_key})"
    perms: dict[str, int] = {}
    for key, is_topic in (("groupPerms", False), ("topicPerms", True)):
        for item in _list(raw.get(key), f"{where}: {key}"):
            name, sep, perm = str(item).partition("=")
            if not sep or not name.strip() or "=" in perm:
                raise AclConfigError(f"{where}: {key} entry {item!r} is not name=PERM (PUB, SUB, PUB|SUB, DENY)")
            resource = name.strip() if is_topic else retry_topic(name.strip())
            perms[resource] = parse_perm(perm)
    return PlainAccount(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=_strategy(_text(raw.get("whiteRemoteAddress")), f"{where}: whiteRemoteAddress"),
        admin=_bool(raw.get("admin"), f"{where}: admin"),
        default_topic_perm=parse_perm(_text(raw.get("defaultTopicPerm"))),
        default_group_perm=parse_perm(_text(raw.get("defaultGroupPerm"))),
        resource_perms=perms,
    )


def _text(value: object) -> str | None:
    # YAML reads `secretKey: 12345678` as a number; Java's config class holds it as text.
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool(value: object, where: str) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclConfigError(f"{where}: expected true or false, got {value!r}")


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list):
        raise AclConfigError(f"{where}: expected a list, got {value!r}")
    return value


def _strategy(pattern: str | None, where: str) -> RemoteAddressStrategy:
    try:
        return RemoteAddressStrategy(pattern)
    except AclConfigError as e:
        raise AclConfigError(f"{where}: {e}") from None
