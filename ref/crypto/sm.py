"""SM3, HMAC-SM3 and SM4-CTR through `cryptography` (spec/vqf.md §protected, §sm4-hmac).

The CTR rule of spec/vqf.md §sm4-hmac — keystream block k is SM4(key, iv + k), the counter read as a
128-bit big-endian number that wraps, a short last block using the first bytes of the current
block's keystream without moving the counter — is exactly OpenSSL's CTR mode, so one OpenSSL context
over a byte stream implements it. `counter_add` states the increment in Python so that the code
which restarts the stream at a block index (the engine writer's per-tensor kind, spec/vqf.md
§decisions item 7) can say which counter it restarts from.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

BLOCK = 16  # SM4 block and counter width in bytes
DIGEST = 32  # SM3 output in bytes


def sm3(data: bytes | bytearray | memoryview) -> bytes:
    """SM3 (GB/T 32905) of `data`."""
    h = hashes.Hash(hashes.SM3())
    h.update(bytes(data))
    return h.finalize()


def sm3_hasher() -> hashes.Hash:
    """An incremental SM3 context: `.update(bytes)`, then `.finalize()`."""
    return hashes.Hash(hashes.SM3())


def hmac_sm3(key: bytes) -> hmac.HMAC:
    """An incremental HMAC-SM3 context (RFC 2104 over SM3: 64-byte block, 32-byte tag)."""
    return hmac.HMAC(key, hashes.SM3())


def counter_add(counter: bytes, blocks: int) -> bytes:
    """counter + blocks as a 128-bit big-endian integer, mod 2**128 (spec/vqf.md §sm4-hmac)."""
    value = (int.from_bytes(counter, "big") + blocks) % (1 << (8 * BLOCK))
    return value.to_bytes(BLOCK, "big")


def sm4_ctr(key: bytes, counter: bytes) -> object:
    """An SM4-CTR context starting at `counter`: `.update(data)` XORs data with the keystream."""
    return Cipher(algorithms.SM4(key), modes.CTR(counter)).encryptor()


def sm4_ctr_at(key: bytes, iv: bytes, position: int, data: bytes | memoryview) -> bytes:
    """XOR `data` with the keystream that starts `position` bytes into the stream from `iv`.

    Used for short ranges (the pads) without running the stream up to them: the block holding
    byte `position` is block position // 16 of the stream, and position % 16 keystream bytes of
    it are skipped.
    """
    skip = position % BLOCK
    ctx = sm4_ctr(key, counter_add(iv, position // BLOCK))
    return ctx.update(bytes(skip) + bytes(data))[skip:]  # type: ignore[attr-defined]
