"""The proxy's TLS certificate: the one given, or a self-signed one made at start (RocketMQ's
tlsTestModeEnable). The SDKs that default to TLS (Java, Go, C#, C++) accept any certificate.

The self-signed one is an X.509 v3 certificate (RFC 5280) for an ECDSA P-256 key, written here in DER: the few
ASN.1 shapes it needs are below, and ``ecdsa_p256`` makes the key and the signature, so a start imports no
cryptography library (importing one cost more than the rest of the gRPC endpoint).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import secrets
from pathlib import Path

from . import ecdsa_p256

# Object identifiers (RFC 5280, RFC 5480, RFC 5758).
ID_EC_PUBLIC_KEY = "1.2.840.10045.2.1"
PRIME256V1 = "1.2.840.10045.3.1.7"
ECDSA_WITH_SHA256 = "1.2.840.10045.4.3.2"
COMMON_NAME = "2.5.4.3"
SUBJECT_ALT_NAME = "2.5.29.17"

VALID_DAYS = 3650


def _tlv(tag: int, content: bytes) -> bytes:
    n = len(content)
    if n < 0x80:
        return bytes((tag, n)) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((tag, 0x80 | len(size))) + size + content


def _sequence(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _integer(value: int) -> bytes:
    return _tlv(0x02, value.to_bytes(value.bit_length() // 8 + 1, "big"))  # (a leading 0 keeps it positive)


def _oid(dotted: str) -> bytes:
    first, second, *rest = (int(part) for part in dotted.split("."))
    out = bytearray([40 * first + second])
    for arc in rest:
        chunk = [arc & 0x7F]
        while arc := arc >> 7:
            chunk.append(0x80 | (arc & 0x7F))
        out += bytes(reversed(chunk))
    return _tlv(0x06, bytes(out))


def _bit_string(data: bytes) -> bytes:
    return _tlv(0x03, b"\x00" + data)  # (no unused bits)


def _time(when: datetime.datetime) -> bytes:
    """UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5)."""
    if when.year < 2050:
        return _tlv(0x17, when.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, when.strftime("%Y%m%d%H%M%SZ").encode())


def _name(common_name: str) -> bytes:
    return _sequence(_tlv(0x31, _sequence(_oid(COMMON_NAME), _tlv(0x0C, common_name.encode()))))


def _subject_alt_names(hosts: list[str]) -> bytes:
    names = []
    for host in dict.fromkeys(hosts + ["localhost", "127.0.0.1"]):
        try:
            names.append(_tlv(0x87, ipaddress.ip_address(host).packed))  # [7] iPAddress
        except ValueError:
            names.append(_tlv(0x82, host.encode("ascii")))  # [2] dNSName
    return _sequence(_oid(SUBJECT_ALT_NAME), _tlv(0x04, _sequence(*names)))


def _pem(label: str, der: bytes) -> bytes:
    text = base64.b64encode(der).decode()
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----", ""]).encode()


def self_signed_certificate(hosts: list[str]) -> tuple[bytes, bytes]:
    """(private key PEM, certificate PEM) for ``hosts`` (names or IP addresses), valid for ten years."""
    key = ecdsa_p256.generate_private_key()
    point = ecdsa_p256.encode_point(ecdsa_p256.public_key(key))
    ec_p256 = _sequence(_oid(ID_EC_PUBLIC_KEY), _oid(PRIME256V1))
    signature_algorithm = _sequence(_oid(ECDSA_WITH_SHA256))
    name = _name("pocketmq")
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    tbs = _sequence(
        _tlv(0xA0, _integer(2)),  # [0] version: v3
        _integer(secrets.randbits(159) | 1),  # (positive, at most 20 octets)
        signature_algorithm,
        name,
        _sequence(_time(now - datetime.timedelta(days=1)), _time(now + datetime.timedelta(days=VALID_DAYS))),
        name,
        _sequence(ec_p256, _bit_string(point)),
        _tlv(0xA3, _sequence(_subject_alt_names(hosts))),  # [3] extensions
    )
    r, s = ecdsa_p256.sign(key, tbs)
    certificate = _sequence(tbs, signature_algorithm, _bit_string(_sequence(_integer(r), _integer(s))))
    # PKCS #8 around SEC 1's ECPrivateKey (version 1, the key, [1] the public point).
    ec_private_key = _sequence(_integer(1), _tlv(0x04, key.to_bytes(32, "big")), _tlv(0xA1, _bit_string(point)))
    private_key = _sequence(_integer(0), ec_p256, _tlv(0x04, ec_private_key))
    return _pem("PRIVATE KEY", private_key), _pem("CERTIFICATE", certificate)


def load_or_make(cert_file: str | None, key_file: str | None, hosts: list[str]) -> tuple[bytes, bytes]:
    if cert_file and key_file:
        return Path(key_file).read_bytes(), Path(cert_file).read_bytes()
    if cert_file or key_file:
        raise ValueError("a TLS certificate needs both its file and its key file")
    return self_signed_certificate(hosts)
