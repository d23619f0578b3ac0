"""Every fast VQF codec equals the ref codec of the same registry name bit for bit.

One parametrised module for the twelve registry names (their properties are identical): encode
in every mode on any finite float32 input (NaN/Inf are refused identically), decode and
decode_words on arbitrary bytes, validate on mutated and arbitrary payloads, and the same typed
error (class, rule, offset, path) for bad shapes and lengths."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_vqf import flipped, matrices, payloads, same_outcome, shapes

from weightfile.fast.codecs.vqf import codec as fast_codec
from weightfile.ref.codecs.vqf import codec as ref_codec
from weightfile.spec.codecs.vqf.registry import CODECS

NAMES = sorted(CODECS)


def pair(name: str):
    """(fast codec, ref codec, block bytes for mismatch reports) of a registry name."""
    codec = CODECS[name]
    block = codec.tiling.group_block_bytes if codec.tiling else codec.block_bytes
    return fast_codec(name), ref_codec(name), block


parametrize = pytest.mark.parametrize("name", NAMES)


@parametrize
@given(data=st.data())
def test_encode_fast_equals_ref(name: str, data: st.DataObject) -> None:
    fast, ref, block = pair(name)
    x = data.draw(matrices(name))
    mode = data.draw(st.sampled_from(CODECS[name].modes))
    same_outcome(
        lambda: fast.encode(x, *x.shape, mode=mode),
        lambda: ref.encode(x, *x.shape, mode=mode),
        block,
    )


@parametrize
@given(data=st.data())
def test_decode_fast_equals_ref_on_any_bytes(name: str, data: st.DataObject) -> None:
    fast, ref, block = pair(name)
    payload, rows, cols = data.draw(payloads(name))
    same_outcome(
        lambda: fast.decode(payload, rows, cols), lambda: ref.decode(payload, rows, cols), block
    )
    same_outcome(
        lambda: fast.decode_words(payload, rows, cols),
        lambda: ref.decode_words(payload, rows, cols),
        block,
    )


@parametrize
@given(data=st.data())
def test_validate_fast_equals_ref_on_mutated_payloads(name: str, data: st.DataObject) -> None:
    fast, ref, block = pair(name)
    x = data.draw(matrices(name))
    payload = data.draw(flipped(ref.encode(x, *x.shape)))
    same_outcome(
        lambda: fast.validate(payload, *x.shape), lambda: ref.validate(payload, *x.shape), block
    )


@parametrize
@given(data=st.data())
def test_validate_fast_equals_ref_on_any_bytes(name: str, data: st.DataObject) -> None:
    fast, ref, block = pair(name)
    payload, rows, cols = data.draw(payloads(name))
    same_outcome(
        lambda: fast.validate(payload, rows, cols), lambda: ref.validate(payload, rows, cols), block
    )


@parametrize
@given(data=st.data())
def test_bad_shapes_and_lengths_fail_identically(name: str, data: st.DataObject) -> None:
    fast, ref, block = pair(name)
    shape = data.draw(shapes(name))
    extra, drows = data.draw(st.integers(-3, 3)), data.draw(st.integers(-2, 2))
    rows, cols = shape[0] + drows, shape[1]
    n = max(0, len(ref.encode(np.zeros(shape, np.float32), *shape)) + extra)
    payload = data.draw(st.binary(min_size=n, max_size=n))
    for call in ("decode", "decode_words", "validate"):
        same_outcome(
            lambda c=call: getattr(fast, c)(payload, rows, cols),
            lambda c=call: getattr(ref, c)(payload, rows, cols),
            block,
        )
    values = np.zeros(max(0, rows * cols + extra), np.float32)
    same_outcome(
        lambda: fast.encode(values, rows, cols), lambda: ref.encode(values, rows, cols), block
    )
