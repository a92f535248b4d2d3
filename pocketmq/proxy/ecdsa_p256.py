"""ECDSA on NIST P-256 (secp256r1, FIPS 186-4) with SHA-256, just enough for the endpoint's self-signed
certificate: a key pair and one signature, in plain Python integers.

Python's own ``ssl`` makes no keys and no certificates, and ``cryptography`` costs more to import than the rest of
the endpoint: this is two scalar multiplications. The arithmetic is not constant-time; it runs once, at
start, before the endpoint accepts a connection, so no peer can time it.
"""

from __future__ import annotations

import hashlib
import secrets

# The curve y^2 = x^3 - 3x + B over GF(P), its base point G and G's order N (FIPS 186-4, D.1.2.3).
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
A = P - 3
B = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
G = (0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
     0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5)
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551

Point = tuple[int, int] | None  # affine (x, y); None: the point at infinity
_INFINITY = (1, 1, 0)  # in Jacobian coordinates (X, Y, Z) standing for (X / Z^2, Y / Z^3): no inversion a step


def on_curve(point: Point) -> bool:
    if point is None:
        return True
    x, y = point
    return (y * y - (x * x * x + A * x + B)) % P == 0


def _double(X: int, Y: int, Z: int) -> tuple[int, int, int]:
    """2(X, Y, Z), for a = -3 (the "dbl-2001-b" formulas)."""
    if Z == 0 or Y == 0:
        return _INFINITY
    delta = Z * Z % P
    gamma = Y * Y % P
    beta = X * gamma % P
    alpha = 3 * (X - delta) * (X + delta) % P
    X3 = (alpha * alpha - 8 * beta) % P
    Z3 = ((Y + Z) * (Y + Z) - gamma - delta) % P
    return X3, (alpha * (4 * beta - X3) - 8 * gamma * gamma) % P, Z3


def _add_affine(X1: int, Y1: int, Z1: int, x2: int, y2: int) -> tuple[int, int, int]:
    """(X1, Y1, Z1) + (x2, y2, 1) (the "madd-2007-bl" formulas)."""
    if Z1 == 0:
        return x2, y2, 1
    Z1Z1 = Z1 * Z1 % P
    H = (x2 * Z1Z1 - X1) % P
    r = 2 * (y2 * Z1 * Z1Z1 - Y1) % P
    if H == 0:
        return _double(X1, Y1, Z1) if r == 0 else _INFINITY
    HH = H * H % P
    I = 4 * HH % P  # noqa: E741 (the formulas' name)
    J = H * I % P
    V = X1 * I % P
    X3 = (r * r - J - 2 * V) % P
    return X3, (r * (V - X3) - 2 * Y1 * J) % P, ((Z1 + H) * (Z1 + H) - Z1Z1 - HH) % P


def multiply(k: int, point: Point = G) -> Point:
    """k * point, by doubling and adding from the top bit."""
    if point is None:
        return None
    x, y = point
    X, Y, Z = _INFINITY
    for bit in bin(k)[2:]:
        X, Y, Z = _double(X, Y, Z)
        if bit == "1":
            X, Y, Z = _add_affine(X, Y, Z, x, y)
    if Z == 0:
        return None
    z_inv = pow(Z, -1, P)
    z_inv2 = z_inv * z_inv % P
    return X * z_inv2 % P, Y * z_inv2 * z_inv % P


def generate_private_key() -> int:
    return secrets.randbelow(N - 1) + 1


def public_key(private_key: int) -> tuple[int, int]:
    point = multiply(private_key)
    assert point is not None
    return point


def encode_point(point: tuple[int, int]) -> bytes:
    """SEC 1's uncompressed form, as certificates carry a public key: 04 || X || Y."""
    return b"\x04" + point[0].to_bytes(32, "big") + point[1].to_bytes(32, "big")


def sign(private_key: int, message: bytes) -> tuple[int, int]:
    """(r, s) of ECDSA with SHA-256 over ``message``, with a fresh random nonce."""
    e = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = generate_private_key()
        point = multiply(k)
        assert point is not None
        r = point[0] % N
        s = pow(k, -1, N) * (e + r * private_key) % N
        if r and s:
            return r, s

