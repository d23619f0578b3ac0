"""The container's object-size check and the codecs' payloads agree on every pair
(spec/ninfer3.md §objects, §layouts).

An object's `bytes` must equal encoded_size(layout, format, shape) (rule ninfer3.object.bytes);
a codec's payload is whatever its packer writes. Both now read one geometry, and these
properties keep it that way: the length of a payload the fast codec actually built is exactly
what the reader's deferred check accepts and what the writer reserves.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import shapes, valid_words
from strategies.ninfer3 import raises_rule

from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.objects import check_tensor
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec, plan_objects
from weightfile.ref.ninfer3.records import ObjectEntry
from weightfile.spec.codecs.ninfer3.registry import CODECS
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.registry import ENCODINGS, LAYOUTS

TENSOR_PAIRS = [(fmt, layout.name) for layout in LAYOUTS.values() for fmt in layout.accepts]


def test_container_and_codecs_register_the_same_pairs() -> None:
    """Every tensor pair the container accepts has a codec and vice versa; resources likewise."""
    assert set(TENSOR_PAIRS) == {pair for pair in CODECS if pair[0] is not None}
    assert {(None, name) for name in ENCODINGS} == {pair for pair in CODECS if pair[0] is None}


@st.composite
def spread_shapes(draw: st.DrawFn, layout: str) -> tuple[int, ...]:
    """The codec tests' small shapes, or [N, K] wide enough to cross several 256-byte planes."""
    if layout in ("row_split_k128_v1", "row_scale_v1") and draw(st.booleans()):
        return (draw(st.integers(1, 40)), draw(st.integers(1, 300)))
    return draw(shapes(layout))


@st.composite
def encoded_payloads(draw: st.DrawFn, fmt: str, layout: str) -> tuple[tuple[int, ...], bytes]:
    """A shape and a payload the fast codec built: from values by the canonical encoder where
    there is one (q4..q8, fp8 row, bf16/fp32/int32), else from imported words (t2, nvfp4).

    Values are eighths in [-250, 250] from a seeded generator: every encoder takes them (no
    scale overflow, no vanishing row scale), and the size, not the numerics, is under test.
    """
    shape = draw(spread_shapes(layout))
    codec = get_codec(fmt, layout)
    if codec.encoder is not None and draw(st.booleans()):
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        eighths = rng.integers(-2000, 2000, size=shape, endpoint=True)
        # np.asarray keeps rank 0 an ndarray (arithmetic on a 0-d array yields a scalar).
        if fmt == "int32":
            values = np.asarray(eighths, dtype=np.int32)
        else:
            values = np.asarray(eighths / 8, dtype=np.float32)
        return shape, codec.encode(values, shape)
    return shape, codec.encode_words(draw(valid_words(fmt, layout, shape)), shape)


def _tensor(fmt: str, layout: str, shape: tuple[int, ...], size: int) -> ObjectEntry:
    return ObjectEntry(0, "w", "tensor", 0, size, shape=shape, format=fmt, layout=layout)


@pytest.mark.parametrize(("fmt", "layout"), TENSOR_PAIRS)
@given(data=st.data())
def test_object_bytes_check_accepts_exactly_the_codec_payload_length(
    fmt: str, layout: str, data: st.DataObject
) -> None:
    """`bytes = len(payload)` passes ninfer3.object.bytes, one more or less fails it, and the
    writer reserves exactly `len(payload)` for the tensor."""
    shape, payload = data.draw(encoded_payloads(fmt, layout))
    check_tensor(_tensor(fmt, layout, shape, len(payload)))
    for wrong in (len(payload) - 1, len(payload) + 1):
        with raises_rule(InvalidError, "ninfer3.object.bytes"):
            check_tensor(_tensor(fmt, layout, shape, wrong))
    [placed] = plan_objects([TensorSpec("w", shape, fmt, layout)])
    assert placed["bytes"] == len(payload)


@given(data=st.binary(min_size=1, max_size=300))
def test_resource_bytes_are_the_raw_payload_length(data: bytes) -> None:
    """raw_bytes_v1 (spec/ninfer3.md §raw-bytes): the writer reserves the payload's length, which is
    the data's."""
    values = np.frombuffer(data, dtype=np.uint8).copy()
    payload = get_codec(None, "raw_bytes_v1").encode(values, values.shape)
    [placed] = plan_objects([ResourceSpec("r", len(data))])
    assert placed["bytes"] == len(payload) == len(data)


@pytest.mark.parametrize(
    ("fmt", "layout", "shape"),
    [
        ("bf16", "contiguous_le_v1", (0, 4)),
        ("bf16", "contiguous_le_v1", (1,) * 17),
        ("q4_g64_fp16", "row_split_k128_v1", (0, 64)),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1", (2, 0)),
    ],
)
def test_writer_refuses_a_shape_outside_4_1_when_planning(
    fmt: str, layout: str, shape: tuple[int, ...]
) -> None:
    """The writer applies the codecs' spec/ninfer3.md §layout-registry rule (positive dims, rank
    0..16) before placing."""
    with raises_rule(InvalidError, "ninfer3.object.shape"):
        plan_objects([TensorSpec("w", shape, fmt, layout)])


def test_writer_places_the_nearest_legal_shape() -> None:
    """Guard for the refusal above: [1, 4] bf16 is 8 bytes at offset 0."""
    [placed] = plan_objects([TensorSpec("w", (1, 4), "bf16", "contiguous_le_v1")])
    assert (placed["offset"], placed["bytes"]) == (0, 8)
