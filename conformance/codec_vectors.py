"""The input vectors of the codec cases: float32 values (and, for word-only formats, words).

Each vector is named for what it exercises. `special_floats` is for the float codecs (f32, f16,
bf16, fp32): signed zeros, subnormals, the binary16 and bfloat16 rounding ties and overflow
edges, infinities and NaNs with payloads. `special_blocks` is for the quantisers, 8 blocks of 32
lanes: seeded uniform values, exact ties at scale 1 (Q8 max 127, Q4 max −8), an all-zero block with
−0, a tiny block (scale rescue), a block at the binary16-scale extreme, and the worked vectors
of spec/ninfer3.md §grouped-absmax. All bit patterns are spelled out; nothing depends on the
platform.
"""

from __future__ import annotations

import numpy as np

from .seeded import uniform


def f32(*bits: int) -> list[float]:
    """float32 values from their bit patterns (NaN payloads survive as float32 arrays)."""
    return list(np.array(bits, dtype=np.uint32).view(np.float32))


def seeded(seed: int, count: int, scale: float = 1.0) -> np.ndarray:
    """`count` float32 values in [−2·scale, 2·scale) from the bit-exact source (seeded.py)."""
    return uniform(seed, count, 2.0 * scale)


def special_floats() -> np.ndarray:
    """64 float32 values at the edges of binary16, bfloat16 and binary32 (as bit patterns)."""
    bits = [
        0x00000000, 0x80000000,  # ±0
        0x3F800000, 0xBF800000,  # ±1
        0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,  # f32 subnormals, smallest normal
        0x7F7FFFFF, 0xFF7FFFFF,  # ±max f32
        0x7F800000, 0xFF800000,  # ±inf
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00001, 0x7FC12345,  # NaNs, payloads, sNaN
        0x477FE000, 0x477FEFFF, 0x477FF000, 0xC77FF000,  # f16 max 65504, below/at the tie 65520
        0x33800000, 0x33000000, 0x33400000, 0x33C00000,  # 2^-24, 2^-25 (tie), 1.5·2^-25, 3·2^-25
        0x38800000, 0x387FC000, 0x387FE000,  # 2^-14, the f16 subnormal/normal tie, above it
        0x358637BD,  # 1e-6 (spec/vqf.md §f16)
        0x3F808000, 0x3F818000, 0x3F80C000, 0x3F804000,  # bf16 ties (even, odd), above, below
        0x3F800001, 0x3F807FFF, 0x7F7F8000, 0x7F7FFFFF,  # bf16 round-up into inf
        0x3F801000, 0x3F803000, 0x3F802000,  # f16 ties at 1 (2^-11 half-ulp) even/odd
        0x40490FDB, 0xC02DF854, 0x3EAAAAAB, 0x42F6E979,  # pi, -e, 1/3, 123.456
    ]  # fmt: skip
    tail = seeded(5, 64 - len(bits), 100.0)
    return np.concatenate([np.array(f32(*bits), dtype=np.float32), tail])


def _block(values: list[float]) -> list[float]:
    return values + [0.0] * (32 - len(values))


def special_blocks() -> np.ndarray:
    """8 blocks of 32 lanes (256 values): shape them [8, 32] or [2, 128]."""
    halves = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5, 6.5, -6.5]
    blocks = [
        list(seeded(1, 32)),
        # Q8 scale 1: ties to even (spec/ninfer3.md §grouped-absmax table)
        _block([127.0, -127.0, 63.5, -63.5, *halves]),
        _block([-8.0, 7.0, *halves, -7.5]),  # Q4 scale 1 with a negative max
        # (spec/vqf.md §quantisation)
        _block([0.0, -0.0] * 16),  # all-zero, including -0
        _block([1e-9, -3e-10, 1e-45, -1e-45, 6e-8]),  # scale underflow: rescue to 0x0001
        _block([458528.0, -229264.0, 1e5, -1e5, 65504.0, 1.0]),  # q4 scale at f16 max 65504
        # spec/ninfer3.md §grouped-absmax: reciprocal-multiply gives exactly -2.5
        _block(f32(0x410D639C, 0xC04A0801)),
        _block([1.0, -0.5, 0.25]),  # spec/ninfer3.md §grouped-absmax: the first Q4 worked vector
    ]
    return np.array([v for b in blocks for v in b], dtype=np.float32)


def partial(seed: int, count: int) -> np.ndarray:
    """Seeded values with a different magnitude per 32-lane block (and a partial last block)."""
    out = seeded(seed, count)
    for i in range(0, count, 32):
        out[i : i + 32] *= np.float32(2.0 ** ((i // 32) % 9 - 4))
    return out
