"""Header flag bits (spec/vqf.md §flags)."""

from __future__ import annotations

import enum
from typing import Final


class VQFFlag(enum.IntFlag):
    """Bits of the u32 at offset 8. Bits 10–31 are unused and written as 0."""

    Q8_8X8 = 0x001  #: text q8_* matrices are 8-row tiled (spec/vqf.md §q8-tiled)
    Q4_4X4 = 0x002  #: q4_* matrices are 4-row nibble-interleaved (spec/vqf.md §q4-0)
    X8 = 0x004  #: x8_* Q4_8X8L copies present (spec/vqf.md §q4-8x8l)
    Q8BUF_Q4 = 0x008  #: q8_* hold Q4 values pre-expanded to int8 (Q4I8, spec/vqf.md §q4i8)
    G256 = 0x010  #: q8_* use one scale per 256 elements (spec/vqf.md §g256)
    EMB_F16 = 0x020  #: token_embed stored as F16
    VISION = 0x040  #: the 27 v_* tensors are present
    ENC = 0x080  #: data region SM4-CTR encrypted, 32-byte HMAC-SM3 trailer (spec/vqf.md §sm4-hmac)
    SIGNED = 0x100  #: the sig block holds an SM2 signature (spec/vqf.md §sm2-signature)
    MOE = 0x200  #: qwen3_moe model


#: The bits that take part in the engine's layout-equality gate (spec/vqf.md §loader-chain step 10).
LAYOUT_MASK: Final = 0x1F
KNOWN_MASK: Final = 0x3FF


def flag_names(flags: int) -> list[str]:
    """Names of the set known bits, low bit first, then `bit<N>` for unknown ones."""
    names = [f.name for f in VQFFlag if flags & f.value and f.name]
    names += [f"bit{b}" for b in range(32) if flags & ~KNOWN_MASK & (1 << b)]
    return names
