"""SM2 signatures on sm2p256v1 with the VQF signer ID (spec/vqf.md §sm2-signature).

Textbook GM/T 0003: affine point arithmetic over F_p with Python integers, Z_A over ENTL ‖ ID ‖
a ‖ b ‖ G ‖ P with ID "vllm-shs-vqf", e = SM3(Z_A ‖ D), the nonce k drawn from `secrets`, and
every range check (1 ≤ r, s ≤ n−1; t = r + s ≠ 0 mod n; a public key must be a point of the
curve). The arithmetic is ours because gmssl 3.2.2, used before, rejects every valid signature of
some keys (d = 11 is one: tests/ref/crypto/test_known_answers.py); OpenSSL checks ours both
ways in the same tests. Not constant time: this is the reference, not a signing service.
"""

from __future__ import annotations

import secrets

from .sm import sm3

SIGNER_ID = b"vllm-shs-vqf"
#: The curve sm2p256v1 (GM/T 0003.5, spec/vqf.md §sm2-signature): y² = x³ + a·x + b over F_p, order
#: n.
P = 0xFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFF
A = 0xFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF00000000FFFFFFFFFFFFFFFC
B = 0x28E9FA9E9D9F5E344D5A9E4BCF6509A7F39789F515AB8F92DDBCBD414D940E93
N = 0xFFFFFFFEFFFFFFFFFFFFFFFFFFFFFFFF7203DF6B21C6052B53BBF40939D54123
GX = 0x32C4AE2C1F1981195F9904466A39C9948FE30BBFF2660BE1715A4589334C74C7
GY = 0xBC3736A2F4F6779C59BDCEE36B692153D0A9877CC62A474002DF32E52139F0A0
G = GX.to_bytes(32, "big") + GY.to_bytes(32, "big")  # x_G ‖ y_G

Point = tuple[int, int] | None  # None is the point at infinity O


def _be32(value: int) -> bytes:
    return value.to_bytes(32, "big")


def point_add(p1: Point, p2: Point) -> Point:
    """p1 + p2 in affine coordinates (the chord-and-tangent rule)."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2 and (y1 + y2) % P == 0:
        return None  # p2 = −p1
    if p1 == p2:
        slope = (3 * x1 * x1 + A) * pow(2 * y1, -1, P) % P
    else:
        slope = (y2 - y1) * pow(x2 - x1, -1, P) % P
    x3 = (slope * slope - x1 - x2) % P
    return x3, (slope * (x1 - x3) - y1) % P


def scalar_mult(k: int, point: Point) -> Point:
    """k·point by double-and-add over the bits of k, most significant first."""
    result: Point = None
    for bit in bin(k)[2:] if k > 0 else "":
        result = point_add(result, result)
        if bit == "1":
            result = point_add(result, point)
    return result


def _point(xy: bytes) -> tuple[int, int]:
    return int.from_bytes(xy[:32], "big"), int.from_bytes(xy[32:], "big")


def z_a(pub: bytes, signer_id: bytes = SIGNER_ID) -> bytes:
    """Z = SM3(ENTL ‖ ID ‖ a ‖ b ‖ x_G ‖ y_G ‖ x_P ‖ y_P) (spec/vqf.md §sm2-signature step 2)."""
    entl = (8 * len(signer_id)).to_bytes(2, "big")
    return sm3(entl + signer_id + _be32(A) + _be32(B) + G + pub)


def message_hash(pub: bytes, digest: bytes) -> bytes:
    """e = SM3(Z_A ‖ D): the 32-byte D is the signed message (spec/vqf.md §sm2-signature step 3)."""
    return sm3(z_a(pub) + digest)


def on_curve(pub: bytes) -> bool:
    """x ‖ y (64 bytes) is a point of sm2p256v1 with coordinates below p."""
    if len(pub) != 64:
        return False
    x, y = int.from_bytes(pub[:32], "big"), int.from_bytes(pub[32:], "big")
    return x < P and y < P and (y * y - (x * x * x + A * x + B)) % P == 0


def public_key(private: bytes) -> bytes:
    """P = d·G as x ‖ y; d must lie in [1, n−2] (GM/T 0003 key pairs)."""
    d = int.from_bytes(private, "big")
    if len(private) != 32 or not 1 <= d <= N - 2:
        raise ValueError("an SM2 private key is 32 bytes, 1 <= d <= n-2")
    q = scalar_mult(d, (GX, GY))
    assert q is not None  # 1 ≤ d < n: d·G is never O
    return _be32(q[0]) + _be32(q[1])


def generate_private_key() -> bytes:
    """d uniform in [1, n−2] from the operating system's CSPRNG."""
    return _be32(1 + secrets.randbelow(N - 2))


def sign(private: bytes, digest: bytes, *, k: int | None = None) -> tuple[bytes, bytes, bytes]:
    """(pub, r, s) signing the 32-byte D with ID "vllm-shs-vqf" (spec/vqf.md §sm2-signature steps
    1–5).

    The nonce k comes from the CSPRNG. A fixed `k` (1 ≤ k ≤ n−1) exists only so that the
    conformance corpus regenerates byte for byte; a k used twice with one key reveals the key,
    so nothing that signs real files passes it.
    """
    pub = public_key(private)
    d = int.from_bytes(private, "big")
    e = int.from_bytes(message_hash(pub, digest), "big")
    if k is not None:
        if not 1 <= k <= N - 1:
            raise ValueError("an SM2 nonce lies in [1, n-1]")
        rs = _sign_with(d, e, k)
        if rs is None:
            raise ValueError("this fixed nonce gives a degenerate signature; choose another")
        return pub, *rs
    while True:  # r = 0, r + k = n or s = 0: draw k again (GM/T 0003.2, section 6.1, steps A3–A6)
        rs = _sign_with(d, e, 1 + secrets.randbelow(N - 1))
        if rs is not None:
            return pub, *rs


def _sign_with(d: int, e: int, k: int) -> tuple[bytes, bytes] | None:
    """r = (e + x₁) mod n with (x₁, y₁) = k·G; s = (1 + d)⁻¹·(k − r·d) mod n; None if degenerate."""
    kg = scalar_mult(k, (GX, GY))
    assert kg is not None
    r = (e + kg[0]) % N
    if r == 0 or r + k == N:
        return None
    s = pow(1 + d, -1, N) * (k - r * d) % N
    if s == 0:
        return None
    return _be32(r), _be32(s)


def verify(pub: bytes, digest: bytes, r: bytes, s: bytes) -> bool:
    """GM/T 0003 verification of (r, s) over D under `pub` with the fixed ID (spec/vqf.md
    §sm2-signature)."""
    ri, si = int.from_bytes(r, "big"), int.from_bytes(s, "big")
    if not (1 <= ri <= N - 1 and 1 <= si <= N - 1) or not on_curve(pub):
        return False
    t = (ri + si) % N
    if t == 0:
        return False
    e = int.from_bytes(message_hash(pub, digest), "big")
    sum_point = point_add(scalar_mult(si, (GX, GY)), scalar_mult(t, _point(pub)))
    if sum_point is None:  # s·G = −t·P: no x₁, not a signature
        return False
    return (e + sum_point[0]) % N == ri
