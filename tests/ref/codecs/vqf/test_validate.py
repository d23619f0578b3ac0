"""The strict payload validators: each attack is reported with its rule id and byte offset, and the
nearest legal payload (the canonical encoding) is reported clean."""

from __future__ import annotations

import numpy as np
import pytest

from weightfile.ref.codecs.vqf import codec, f16, f32, g256, q4_0, q4i8, q8_0
from weightfile.spec.errors import MalformedError

# The tiled layouts are rows of spec/codecs/vqf/layouts.TILED, reached through codec().
q8_0_8x8, q8_0_4x4 = codec("q8_0_8x8"), codec("q8_0_4x4")
q4_0_4x4, q4_0_8x8l, g256_8x8 = codec("q4_0_4x4"), codec("q4_0_8x8l"), codec("g256_8x8")
ALL = [f32, f16, q8_0, q4_0, q4i8, g256, q8_0_8x8, q8_0_4x4, q4_0_4x4, q4_0_8x8l, g256_8x8]
X = np.random.default_rng(11).standard_normal((8, 256)).astype(np.float32)


def _rules(
    codec: object, payload: bytes, rows: int = 8, cols: int = 256
) -> list[tuple[str, int | None]]:
    return [(v.rule, v.offset) for v in codec.validate(payload, rows, cols)]  # type:
    # ignore[attr-defined]


def _poke(payload: bytes, offset: int, *values: int) -> bytes:
    out = bytearray(payload)
    out[offset : offset + len(values)] = bytes(values)
    return bytes(out)


@pytest.mark.parametrize("codec", ALL, ids=lambda c: c.NAME)
def test_canonical_encodings_are_clean(codec: object) -> None:
    assert codec.validate(codec.encode(X, 8, 256), 8, 256) == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("codec", ALL, ids=lambda c: c.NAME)
def test_payload_one_byte_short_is_malformed(codec: object) -> None:
    payload = codec.encode(X, 8, 256)[:-1]  # type: ignore[attr-defined]
    (v,) = codec.validate(payload, 8, 256)  # type: ignore[attr-defined]
    assert (v.rule, v.offset, v.error_class) == (
        f"vqf.codec.{codec.NAME}.length",
        len(payload),
        "MalformedError",
    )  # type: ignore[attr-defined]
    with pytest.raises(MalformedError) as e:
        codec.decode(payload, 8, 256)  # type: ignore[attr-defined]
    assert e.value.rule == v.rule and e.value.offset == len(payload)


def test_q8_code_minus_128_breaks_the_code_domain() -> None:
    bad = _poke(q8_0.encode(X, 8, 256), 34 * 5 + 2 + 9, 0x80)
    assert _rules(q8_0, bad) == [("vqf.codec.q8_0.code_domain", 34 * 5 + 11)]


def test_q8_nan_and_negative_scales() -> None:
    payload = q8_0.encode(X, 8, 256)
    assert _rules(q8_0, _poke(payload, 34, 0x00, 0x7E)) == [("vqf.codec.q8_0.scale_finite", 34)]
    assert _rules(q8_0, _poke(payload, 68, 0x00, 0xFC)) == [("vqf.codec.q8_0.scale_finite", 68)]
    assert _rules(q8_0, _poke(payload, 0, 0x00, 0xBC)) == [("vqf.codec.q8_0.scale_sign", 0)]


def test_q8_partial_block_padding_must_be_zero() -> None:
    x = X.reshape(-1)[:40].reshape(1, 40)
    payload = q8_0.encode(x, 1, 40)
    assert _rules(q8_0, payload, 1, 40) == []
    assert _rules(q8_0, _poke(payload, 34 + 2 + 8, 1), 1, 40) == [("vqf.codec.q8_0.padding", 44)]


def test_q4_zero_block_with_zero_scale_breaks_the_zero_block_rule() -> None:
    zeros = np.zeros((1, 64), np.float32)
    assert _rules(q4_0, q4_0.encode(zeros, 1, 64), 1, 64) == []
    ggml = q4_0.encode(zeros, 1, 64, mode="ggml")
    assert _rules(q4_0, ggml, 1, 64) == [
        ("vqf.codec.q4_0.zero_block", 0),
        ("vqf.codec.q4_0.zero_block", 18),
    ]


def test_q4_inf_scale_and_padding_nibble() -> None:
    x = X.reshape(-1)[:20].reshape(1, 20)
    payload = q4_0.encode(x, 1, 20)
    assert _rules(q4_0, _poke(payload, 0, 0x00, 0x7C), 1, 20) == [
        ("vqf.codec.q4_0.scale_finite", 0)
    ]
    # element 20 lives in the high nibble of byte 4: set it to 9
    bad = _poke(payload, 6, (payload[6] & 0x0F) | 0x90)
    assert _rules(q4_0, bad, 1, 20) == [("vqf.codec.q4_0.padding", 6)]


def test_q4i8_codes_outside_minus_8_to_7() -> None:
    payload = q4i8.encode(X, 8, 256)
    assert _rules(q4i8, _poke(payload, 2, 8)) == [("vqf.codec.q4i8.code_domain", 2)]
    assert _rules(q4i8, _poke(payload, 3, 0xF7)) == [("vqf.codec.q4i8.code_domain", 3)]


def test_g256_scale_not_shared_and_tail_not_zero() -> None:
    payload = g256.encode(X, 8, 256)
    bumped = payload[34 * 3] ^ 1
    assert _rules(g256, _poke(payload, 34 * 3, bumped)) == [("vqf.codec.g256.scale_shared", 102)]
    x = X.reshape(-1)[:300].reshape(1, 300)
    tail = g256.encode(x, 1, 300)
    assert _rules(g256, tail, 1, 300) == []
    assert _rules(g256, _poke(tail, 34 * 9 + 5, 1), 1, 300) == [
        ("vqf.codec.g256.unwritten_tail", 311)
    ]


def test_tiled_violations_carry_the_tiled_rule_and_offset() -> None:
    payload = q8_0_8x8.encode(X, 8, 256)
    # row 3's code 5 of block 0 sits at 16 + 32·1 + 4·3 + 1 = 61 (spec/vqf.md §q8-tiled)
    assert _rules(q8_0_8x8, _poke(payload, 61, 0x80)) == [("vqf.codec.q8_0_8x8.code_domain", 61)]
    # row 5's scale of block 2 sits at 2·272 + 2·5 = 554
    assert _rules(q8_0_8x8, _poke(payload, 554, 0x00, 0x7C)) == [
        ("vqf.codec.q8_0_8x8.scale_finite", 554)
    ]


def test_tiled_geometry_is_checked_before_length() -> None:
    (v,) = q4_0_4x4.validate(b"", 3, 32)
    assert v.rule == "vqf.codec.q4_0_4x4.geometry" and v.error_class == "MalformedError"
