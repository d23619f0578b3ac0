"""The Kestrel quantisers of spec/vqf.md §quant-q8-0, §quant-q4-0, §quant-q4i8-g256, §f16-rne on
hand-derived blocks where the modes differ (spec/vqf.md §vs-ggml)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from weightfile.ref.codecs.vqf import g256, q4_0, q4i8, q8_0
from weightfile.spec.errors import InvalidError, UnsupportedError


def _block(*head: float) -> np.ndarray:
    """A 32-element block starting with `head`, padded with zeros."""
    x = np.zeros(32, dtype=np.float32)
    x[: len(head)] = head
    return x


def _q8(x: np.ndarray, mode: str) -> tuple[int, list[int]]:
    d, *codes = struct.unpack("<H32b", q8_0.encode(x, 1, 32, mode=mode))
    return d, codes


def test_q8_rounding_per_mode_with_unit_scale() -> None:
    # amax = 127 -> scale = 1.0 exactly, r = 1: codes are the rounded inputs.
    x = _block(127.0, -2.5, 2.5, -2.4, 0.5, -0.5)
    d, kestrel = _q8(x, "kestrel")
    assert d == 0x3C00 and kestrel[:6] == [127, -3, 3, -2, 1, -1]  # half away from zero
    d, legacy = _q8(x, "kestrel_legacy")
    # trunc(x/scale + 0.5): -2.5 -> trunc(-2.0) = -2, -2.4 -> trunc(-1.9) = -1, -0.5 -> 0
    assert d == 0x3C00 and legacy[:6] == [127, -2, 3, -1, 1, 0]
    d, ggml = _q8(x, "ggml")
    assert d == 0x3C00 and ggml[:6] == [127, -3, 3, -2, 1, -1]  # roundf


def test_q8_tie_just_below_one_half() -> None:
    # x·r = 0.5 - 2^-25: Kestrel's f32 add rounds up to 1.0 (code 1), ggml's roundf gives 0
    # (spec/vqf.md §vs-ggml).
    x = _block(127.0, 0.5 - 2.0**-25)
    assert _q8(x, "kestrel")[1][1] == 1
    assert _q8(x, "ggml")[1][1] == 0


def test_q8_tiny_block_uses_the_1e_minus_10_floor() -> None:
    # amax < 1.27e-8: scale floors at 1e-10 (f16 -> 0x0000) and codes are round(x·1e10)
    # (spec/vqf.md §vs-ggml).
    d, codes = _q8(_block(1e-9, -3e-10), "kestrel")
    assert d == 0x0000 and codes[:2] == [10, -3]
    d, codes = _q8(_block(1e-9, -3e-10), "ggml")
    assert d == 0x0000 and codes[:2] == [127, -38]  # round(x·127/amax)


def test_q4_all_zero_block_differs_between_kestrel_and_ggml() -> None:
    zeros = np.zeros(32, dtype=np.float32)
    assert q4_0.encode(zeros, 1, 32)[:2] == b"\x00\x3c"  # d = 1.0
    assert q4_0.encode(zeros, 1, 32, mode="kestrel_legacy")[:2] == b"\x00\x3c"
    assert q4_0.encode(zeros, 1, 32, mode="ggml")[:2] == b"\x00\x80"  # -0.0


def test_q4_maxv_is_the_first_value_with_the_largest_magnitude() -> None:
    # |-4| ties |4|: the first (-4) wins, d = -4/-8 = 0.5; +4 gets trunc(4·2 + 8.5) = 16 -> 15.
    payload = q4_0.encode(_block(-4.0, 4.0), 1, 32)
    assert payload[:2] == b"\x00\x38"  # f16(0.5)
    assert payload[2] & 0x0F == 0 and payload[3] & 0x0F == 15


def test_q4_legacy_mode_truncates_the_scale() -> None:
    # maxv = -0.3 -> d = 0.0375, not an f16: RNE and truncation differ exactly when RNE rounded up.
    d32 = np.float32(-0.3) / np.float32(-8)
    rne = int(np.array([d32]).astype(np.float16).view(np.uint16)[0])
    kestrel = q4_0.encode(_block(-0.3), 1, 32)[:2]
    legacy = q4_0.encode(_block(-0.3), 1, 32, mode="kestrel_legacy")[:2]
    assert struct.unpack("<H", kestrel)[0] == rne
    widened = np.float32(np.array([rne], dtype=np.uint16).view(np.float16)[0])
    assert widened > d32  # RNE rounded away from zero here, so truncation is one ulp lower
    assert struct.unpack("<H", legacy)[0] == rne - 1


def test_q4i8_stores_the_q4_0_scale_and_signed_codes() -> None:
    x = np.array([(i - 12) * 0.1 for i in range(32)], dtype=np.float32)
    q4 = q4_0.encode(x, 1, 32)
    words = q4_0.decode_words(q4, 1, 32)
    payload = q4i8.encode(x, 1, 32)
    assert payload[:2] == q4[:2]
    assert list(struct.unpack("<32b", payload[2:])) == [int(c) - 8 for c in words["codes"][0]]


def test_g256_shares_one_scale_and_leaves_the_tail_unwritten() -> None:
    x = np.linspace(-1, 1, 300, dtype=np.float32)
    payload = g256.encode(x, 1, 300)
    assert len(payload) == 10 * 34
    scales = {payload[34 * k : 34 * k + 2] for k in range(8)}
    assert len(scales) == 1
    # the shared scale is the Q8_0 scale of all 256 values: amax = max|x[:256]|
    assert scales.pop() == q8_0.encode(_block(float(np.abs(x[:256]).max())), 1, 32)[:2]
    assert payload[8 * 34 :] == bytes(2 * 34)
    assert not g256.decode(payload, 1, 300)[0, 256:].any()


@pytest.mark.parametrize("codec", [q8_0, q4_0, q4i8, g256])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_quantisers_refuse_non_finite_input(codec: object, bad: float) -> None:
    x = np.zeros((2, 32), dtype=np.float32)
    x[1, 5] = bad
    with pytest.raises(InvalidError) as e:
        codec.encode(x, 2, 32)  # type: ignore[attr-defined]
    assert e.value.rule.endswith(".finite_input") and e.value.path == "values[1][5]"


def test_unknown_mode_is_unsupported() -> None:
    with pytest.raises(UnsupportedError) as e:
        g256.encode(np.zeros(256, np.float32), 1, 256, mode="ggml")
    assert e.value.rule == "vqf.codec.g256.mode"
