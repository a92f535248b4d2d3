"""The proxy's TLS certificate: the one given, or a self-signed one made at start (RocketMQ's
tlsTestModeEnable). The SDKs that default to TLS (Java, Go, C#, C++) accept any certificate."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path


def self_signed_certificate(hosts: list[str]) -> tuple[bytes, bytes]:
    """(private key PEM, certificate PEM) for ``hosts`` (names or IP addresses), valid for ten years."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pocketmq")])
    alt: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts + ["localhost", "127.0.0.1"]):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def load_or_make(cert_file: str | None, key_file: str | None, hosts: list[str]) -> tuple[bytes, bytes]:
    if cert_file and key_file:
        return Path(key_file).read_bytes(), Path(cert_file).read_bytes()
    if cert_file or key_file:
        raise ValueError("a TLS certificate needs both its file and its key file")
    return self_signed_certificate(hosts)
