"""SM2 signatures on sm2p256v1 with the VQF signer ID (spec/vqf.md §4.3).

Point arithmetic is `gmssl`'s (`CryptSM2`); what the format fixes is done here: Z_A over ENTL ‖ ID
‖ a ‖ b ‖ G ‖ P with ID "vllm-shs-vqf", e = SM3(Z_A ‖ D), the nonce k drawn from `secrets` (gmssl
takes k from the caller), and the range checks gmssl's `verify` leaves out (1 ≤ r, s ≤ n−1; a
public key must be a point of the curve).
"""

from __future__ import annotations

import secrets

from gmssl.sm2 import CryptSM2, default_ecc_table

from .sm import sm3

SIGNER_ID = b"vllm-shs-vqf"
P = int(default_ecc_table["p"], 16)
A = int(default_ecc_table["a"], 16)
B = int(default_ecc_table["b"], 16)
N = int(default_ecc_table["n"], 16)
G = bytes.fromhex(default_ecc_table["g"])  # x_G ‖ y_G, 32 bytes each


def _be32(value: int) -> bytes:
    return value.to_bytes(32, "big")


def z_a(pub: bytes, signer_id: bytes = SIGNER_ID) -> bytes:
    """Z = SM3(ENTL ‖ ID ‖ a ‖ b ‖ x_G ‖ y_G ‖ x_P ‖ y_P) (spec/vqf.md §4.3 step 2)."""
    entl = (8 * len(signer_id)).to_bytes(2, "big")
    return sm3(entl + signer_id + _be32(A) + _be32(B) + G + pub)


def message_hash(pub: bytes, digest: bytes) -> bytes:
    """e = SM3(Z_A ‖ D): the 32-byte D is the signed message (spec/vqf.md §4.3 step 3)."""
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
    ctx = CryptSM2(private_key=private.hex(), public_key="")
    return bytes.fromhex(ctx._kg(d, default_ecc_table["g"]))


def generate_private_key() -> bytes:
    """d uniform in [1, n−2] from the operating system's CSPRNG."""
    return _be32(1 + secrets.randbelow(N - 2))


def sign(private: bytes, digest: bytes, *, k: int | None = None) -> tuple[bytes, bytes, bytes]:
    """(pub, r, s) signing the 32-byte D with ID "vllm-shs-vqf" (spec/vqf.md §4.3 steps 1–5).

    The nonce k comes from the CSPRNG. A fixed `k` (1 ≤ k ≤ n−1) exists only so that the
    conformance corpus regenerates byte for byte; a k used twice with one key reveals the key,
    so nothing that signs real files passes it.
    """
    pub = public_key(private)
    e = message_hash(pub, digest)
    ctx = CryptSM2(private_key=private.hex(), public_key=pub.hex())
    if k is not None:
        if not 1 <= k <= N - 1:
            raise ValueError("an SM2 nonce lies in [1, n-1]")
        rs = ctx.sign(e, f"{k:064x}")
        if rs is None:  # r = 0, r + k = n or s = 0: this k cannot sign this digest
            raise ValueError("this fixed nonce gives a degenerate signature; choose another")
        return pub, bytes.fromhex(rs[:64]), bytes.fromhex(rs[64:])
    while True:  # gmssl returns None when r = 0, r + k = n or s = 0: draw k again
        nonce = 1 + secrets.randbelow(N - 1)
        rs = ctx.sign(e, f"{nonce:064x}")
        if rs is not None:
            return pub, bytes.fromhex(rs[:64]), bytes.fromhex(rs[64:])


def verify(pub: bytes, digest: bytes, r: bytes, s: bytes) -> bool:
    """GM/T 0003 verification of (r, s) over D under `pub` with the fixed ID (spec/vqf.md §4.3)."""
    ri, si = int.from_bytes(r, "big"), int.from_bytes(s, "big")
    if not (1 <= ri <= N - 1 and 1 <= si <= N - 1) or not on_curve(pub):
        return False
    if (ri + si) % N == 0:
        return False
    ctx = CryptSM2(private_key="", public_key=pub.hex())
    try:
        return bool(ctx.verify(r.hex() + s.hex(), message_hash(pub, digest)))
    except (TypeError, ValueError):  # gmssl's point sum degenerates (s·G = -t·P): not a signature
        return False
