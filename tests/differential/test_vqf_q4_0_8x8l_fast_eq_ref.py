"""fast/codecs/vqf/q4_0_8x8l.py equals ref/codecs/vqf/q4_0_8x8l.py bit for bit.

Encode in every mode on any finite float32 input (NaN/Inf are refused identically), decode and
decode_words on arbitrary bytes, validate on mutated and arbitrary payloads, and the same typed
error (class, rule, offset, path) for bad shapes and lengths."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_vqf import flipped, matrices, payloads, same_outcome, shapes

from weightfile.fast.codecs.vqf import q4_0_8x8l as fast
from weightfile.ref.codecs.vqf import q4_0_8x8l as ref
from weightfile.spec.codecs.vqf.registry import CODECS

CODEC = CODECS["q4_0_8x8l"]
BLOCK = CODEC.tiling.group_block_bytes if CODEC.tiling else CODEC.block_bytes


@given(matrices("q4_0_8x8l"), st.sampled_from(CODEC.modes))
def test_encode_fast_equals_ref(x: np.ndarray, mode: str) -> None:
    same_outcome(
        lambda: fast.encode(x, *x.shape, mode=mode),
        lambda: ref.encode(x, *x.shape, mode=mode),
        BLOCK,
    )


@given(payloads("q4_0_8x8l"))
def test_decode_fast_equals_ref_on_any_bytes(case: tuple[bytes, int, int]) -> None:
    payload, rows, cols = case
    same_outcome(
        lambda: fast.decode(payload, rows, cols), lambda: ref.decode(payload, rows, cols), BLOCK
    )
    same_outcome(
        lambda: fast.decode_words(payload, rows, cols),
        lambda: ref.decode_words(payload, rows, cols),
        BLOCK,
    )


@given(matrices("q4_0_8x8l"), st.data())
def test_validate_fast_equals_ref_on_mutated_payloads(x: np.ndarray, data: st.DataObject) -> None:
    payload = data.draw(flipped(ref.encode(x, *x.shape)))
    same_outcome(
        lambda: fast.validate(payload, *x.shape), lambda: ref.validate(payload, *x.shape), BLOCK
    )


@given(payloads("q4_0_8x8l"))
def test_validate_fast_equals_ref_on_any_bytes(case: tuple[bytes, int, int]) -> None:
    payload, rows, cols = case
    same_outcome(
        lambda: fast.validate(payload, rows, cols), lambda: ref.validate(payload, rows, cols), BLOCK
    )


@given(shapes("q4_0_8x8l"), st.integers(-3, 3), st.integers(-2, 2), st.data())
def test_bad_shapes_and_lengths_fail_identically(
    shape: tuple[int, int], extra: int, drows: int, data: st.DataObject
) -> None:
    rows, cols = shape[0] + drows, shape[1]
    n = max(0, len(ref.encode(np.zeros(shape, np.float32), *shape)) + extra)
    payload = data.draw(st.binary(min_size=n, max_size=n))
    for call in ("decode", "decode_words", "validate"):
        same_outcome(
            lambda c=call: getattr(fast, c)(payload, rows, cols),
            lambda c=call: getattr(ref, c)(payload, rows, cols),
            BLOCK,
        )
    values = np.zeros(max(0, rows * cols + extra), np.float32)
    same_outcome(
        lambda: fast.encode(values, rows, cols), lambda: ref.encode(values, rows, cols), BLOCK
    )
