"""G256 (flag G256, q8_* tensors): Q8_0 blocks whose scale is shared by 256 elements
(spec/vqf.md §g256).

Each run of 256 consecutive elements (8 blocks) is quantised with the Q8_0 rule of spec/vqf.md
§quant-q8-0 (or spec/vqf.md §f16-rne in "kestrel_legacy" mode) over all 256 values, and the same f16
written into all 8 blocks. When N is not a multiple of 256 the trailing blocks are never written and
stay zero (calloc'ed buffers), so the last N % 256 elements decode to 0.
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import q8_0
from weightfile.ref.codecs.vqf.common import (
    blocks_of,
    f32_of_bits,
    input_bits,
    require_finite,
    require_mode,
    require_payload,
    validate_length,
)
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import G256_GROUP, n_blocks, rule
from weightfile.spec.errors import Violation

NAME = "g256"
BLOCKS_PER_GROUP = G256_GROUP // QK  # 8


def quantize_group(xs: list[np.float32], mode: str) -> bytes:
    """One 256-element group: one Q8_0 quantisation, cut into 8 blocks that repeat its d."""
    d, codes = q8_0.QUANTIZERS[mode](xs)
    return b"".join(
        q8_0.pack_block(d, codes[k * QK : (k + 1) * QK]) for k in range(BLOCKS_PER_GROUP)
    )


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Full 256-groups quantised in order; the unwritten tail blocks are zero bytes."""
    require_mode(NAME, mode)
    bits = input_bits(NAME, values, rows, cols)
    require_finite(NAME, bits, cols)
    full = len(bits) // G256_GROUP * G256_GROUP
    xs = [f32_of_bits(b) for b in bits[:full]]
    written = b"".join(quantize_group(g, mode) for g in blocks_of(xs, G256_GROUP))
    tail_blocks = n_blocks(NAME, rows, cols) - full // QK
    return written + bytes(tail_blocks * q8_0.BLOCK_BYTES)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] and the per-block scales (each repeated over its 8 blocks)."""
    blocks = q8_0.read_blocks(require_payload(NAME, payload, rows, cols))
    return q8_0.words_of_blocks(blocks, rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols]: the Q8_0 rule value = code · d per block (spec/vqf.md §g256)."""
    blocks = q8_0.read_blocks(require_payload(NAME, payload, rows, cols))
    return q8_0.values_of_blocks(blocks, rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: Q8_0 scale/code rules, one scale per 8 blocks, zero tail blocks."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    payload = bytes(payload)
    full_blocks = rows * cols // G256_GROUP * BLOCKS_PER_GROUP
    blocks = q8_0.read_blocks(payload)
    for i, (d, codes) in enumerate(blocks):
        offset = i * q8_0.BLOCK_BYTES
        if i >= full_blocks:
            raw = payload[offset : offset + q8_0.BLOCK_BYTES]
            nonzero = next((k for k, b in enumerate(raw) if b), None)
            if nonzero is not None:
                found.append(
                    Violation(
                        rule(NAME, "unwritten_tail"),
                        "block past the last full 256-group is not zero",
                        offset + nonzero,
                    )
                )
            continue
        found += q8_0.scale_violations(NAME, d, offset, signed=False)
        if d != blocks[i - i % BLOCKS_PER_GROUP][0]:  # the group's first block sets its scale
            found.append(
                Violation(
                    rule(NAME, "scale_shared"),
                    "scale differs from the first block of its 256-group",
                    offset,
                    "d",
                )
            )
        found += q8_0.code_violations(NAME, codes, offset, -127, 127, QK)
    return found
