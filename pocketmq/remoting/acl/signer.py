"""The client's side of plain ACL: RocketMQ's ``AclClientRPCHook`` with ``AclUtils.combineRequestContent`` and
``AclSigner.calSignature``.

A signed request carries ``AccessKey`` (and ``SecurityToken`` when there is one) among its header fields, and
``Signature``: base64(HMAC-SHA1(secretKey, content)), where content is the UTF-8 concatenation of every header
value but Signature's, in the order of their names, followed by the body bytes. Header values are taken as a Java
peer holds them (``remoting_serializable.java_text``: ``true``/``false``, decimal integers), so a msgpack frame,
whose values may be ints or booleans, signs to the same text as the native frame of the same request.
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from ..command import RemotingCommand
from ..remoting_serializable import java_ext_fields

# SessionCredentials' header names.
ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"


def combine_request_content(ext_fields: Mapping[str, str], body: bytes | None) -> bytes:
    """What is signed: the values of ``ext_fields`` (text) sorted by name, Signature's left out, then ``body``.

    Java sorts with a TreeMap, by UTF-16 code units (for ASCII names Python's order, not for names beyond U+FFFF),
    and its getBytes(UTF-8) writes "?" for a lone surrogate (a JSON header may carry one).
    """
    text = "".join(value for name, value in sorted(ext_fields.items(), key=_utf16_name) if name != SIGNATURE)
    content = text.encode("utf-8", "replace")
    return content + body if body else content


def _utf16_name(item: tuple[str, str]) -> bytes:
    return item[0].encode("utf-16-be", "surrogatepass")


def cal_signature(content: bytes, secret_key: str) -> str:
    """base64(HMAC-SHA1(secret_key, content)), as ``AclSigner.calSignature`` (charset UTF-8)."""
    return base64.b64encode(hmac.digest(secret_key.encode("utf-8"), content, "sha1")).decode("ascii")


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """RocketMQ's SessionCredentials: the keys a client signs its requests with."""

    access_key: str
    secret_key: str
    security_token: str | None = None

    def __repr__(self) -> str:  # never print the secret (logs, tracebacks)
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key='***')"


class AclClientRPCHook:
    """Signs a request in place before it is sent: ``hook(request)``. A RemotingClient with ``rpc_hook`` set
    calls it for every request and one-way request it sends."""

    __slots__ = ("credentials",)

    def __init__(self, credentials: SessionCredentials) -> None:
        self.credentials = credentials

    def __call__(self, request: RemotingCommand) -> None:
        credentials = self.credentials
        ext = request.ext_fields
        ext[ACCESS_KEY] = credentials.access_key
        if credentials.security_token is not None:
            ext[SECURITY_TOKEN] = credentials.security_token
        content = combine_request_content(java_ext_fields(ext), request.body)
        ext[SIGNATURE] = cal_signature(content, credentials.secret_key)

    def __repr__(self) -> str:
        return f"AclClientRPCHook({self.credentials!r})"
