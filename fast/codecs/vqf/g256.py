"""Vectorised G256 (spec/vqf.md §g256); must equal ref/codecs/vqf/g256.py bit for bit."""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf import _native, q8_0
from weightfile.fast.codecs.vqf.common import (
    CHUNK_BLOCKS,
    Found,
    chunks,
    each,
    in_ref_order,
    input_array,
    require_finite,
    require_payload,
)
from weightfile.ref.codecs.vqf.common import require_mode, validate_length
from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.registry import G256_GROUP, n_blocks, rule
from weightfile.spec.errors import Violation

NAME = "g256"
PER_GROUP = G256_GROUP // QK


def encode(values: object, rows: int, cols: int, *, mode: str = "kestrel") -> bytes:
    """Full 256-groups quantised with one Q8_0 scale each; unwritten tail blocks are zero."""
    require_mode(NAME, mode)
    x = input_array(NAME, values, rows, cols)
    groups = x[: x.size // G256_GROUP * G256_GROUP].reshape(-1, G256_GROUP)
    out = np.zeros((n_blocks(NAME, rows, cols), q8_0.BLOCK_BYTES), dtype=np.uint8)
    quantize = q8_0.QUANTIZERS[mode]
    native = _native.lib()
    if native is not None:
        # The kernel sees the full groups only; the unwritten tail is checked here.
        seen = native.vqf_q8_0_quantize(
            groups, groups.shape[0], G256_GROUP, _native.MODES[mode], out
        )
        if seen or not np.isfinite(x[groups.size :]).all():
            require_finite(NAME, x, cols)  # raise ref's error
        return out.tobytes()
    require_finite(NAME, x, cols)
    with np.errstate(all="ignore"):
        for s in chunks(groups.shape[0], CHUNK_BLOCKS // PER_GROUP):
            d, codes = quantize(groups[s])
            blocks = slice(s.start * PER_GROUP, s.stop * PER_GROUP)
            q8_0.store(out[blocks], np.repeat(d, PER_GROUP), codes.reshape(-1, QK))
    return out.tobytes()


def decode_words(payload: bytes, rows: int, cols: int) -> dict[str, np.ndarray]:
    """Codes int8 [rows, cols] and the per-block scales."""
    return q8_0.words(*q8_0.split(require_payload(NAME, payload, rows, cols)), rows, cols)


def decode(payload: bytes, rows: int, cols: int) -> np.ndarray:
    """Float32 [rows, cols]: value = code · d per block."""
    return q8_0.payload_values(require_payload(NAME, payload, rows, cols), rows, cols)


def validate(payload: bytes, rows: int, cols: int) -> list[Violation]:
    """Length; Q8_0 scale/code rules, one scale per 8 blocks, zero tail blocks (ref order)."""
    found = validate_length(NAME, payload, rows, cols)
    if found:
        return found
    payload = bytes(payload)
    d, codes = q8_0.split(payload)
    full = rows * cols // G256_GROUP * PER_GROUP
    raw = np.frombuffer(payload, dtype=np.uint8).reshape(-1, q8_0.BLOCK_BYTES)
    out: list[Found] = []
    for i in range(full, d.size):
        nonzero = np.flatnonzero(raw[i])
        if nonzero.size:
            v = Violation(
                rule(NAME, "unwritten_tail"),
                "block past the last full 256-group is not zero",
                i * q8_0.BLOCK_BYTES + int(nonzero[0]),
            )
            out.append(Found(i, 0, 0, v))
    head_d, head_codes = d[:full], codes[:full]
    out += q8_0.scale_found(NAME, head_d, signed=False)
    leader = np.repeat(head_d[::PER_GROUP], PER_GROUP)
    for (i,) in each(head_d != leader):
        v = Violation(
            rule(NAME, "scale_shared"),
            "scale differs from the first block of its 256-group",
            i * q8_0.BLOCK_BYTES,
            "d",
        )
        out.append(Found(i, 1, 0, v))
    out += q8_0.code_found(NAME, head_codes, -127, 127, head_codes.size, 2)
    return in_ref_order(out)
