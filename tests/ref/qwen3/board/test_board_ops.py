"""The board profile's single operations against hand derivations and independent sources
(spec/numerics.md §board-arithmetic, §board-c-library, §board-quantizers, §board-products,
§board-rmsnorm, §board-exp): the C library's fmaf, the Arm FRECPE definition, libm expf and the
quantizer examples of the engine's own comments."""

from __future__ import annotations

import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.ref.qwen3.board import libm
from weightfile.ref.qwen3.board.expsilu import exp_neon4, frecpe, reciprocal
from weightfile.ref.qwen3.board.fma import fma_f32
from weightfile.ref.qwen3.board.model import BoardModel
from weightfile.ref.qwen3.board.quant import act_codes, quantize_kv
from weightfile.spec.errors import UnsupportedError

F32 = np.float32


def f32(bits: int) -> np.ndarray:
    return np.array([bits], dtype=np.uint32).view(F32)


def test_fma_rounds_once_where_float64_rounds_twice() -> None:
    """Hand-derived: a = 1 + 2^-23, b = 2^-24(1 - 2^-23), c = 1 + 2^-23. The exact a·b + c is
    1 + 2^-23 + 2^-24 - 2^-70, just below the float32 midpoint, so the fma is c itself
    (0x3F800001). float64 first rounds the sum onto the midpoint, and float32 then rounds it to
    even, 1 + 2^-22 (0x3F800002): the double rounding this module exists to avoid."""
    a, b, c = F32(1 + 2.0**-23), F32(2.0**-24 * (1 - 2.0**-23)), F32(1 + 2.0**-23)
    assert int(fma_f32(a, b, c).view(np.uint32)) == 0x3F800001
    naive = F32(np.float64(a) * np.float64(b) + np.float64(c))
    assert int(np.array(naive).view(np.uint32)) == 0x3F800002


finite32 = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(finite32, finite32, finite32)
def test_fma_equals_the_c_librarys_fmaf(a: float, b: float, c: float) -> None:
    """fma_f32 equals glibc's correctly rounded fmaf on any finite float32 inputs."""
    got, want = fma_f32(F32(a), F32(b), F32(c)), libm.fmaf(F32(a), F32(b), F32(c))
    assert np.array(got).view(np.uint32) == np.array(want).view(np.uint32) or (
        np.isnan(got) and np.isnan(want)
    )


def test_frecpe_matches_the_arm_definition() -> None:
    """FRECPE(1.0) = 511/512 = 0x3F7F8000 and FRECPE(2.0) = 0x3EFF8000 (a = 256: b = 1022,
    r = 511); FRECPE(1.5) = 0x3F2A8000 (a = 384: b = 682, r = 341 = 0x155)."""
    got = frecpe(np.array([1.0, 2.0, 1.5], dtype=F32)).view(np.uint32).tolist()
    assert got == [0x3F7F8000, 0x3EFF8000, 0x3F2A8000]


def test_two_newton_steps_land_within_an_ulp_of_the_reciprocal() -> None:
    """The refined estimate is within 2 ulp of 1/d over d in [1, 2^100] (what SiLU needs)."""
    d = np.geomspace(1.0, 2.0**100, 2000).astype(F32)
    r, exact = reciprocal(d), (1.0 / d.astype(np.float64))
    assert np.all(np.abs(r - exact) <= 2 * np.spacing(exact.astype(F32)))


def test_exp_neon4_is_close_to_libm_but_not_the_same_function() -> None:
    """exp_neon4 is within 5e-7 relative of libm expf on [-87, 87], and differs from it on some
    inputs (so the profile must use each exactly where the engine does)."""
    x = np.linspace(-87, 87, 4001).astype(F32)
    e, ref = exp_neon4(x), np.array([libm.expf(v) for v in x], dtype=F32)
    assert np.max(np.abs(e.astype(np.float64) / ref - 1)) < 5e-7
    assert np.any(e.view(np.uint32) != ref.view(np.uint32))


