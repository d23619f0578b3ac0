"""Q4I8 (flag Q8BUF_Q4, q8_* tensors): Q4_0 values as int8 in the Q8_0 layout (spec/vqf.md §q4i8).

d and its f16 bits are those of Q4_0 (spec/vqf.md §quant-q4-0); each element stores (nibble - 8) in
[-8, +7] as int8 in a 34 B Q8_0 block, so decoding is the Q8_0 rule value = code · d. Never tiled
(spec/vqf.md §q4i8).
"""

from __future__ import annotations

import numpy as np

from weightfile.ref.codecs.vqf import q4_0, q8_0
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
from weightfile.spec.errors import Violation

NAME = "q4i8"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """The Q4_0 quantiser of `mode` (spec/vqf.md §quant-q4i8-g256), each code stored as int8 (nibble
    - 8)."""
    require_mode(NAME, mode)
    bits = input_bits(NAME, values, rows, cols)
    require_finite(NAME, bits, cols)
    quantize = q4_0.QUANTIZERS[mode]
    out = []
    for block in blocks_of([f32_of_bits(b) for b in bits], QK):
        d, nibbles = quantize(block)
        out.append(q8_0.pack_block(d, [q - 8 for q in nibbles]))
    return b"".join(out)


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] in [-8, 7] and scales uint16, as for Q8_0."""
    blocks = q8_0.read_blocks(require_payload(NAME, payload, rows, cols))
    return q8_0.words_of_blocks(blocks, rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols]: value = code · d (spec/vqf.md §q4i8 via spec/vqf.md §q8-0)."""
    blocks = q8_0.read_blocks(require_payload(NAME, payload, rows, cols))
    return q8_0.values_of_blocks(blocks, rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite scale, codes in [-8, 7], zero-block rule, zero padding."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    n = rows * cols
    for i, (d, codes) in enumerate(q8_0.read_blocks(bytes(payload))):
        offset = i * q8_0.BLOCK_BYTES
        found += q8_0.scale_violations(NAME, d, offset, signed=True)
        found += q4_0.zero_block_violations(NAME, d, codes, 0, offset)
        found += q8_0.code_violations(NAME, codes, offset, -8, 7, min(QK, n - i * QK))
    return found
