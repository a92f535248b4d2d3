"""The gRPC endpoint's self-signed certificate, written without a cryptography library: read back and checked by
one (``cryptography``, a test dependency), and used for a real TLS handshake by Python's ``ssl`` (OpenSSL);
tests/proxy/test_grpc_endpoint.py's TLS test does the same through grpcio (BoringSSL), and the Java, Go and Rust
SDK tests connect over it."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pocketmq.proxy import ecdsa_p256
from pocketmq.proxy.tls import load_or_make, self_signed_certificate


def test_the_certificate_is_a_valid_self_signed_p256_certificate_for_the_hosts():
    key_pem, cert_pem = self_signed_certificate(["10.1.2.3", "broker.example", "::1"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    key = serialization.load_pem_private_key(key_pem, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and isinstance(key.curve, ec.SECP256R1)
    assert key.public_key() == cert.public_key()  # the public point is the private key's
    cert.verify_directly_issued_by(cert)  # the signature verifies with the certificate's own key
    cert.public_key().verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(hashes.SHA256()))
    assert cert.version is x509.Version.v3 and cert.serial_number > 0
    assert cert.subject == cert.issuer == x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "pocketmq")])
    now = datetime.datetime.now(datetime.UTC)
    assert cert.not_valid_before_utc < now < cert.not_valid_after_utc
    assert cert.not_valid_after_utc - now > datetime.timedelta(days=3640)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address(a) for a in ("10.1.2.3", "::1",
                                                                                      "127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["broker.example", "localhost"]


def test_each_certificate_has_a_key_of_its_own():
    (key1, cert1), (key2, cert2) = self_signed_certificate(["127.0.0.1"]), self_signed_certificate(["127.0.0.1"])
    assert key1 != key2 and cert1 != cert2
    assert (x509.load_pem_x509_certificate(cert1).serial_number
            != x509.load_pem_x509_certificate(cert2).serial_number)


def test_openssl_serves_tls_with_it_and_a_client_trusting_it_verifies_the_host(tmp_path):
    key_pem, cert_pem = self_signed_certificate(["127.0.0.1"])
    (tmp_path / "key.pem").write_bytes(key_pem)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_ctx = ssl.create_default_context(cadata=cert_pem.decode())
    hosts = ["127.0.0.1", "localhost", "elsewhere.example"]
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)

        def serve() -> None:
            for _ in hosts:
                conn, _ = listener.accept()
                try:
                    with server_ctx.wrap_socket(conn, server_side=True) as tls:
                        tls.sendall(tls.recv(5).upper())
                except (ssl.SSLError, OSError):  # (the client that refuses the certificate)
                    pass

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        for host in hosts[:2]:  # both names the certificate carries by default
            with socket.create_connection(listener.getsockname(), timeout=10) as raw, \
                    client_ctx.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(b"hello")
                assert tls.recv(5) == b"HELLO"
        with socket.create_connection(listener.getsockname(), timeout=10) as raw, \
                pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
            client_ctx.wrap_socket(raw, server_hostname=hosts[2])
        thread.join(10)


def test_the_curve_arithmetic_meets_its_definition():
    assert ecdsa_p256.on_curve(ecdsa_p256.G)
    assert ecdsa_p256.multiply(ecdsa_p256.N) is None  # G's order
    assert ecdsa_p256.multiply(ecdsa_p256.N + 1) == ecdsa_p256.G
    d = ecdsa_p256.generate_private_key()
    point = ecdsa_p256.public_key(d)
    assert ecdsa_p256.on_curve(point)
    expected = ec.derive_private_key(d, ec.SECP256R1()).public_key().public_numbers()
    assert point == (expected.x, expected.y)


def test_a_given_certificate_is_used_as_given_and_needs_both_files(tmp_path):
    (tmp_path / "k.pem").write_bytes(b"KEY")
    (tmp_path / "c.pem").write_bytes(b"CERT")
    assert load_or_make(str(tmp_path / "c.pem"), str(tmp_path / "k.pem"), ["h"]) == (b"KEY", b"CERT")
    with pytest.raises(ValueError, match="both"):
        load_or_make(str(tmp_path / "c.pem"), None, ["h"])
