"""RocketMQ 4.x's plain access control (``plain_acl.yml``), for both ends of a connection.

- ``signer``: what a client adds to each request (RocketMQ's ``AclClientRPCHook``, ``AclUtils``, ``AclSigner``):
  its AccessKey and an HMAC-SHA1 Signature over the sorted header values and the body.
- ``permission``: the PUB/SUB/DENY bits of ``Permission`` and the request codes only admins may send.
- ``remote_address``: the white-list patterns of ``RemoteAddressStrategyFactory``.
- ``config``: the accounts file (``PlainPermissionManager.load``).
- ``validator``: what a server checks before any processor sees a request (``PlainAccessValidator.parse`` and
  ``PlainPermissionManager.validate``); a RemotingServer runs it through ``Endpoint.request_validator``.

Everything here is sans-IO except ``config.load_plain_acl``, which reads one file when a server starts.
"""

from __future__ import annotations

from .signer import ACCESS_KEY, SECURITY_TOKEN, SIGNATURE, AclClientRPCHook, SessionCredentials, cal_signature

__all__ = ["ACCESS_KEY", "SECURITY_TOKEN", "SIGNATURE", "AclClientRPCHook", "SessionCredentials", "cal_signature"]
