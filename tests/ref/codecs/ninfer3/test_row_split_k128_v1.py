"""`row_split_k128_v1` reproduces spec/ninfer3.md §row-split's packed bytes and fixture, and its
validator names each broken rule at the right byte (spec/ninfer3.md §grouped-formats, §row-split).
Both engines run every test.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import shapes, valid_words

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_get_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
from weightfile.spec.errors import InvalidError, MalformedError

LAYOUT = "row_split_k128_v1"
RULE = "ninfer3.codec.row_split_k128_v1."


@pytest.fixture(params=["ref", "fast"])
def get_codec(request: pytest.FixtureRequest):
    return {"ref": ref_get_codec, "fast": fast_get_codec}[request.param]


KNOWN_PACKED = [
    # format, K, first codes, base bytes, high bytes @256 (typed from the spec/ninfer3.md §row-split
    # table)
    ("q4_g64_fp16", 65, [-8, -7, -1, 0, 1, 7], "98 0F 71", ""),
    ("q5_g64_fp16", 130, [-16, -15, -1, 0, 1, 15], "10 0F F1", "07"),
    ("q6_g64_fp16", 65, [-32, -31, -17, -16, -1, 0, 15, 31], "10 0F 0F FF", "EA 43"),
    ("q8_g32_fp16", 33, [-127, -1, 0, 1, 127], "81 FF 00 01 7F", ""),
    ("t2_g128_fp16", 130, [-1, 0, 1, 1, -1, 0, 0, 1], "53 43", ""),
]


def one_row_words(fmt: str, k: int, first: list[int]) -> dict[str, np.ndarray]:
    """Group-0 scale 1.5 (0x3E00), group-1 scale 0.25 (0x3400), as in the spec/ninfer3.md §row-split
    table."""
    g = {"q8_g32_fp16": 32, "t2_g128_fp16": 128}.get(fmt, 64)
    codes = np.zeros((1, k), dtype=np.int8)
    codes[0, : len(first)] = first
    scales = np.zeros((1, -(-k // g)), dtype=np.uint16)
    scales[0, 0] = 0x3E00
    if scales.shape[1] > 1:
        scales[0, 1] = 0x3400
    return {"codes": codes, "scales": scales}


@pytest.mark.parametrize(("fmt", "k", "first", "base", "high"), KNOWN_PACKED)
def test_known_packed_bytes(get_codec, fmt: str, k: int, first: list, base: str, high: str) -> None:
    """The upstream packed-byte vectors of spec/ninfer3.md §row-split, both directions."""
    codec = get_codec(fmt, LAYOUT)
    words = one_row_words(fmt, k, first)
    payload = codec.encode_words(words, (1, k))
    base_b, high_b = bytes.fromhex(base), bytes.fromhex(high)
    assert payload[: len(base_b)] == base_b
    assert payload[256 : 256 + len(high_b)] == high_b
    back = codec.decode_words(payload, (1, k))
    assert back["codes"].tolist() == words["codes"].tolist()
    assert back["scales"].tolist() == words["scales"].tolist()


def cpp_fixture() -> bytes:
    """The spec/ninfer3.md §row-split C++ fixture: Q5 [2,130], bytes set exactly as the spec lists
    them."""
    payload = bytearray(528)
    payload[0] = 0x31  # row 0: lanes 0/1 = 1/3
    payload[128] = 0x52  # row 1: lanes 0/1 = 2/5
    payload[256] = 0x02  # row 0 lane 1 gains bit 4: u = 19, q = −13
    for n, scales in enumerate(([0x3800, 0x3C00, 0x3C00, 0], [0x4000, 0x3C00, 0x3C00, 0])):
        for g, s in enumerate(scales):
            at = 512 + 8 * n + 2 * g
            payload[at : at + 2] = s.to_bytes(2, "little")
    return bytes(payload)


def test_cpp_fixture_decodes_to_spec_values(get_codec) -> None:
    """w[0,0] = 0.5, w[0,1] = −6.5, w[1,0] = 4, w[1,1] = 10; everything else 0."""
    codec = get_codec("q5_g64_fp16", LAYOUT)
    assert codec.validate(cpp_fixture(), (2, 130)) == []
    w = codec.decode(cpp_fixture(), (2, 130))
    assert w.dtype == np.float32 and w.shape == (2, 130)
    assert w[:, :2].tolist() == [[0.5, -6.5], [4.0, 10.0]]
    assert not w[:, 2:].any()
    assert codec.decode_words(cpp_fixture(), (2, 130))["codes"][0, :2].tolist() == [1, -13]


def test_cpp_fixture_row_1_view_and_slice(get_codec) -> None:
    """Row-1 view at 128/288/520; its standalone slice decodes to row 1 of the parent."""
    codec = get_codec("q5_g64_fp16", LAYOUT)
    view = codec.row_view((2, 130), 1, 1)
    assert (view.base.offset, view.high.offset, view.scale.offset) == (128, 288, 520)
    child = codec.row_slice(cpp_fixture(), (2, 130), [1])
    # N = 1: base 128 B at 0, high 32 B at align_up(128, 256) = 256, scales 8 B at 256 + 256
    parent = cpp_fixture()
    assert len(child) == 520
    assert child[:128] == parent[128:256]
    assert child[256:288] == parent[288:320]
    assert child[512:520] == parent[520:528]
    assert (
        codec.decode(child, (1, 130)).tolist() == codec.decode(cpp_fixture(), (2, 130))[1:].tolist()
    )


def test_wrong_length_is_malformed(get_codec) -> None:
    """A payload one byte short raises MalformedError before anything is decoded."""
    with pytest.raises(MalformedError) as e:
        get_codec("q5_g64_fp16", LAYOUT).decode(cpp_fixture()[:-1], (2, 130))
    assert e.value.rule == RULE + "length"


def flipped(at: int, value: int) -> bytes:
    payload = bytearray(cpp_fixture())
    payload[at] = value
    return bytes(payload)


# (attack name, mutated payload, rule, offset, path): each breaks exactly one rule of
# spec/ninfer3.md §grouped-formats/§row-split.
ATTACKS = [
    ("padding-lane-base-nibble", flipped(64 + 1, 0x01), "padding_nonzero", 65, "codes[0][130]"),
    ("padding-lane-high-bit", flipped(256 + 16 + 1, 0x08), "padding_nonzero", 273, "codes[0][139]"),
    ("padding-group-code", flipped(100, 0x10), "padding_nonzero", 100, "codes[0][201]"),
    ("padding-group-scale", flipped(512 + 6, 0x01), "padding_scale_nonzero", 518, "scales[0][3]"),
    ("scale-negative-zero", flipped(512 + 1, 0x80), "scale_invalid", 512, "scales[0][0]"),
    ("scale-inf", flipped(512 + 3, 0x7C), "scale_invalid", 514, "scales[0][1]"),
]  # q5 [2, 130] has no inter-plane gap; see test_gap_bytes_between_planes_must_be_zero


@pytest.mark.parametrize(("name", "payload", "rule", "offset", "path"), ATTACKS)
def test_each_broken_rule_is_reported_once_at_its_byte(
    get_codec, name: str, payload: bytes, rule: str, offset: int, path: str
) -> None:
    """validate lists exactly the one violation; decode raises it as InvalidError."""
    codec = get_codec("q5_g64_fp16", LAYOUT)
    found = codec.validate(payload, (2, 130))
    assert [(v.rule, v.offset, v.path) for v in found] == [(RULE + rule, offset, path)], name
    with pytest.raises(InvalidError) as e:
        codec.decode(payload, (2, 130))
    assert (e.value.rule, e.value.offset) == (RULE + rule, offset)


def test_zero_scale_with_nonzero_code_is_reported_at_the_scale(get_codec) -> None:
    """Row 0 group 0 scale set to +0 while codes 1 and −13 remain."""
    payload = flipped(513, 0x00)
    payload = payload[:512] + b"\x00\x00" + payload[514:]
    found = get_codec("q5_g64_fp16", LAYOUT).validate(payload, (2, 130))
    assert [(v.rule, v.offset) for v in found] == [(RULE + "zero_scale_nonzero_code", 512)]


def test_zero_scale_with_zero_codes_and_positive_scale_with_zero_codes_are_valid(
    get_codec,
) -> None:
    """Guards: scale +0 with all-zero codes, and a positive scale with zero codes, are legal."""
    codec = get_codec("q4_g64_fp16", LAYOUT)
    words = {
        "codes": np.zeros((1, 128), dtype=np.int8),
        "scales": np.array([[0x0000, 0x0001]], dtype=np.uint16),
    }
    assert codec.validate(codec.encode_words(words, (1, 128)), (1, 128)) == []


@pytest.mark.parametrize(
    ("fmt", "k", "byte", "value", "path"),
    [
        ("q8_g32_fp16", 32, 5, 0x80, "codes[0][5]"),  # Q8 byte 0x80 is −128
        ("t2_g128_fp16", 128, 2, 0b0010_0000, "codes[0][10]"),  # lane 10 = 0b10
    ],
)
def test_illegal_codes_are_code_domain_violations(
    get_codec, fmt: str, k: int, byte: int, value: int, path: str
) -> None:
    """Q8 0x80 and T2 0b10 break the code domain; neighbouring legal codes do not."""
    codec = get_codec(fmt, LAYOUT)
    words = {"codes": np.zeros((1, k), dtype=np.int8), "scales": np.ones((1, 1), dtype=np.uint16)}
    good = bytearray(codec.encode_words(words, (1, k)))
    good[byte] = value
    found = codec.validate(bytes(good), (1, k))
    assert [(v.rule, v.offset, v.path) for v in found] == [(RULE + "code_domain", byte, path)]
    good[byte] = value - 1 if fmt == "q8_g32_fp16" else 0b0001_0000  # 0x7F = 127, 0b01 = 1
    assert codec.validate(bytes(good), (1, k)) == []


def test_gap_bytes_between_planes_must_be_zero(get_codec) -> None:
    """q5 [1, 130]: base 128 B, gap 128..255 must be zero."""
    codec = get_codec("q5_g64_fp16", LAYOUT)
    words = {
        "codes": np.zeros((1, 130), dtype=np.int8),
        "scales": np.zeros((1, 3), dtype=np.uint16),
    }
    payload = bytearray(codec.encode_words(words, (1, 130)))
    payload[200] = 1
    found = codec.validate(bytes(payload), (1, 130))
    assert [(v.rule, v.offset) for v in found] == [(RULE + "gap_nonzero", 200)]


def test_t2_has_no_value_encoder(get_codec) -> None:
    """Q7: T2 is import-only; encode refuses with UnsupportedError."""
    from weightfile.spec.errors import UnsupportedError

    with pytest.raises(UnsupportedError):
        get_codec("t2_g128_fp16", LAYOUT).encode(np.zeros((1, 4), np.float32), (1, 4))


@pytest.mark.parametrize(
    "fmt", ["q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16"]
)
@given(data=st.data())
def test_standalone_slice_decodes_to_the_selected_rows_and_equals_the_views(
    fmt: str, data: st.DataObject
) -> None:
    """spec/ninfer3.md §row-split: a gather concatenates each row's three view spans per plane; no
    re-quantisation."""
    shape = data.draw(shapes(LAYOUT))
    rows = data.draw(st.lists(st.integers(0, shape[0] - 1), min_size=1, max_size=4))
    for get_codec in (ref_get_codec, fast_get_codec):
        codec = get_codec(fmt, LAYOUT)
        payload = codec.encode_words(data.draw(valid_words(fmt, LAYOUT, shape)), shape)
        child = codec.row_slice(payload, shape, rows)
        child_shape = (len(rows), shape[1])
        want = codec.decode(payload, shape)[rows]
        assert (
            codec.decode(child, child_shape).view(np.uint32).tolist()
            == want.view(np.uint32).tolist()
        )
        for i, r in enumerate(rows):
            parent_view = codec.row_view(shape, r, 1)
            child_view = codec.row_view(child_shape, i, 1)
            for plane in ("base", "high", "scale"):
                a, b = getattr(parent_view, plane), getattr(child_view, plane)
                assert (
                    payload[a.offset : a.offset + a.length] == child[b.offset : b.offset + b.length]
                )
