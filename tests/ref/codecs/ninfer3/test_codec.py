"""`get_codec` binds every registered pair and refuses the rest (spec/ninfer3.md §format-registry,
§layout-registry)."""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
from weightfile.spec.codecs.ninfer3.registry import CODECS
from weightfile.spec.errors import InvalidError


@pytest.mark.parametrize("pair", sorted(CODECS, key=str))
def test_every_pair_has_the_same_surface_in_both_engines(pair: tuple) -> None:
    """Same functions present in ref and fast; row views only where the layout defines them."""
    ref, fast = ref_get_codec(*pair), fast_get_codec(*pair)
    for name in ("encode", "encode_words", "decode", "decode_words", "validate"):
        assert callable(getattr(ref, name)) and callable(getattr(fast, name))
    assert (ref.row_view is None) == (fast.row_view is None) == (pair[1] != "row_split_k128_v1")
    assert (ref.row_slice is None) == (fast.row_slice is None)
    assert ref.encoder == fast.encoder == CODECS[pair].encoder


@pytest.mark.parametrize(
    "pair", [("q4_g64_fp16", "contiguous_le_v1"), ("bf16", "row_split_k128_v1"), ("fp16", "x")]
)
def test_unregistered_pairs_are_refused(pair: tuple) -> None:
    """Unknown names and unsupported pairs are errors (spec/ninfer3.md §layout-registry)."""
    for get_codec in (ref_get_codec, fast_get_codec):
        with pytest.raises(InvalidError) as e:
            get_codec(*pair)
        assert e.value.rule == "ninfer3.codec.unknown_pair"


def test_raw_bytes_round_trip_verbatim() -> None:
    """spec/ninfer3.md §raw-bytes: the payload is the resource bytes exactly."""
    codec = ref_get_codec(None, "raw_bytes_v1")
    data = np.frombuffer(b"tokenizer\x00json", dtype=np.uint8).copy()
    payload = codec.encode(data, data.shape)
    assert payload == b"tokenizer\x00json"
    assert codec.decode(payload, data.shape).tobytes() == payload


@pytest.mark.parametrize("get_codec", [ref_get_codec, fast_get_codec])
def test_payload_may_be_a_memoryview_and_dims_numpy_integers(get_codec) -> None:
    """A reader hands out memoryview/mmap slices and NumPy shapes; both are accepted."""
    codec = get_codec("q8_g32_fp16", "row_split_k128_v1")
    payload = codec.encode(np.full((2, 40), 127.0, np.float32), (2, 40))  # scale 1.0
    shape = (np.int64(2), np.uint32(40))
    assert codec.decode(memoryview(payload), shape).tolist() == [[127.0] * 40] * 2
    assert codec.validate(memoryview(payload), shape) == []


@pytest.mark.parametrize("get_codec", [ref_get_codec, fast_get_codec])
@pytest.mark.parametrize("shape", [(True, 4), (2.0, 4), (2, 0), None])
def test_bad_shapes_are_invalid_not_crashes(get_codec, shape: object) -> None:
    """Booleans, floats, zero dims and non-sequences name the layout's shape rule."""
    codec = get_codec("q8_g32_fp16", "row_split_k128_v1")
    with pytest.raises(InvalidError) as e:
        codec.decode(b"", shape)
    assert e.value.rule == "ninfer3.codec.row_split_k128_v1.shape"


BAD_WORDS = [
    ({"codes": np.zeros((2, 70), np.float32), "scales": np.zeros((2, 2), np.uint16)}, "codes"),
    ({"codes": np.zeros((2, 69), np.int8), "scales": np.zeros((2, 2), np.uint16)}, "codes"),
    ({"codes": np.full((2, 70), 8, np.int8), "scales": np.zeros((2, 2), np.uint16)}, "codes"),
    (
        {"codes": np.full((2, 70), 2**64 - 1, np.uint64), "scales": np.zeros((2, 2), np.int64)},
        "codes",
    ),
    ({"codes": np.zeros((2, 70), np.int8), "scales": np.full((2, 2), -1, np.int32)}, "scales"),
    ({"codes": np.zeros((2, 70), np.int8)}, "scales"),
]


@pytest.mark.parametrize("get_codec", [ref_get_codec, fast_get_codec])
@pytest.mark.parametrize(("words", "path"), BAD_WORDS)
def test_bad_words_are_refused_before_packing(get_codec, words: dict, path: str) -> None:
    """Float codes, wrong shapes, codes outside 4 bits, wrapped uint64, missing keys: one rule."""
    with pytest.raises(InvalidError) as e:
        get_codec("q4_g64_fp16", "row_split_k128_v1").encode_words(words, (2, 70))
    assert (e.value.rule, e.value.path) == ("ninfer3.codec.row_split_k128_v1.words", path)


@pytest.mark.parametrize("get_codec", [ref_get_codec, fast_get_codec])
def test_words_that_pack_but_break_a_rule_are_refused(get_codec) -> None:
    """encode_words validates: a +0 scale over a non-zero code is InvalidError, nothing returned."""
    words = {"codes": np.ones((1, 64), np.int8), "scales": np.zeros((1, 1), np.uint16)}
    with pytest.raises(InvalidError) as e:
        get_codec("q4_g64_fp16", "row_split_k128_v1").encode_words(words, (1, 64))
    assert (e.value.rule, e.value.offset) == (
        "ninfer3.codec.row_split_k128_v1.zero_scale_nonzero_code",
        256,
    )
