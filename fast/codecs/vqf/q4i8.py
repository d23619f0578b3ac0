"""Vectorised Q4I8 (spec/vqf.md §q4i8); must equal ref/codecs/vqf/q4i8.py bit for bit."""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf import _native, q4_0, q8_0
from weightfile.fast.codecs.vqf.common import (
    chunks,
    in_ref_order,
    input_array,
    padded_blocks,
    require_finite,
    require_payload,
)
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.errors import Violation

NAME = "q4i8"


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """The Q4_0 quantiser of `mode`, each code stored as int8 (nibble - 8) in a Q8_0 block."""
    require_mode(NAME, mode)
    x = input_array(NAME, values, rows, cols)
    blocks = padded_blocks(x, QK)
    quantize = q4_0.QUANTIZERS[mode]
    out = np.empty((blocks.shape[0], q8_0.BLOCK_BYTES), dtype=np.uint8)
    native = _native.lib()
    if native is not None:
        if native.vqf_q4_0_quantize(blocks, blocks.shape[0], _native.MODES[mode], 1, out):
            require_finite(NAME, x, cols)  # the kernel saw NaN/Inf: raise ref's error
        return out.tobytes()
    require_finite(NAME, x, cols)
    with np.errstate(all="ignore"):
        for s in chunks(blocks.shape[0]):
            d, q = quantize(blocks[s])
            q8_0.store(out[s], d, q.astype(np.int8) - np.int8(8))
    return out.tobytes()


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] in [-8, 7] and scales uint16, as for Q8_0."""
    return q8_0.words(*q8_0.split(require_payload(NAME, payload, rows, cols)), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols]: value = code · d."""
    return q8_0.payload_values(require_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; per block: finite scale, zero-block rule, codes in [-8, 7], zero padding codes."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    d, codes = q8_0.split(bytes(payload))
    return in_ref_order(
        q8_0.scale_found(NAME, d, signed=True)
        + q4_0.zero_block_found(NAME, d, codes, 0, 1, q8_0.BLOCK_BYTES)
        + q8_0.code_found(NAME, codes, -8, 7, rows * cols, 2)
    )