def test_activation_codes_truncate_after_adding_a_half() -> None:
    """The engine's examples with d = 1: -1.2 -> 0, -1.6 -> -1, 1.5 -> 2, -127 -> -126."""
    x = np.array([-1.2, -1.6, 1.5, -127.0], dtype=F32)
    assert act_codes(x, F32(1.0)).tolist() == [0, -1, 2, -126]


def test_kv_codes_floor_after_adding_a_half() -> None:
    """KV cache: amax 127 -> multiplier 1; floor(x + 0.5): -1.5 -> -1, -127 -> -127, 2.5 -> 3;
    the scale is amax·(1/127)."""
    codes, scale = quantize_kv(np.array([-1.5, -127.0, 2.5, 0.0], dtype=F32))
    assert codes.tolist() == [-1, -127, 3, 0] and scale == F32(127.0) * (F32(1.0) / F32(127.0))


def test_without_glibc_the_profile_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """frontend.profile.libm: another C library's float functions are not the board's."""
    libm._libm.cache_clear()
    monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
    try:
        with pytest.raises(UnsupportedError) as e:
            libm.expf(F32(1.0))
        assert e.value.rule == "frontend.profile.libm"
    finally:
        libm._libm.cache_clear()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("head_dim", 16, "head_dim a multiple of 32 and at most 256 (decode attention; this "
         "file's head_dim is 16)"),
        ("head_dim", 288, "this file's head_dim is 288"),
        ("intermediate_size", 258, "(the SiLU's 4-lane groups; this file's is 258)"),
    ],
)  # fmt: skip
def test_a_geometry_the_board_cannot_run_is_refused_naming_the_limit(field, value, words) -> None:
    """vqf.bind.unsupported, the message naming the limit and the file's value (spec/numerics.md
    §board-text-paths): head_dim 16 (the engine's decode attention needs multiples of 32), 288
    (above 256), an FFN width not a multiple of 4."""
    from .test_board_packs import board_model

    m = board_model("a-q4_0-tiled-p5")
    config = type(m.config)(**{**m.config.__dict__, field: value})
    with pytest.raises(UnsupportedError) as e:
        BoardModel(config, m.weights, m.qtype)
    assert e.value.rule == "vqf.bind.unsupported" and words in str(e.value)


def test_a_libm_with_other_bits_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """frontend.profile.libm: a probe whose expected bits the host does not give (here: the
    correctly rounded expf value instead of glibc's) refuses the profile."""
    libm._libm.cache_clear()
    monkeypatch.setattr(libm, "PROBES", (("expf", (0.00045235652942210436,), 0x3F800ED3),))
    try:
        with pytest.raises(UnsupportedError, match="0x3F800ED3") as e:
            libm.expf(F32(1.0))
        assert e.value.rule == "frontend.profile.libm"
    finally:
        libm._libm.cache_clear()


def test_the_probes_are_not_the_correctly_rounded_values() -> None:
    """Each probe's glibc bits are one ulp from the correctly rounded value (computed in
    float64, which is far more precise than needed here): the probes can tell libms apart."""
    exact = {"expf": np.exp, "sinf": np.sin, "cosf": np.cos, "powf": np.power}
    for name, xs, want in libm.PROBES:
        cr = F32(exact[name](*(np.float64(F32(x)) for x in xs)))
        assert abs(int(np.array(cr).view(np.uint32)) - want) == 1, name


def test_the_qtype_and_lm_head_refusals_name_the_files_value() -> None:
    """issue 31 item 4: a projection set other than q4/q8 and a tied lm_head are refused with
    vqf.bind.unsupported, each message naming the limit and what the file has."""
    import dataclasses

    from .test_board_packs import board_model

    m = board_model("a-q4_0-tiled-p5")
    with pytest.raises(UnsupportedError) as e:
        BoardModel(m.config, m.weights, "f16")
    assert "Q4_0 or Q8_0 projections (this file's projection set is f16)" in str(e.value)
    tied = dataclasses.replace(m.weights, lm_head=None)
    with pytest.raises(UnsupportedError) as e:
        BoardModel(m.config, tied, m.qtype)
    assert e.value.rule == "vqf.bind.unsupported"
    assert "an untied Q4_0 or Q8_0 lm_head (this file's lm_head is tied)" in str(e.value)
