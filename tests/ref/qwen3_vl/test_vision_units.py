"""The vision tower's operations one by one (spec/numerics.md §vision) and the multimodal prompt
(spec/models.md §qwen3-vl (b), (c)), against hand derivations, binary64 math and transformers'
helpers; and the rules the binder and the prompt raise."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_vl.bind_vqf import check_fc2_padding, vision_config_from_arch
from weightfile.ref.qwen3_vl.config import VisionConfig
from weightfile.ref.qwen3_vl.model import expand_image_tokens, rope_index
from weightfile.ref.qwen3_vl.numerics import (
    Rotary2D,
    bilinear_axis,
    gelu_erf,
    gelu_tanh,
    layernorm,
)
from weightfile.ref.qwen3_vl.vision import VisionInput, check_inputs, patch_coordinates
from weightfile.spec.errors import InvalidError

F32 = np.float32
finite = st.floats(-30, 30, width=32, allow_nan=False)


def round_f32(v: mpmath.mpf) -> np.float32:
    """v rounded once to binary32: through binary64, except where binary64 lands exactly on a
    binary32 midpoint (a double rounding there would tie to even), where v's side decides."""
    d = float(v)
    f = F32(d)
    for n in (np.nextafter(f, F32(np.inf)), np.nextafter(f, F32(-np.inf))):
        mid = (mpmath.mpf(float(f)) + mpmath.mpf(float(n))) / 2
        if mpmath.mpf(d) == mid and abs(v - mpmath.mpf(float(n))) < abs(v - mpmath.mpf(float(f))):
            return n
    return f


def mp_gelu_tanh(x: float) -> np.float32:
    """The definition at 100 digits, in the tanh form (the implementation uses another)."""
    with mpmath.workdps(100):
        v = mpmath.mpf(x)
        c = mpmath.sqrt(2 / mpmath.pi)
        return round_f32(v / 2 * (1 + mpmath.tanh(c * (v + mpmath.mpf("0.044715") * v**3))))


def mp_gelu_erf(x: float) -> np.float32:
    """The definition at 100 digits, in the erf form (the implementation uses erfc)."""
    with mpmath.workdps(100):
        v = mpmath.mpf(x)
        return round_f32(v / 2 * (1 + mpmath.erf(v / mpmath.sqrt(2))))


@settings(max_examples=60, deadline=None)
@given(x=finite | st.sampled_from([2.0**-149, -(2.0**-149), 3 * 2.0**-149, 2.0**-126]))
def test_gelus_are_the_correctly_rounded_real_functions(x) -> None:
    """The 100-digit value rounded once to binary32 (`round_f32`: odd subnormals x put x/2
    exactly on a midpoint, where only the real value's side decides); x up to ±30 reaches the
    far tails where 1 + tanh and 1 + erf cancel."""
    assert gelu_tanh(F32(x)) == mp_gelu_tanh(x)
    assert gelu_erf(F32(x)) == mp_gelu_erf(x)


def test_near_midpoint_falls_back_to_multi_precision(monkeypatch) -> None:
    from weightfile.ref.qwen3_vl import numerics

    calls = []
    real = numerics.correctly_rounded
    monkeypatch.setattr(numerics, "correctly_rounded", lambda f, x: calls.append(x) or real(f, x))
    monkeypatch.setattr(numerics, "GUARD", 1.0)  # every candidate counts as near a midpoint
    assert gelu_erf(F32(0.75)) == mp_gelu_erf(0.75) and calls == [F32(0.75)]


def test_gelu_special_values() -> None:
    assert gelu_erf(F32(0)) == 0 and gelu_tanh(F32(0)) == 0
    assert np.isnan(gelu_erf(F32("nan"))) and np.isnan(gelu_tanh(F32("nan")))
    # far left both are tiny negatives, not the 0 that 1 + erf(x) rounds to in binary32
    assert -1e-20 < gelu_erf(F32(-10)) < 0


def test_layernorm_by_hand_and_against_torch() -> None:
    torch = pytest.importorskip("torch")
    x = [F32(v) for v in (0, 0, 2, 2)]  # mean 1, centred ±1, variance 1, r = 1
    w, b = [F32(v) for v in (1, 2, 3, 4)], [F32(v) for v in (0.5, 0, 0, -1)]
    assert layernorm(x, w, b, 0.0) == [F32(-0.5), F32(-2), F32(3), F32(3)]
    rng = np.random.default_rng(0)
    x = rng.normal(3, 2, 64).astype(F32)
    w, b = rng.normal(1, 0.1, 64).astype(F32), rng.normal(0, 0.1, 64).astype(F32)
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (64,), torch.from_numpy(w),
                                          torch.from_numpy(b), eps=1e-6).numpy()  # fmt: skip
    assert np.abs(np.array(layernorm(list(x), list(w), list(b), 1e-6)) - want).max() < 1e-6


def test_bilinear_taps_by_hand_and_against_interpolate() -> None:
    torch = pytest.importorskip("torch")
    # side 4, 6 target rows: row 1 sits at 1·3/5 = 0.6 -> taps 0, 1 with weights 1 - 0.6, 0.6
    (t0, t1), (w0, w1) = bilinear_axis(1, 6, 4)
    assert (t0, t1) == (0, 1) and w1 == F32(0.6) and w0 == F32(1) - F32(0.6)
    assert bilinear_axis(5, 6, 4) == ((3, 3), (F32(1), F32(0)))  # the last row clamps
    assert bilinear_axis(0, 1, 4) == ((0, 1), (F32(1), F32(0)))  # one row: max(size-1, 1)
    from weightfile.ref.qwen3_vl.numerics import bilinear_row

    table = np.random.default_rng(1).normal(size=(16, 3)).astype(F32)
    img = torch.from_numpy(table.T.reshape(1, 3, 4, 4).copy())
    want = torch.nn.functional.interpolate(img, size=(4, 6), mode="bilinear", align_corners=True)
    for r in range(4):
        for c in range(6):
            got = bilinear_row(table, r, c, 4, 6, 4)
            assert np.abs(np.array(got) - want[0, :, r, c].numpy()).max() < 1e-6


def test_patch_order_equals_transformers() -> None:
    vision_utils = pytest.importorskip("transformers.vision_utils")
    torch = pytest.importorskip("torch")
    for gh, gw in ((4, 6), (2, 2), (6, 4)):
        want = vision_utils.get_vision_position_ids(torch.tensor([[1, gh, gw]]), 2).tolist()
        assert [list(p) for p in patch_coordinates(gh, gw)] == want
    assert patch_coordinates(4, 6)[5] == (0, 3)  # window 1 (bx 1), inside 1 (mx 1)


def test_rotary_2d_rows_then_columns() -> None:
    rot = Rotary2D(10000.0, 16)  # hdv 16: inv_freq over 8 dims, 4 values
    cos, sin = rot.cos_sin(2, 5)
    inv = [1 / 10000 ** (2 * i / 8) for i in range(4)]
    for i, f in enumerate(inv):
        for got, want in ((cos[i], math.cos(2 * f)), (cos[4 + i], math.cos(5 * f)),
                          (sin[i], math.sin(2 * f)), (sin[4 + i], math.sin(5 * f))):  # fmt: skip
            assert abs(float(got) - want) <= 2 * np.spacing(F32(abs(want)))


def test_rope_index_reproduces_the_observed_example() -> None:
    """spec/models.md §qwen3-vl (b): [1, 2, <vs>, 6 image tokens of a 2x3 merged grid, <ve>, 7, 8,
    9]."""
    img = 9
    ids = [1, 2, 5, *[img] * 6, 6, 7, 8, 10]
    pos, delta = rope_index(ids, img, [(1, 4, 6)], 2)
    t, h, w = (list(a) for a in zip(*pos, strict=True))
    assert t == [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7, 8, 9]
    assert h == [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 9]
    assert w == [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9]
    assert delta == 9 + 1 - 13


def test_image_counts_are_checked() -> None:
    assert expand_image_tokens([1, 9, 2], 9, [3]) == [1, 9, 9, 9, 2]
    for ids, counts in (([1, 9, 2, 9], [4]), ([1, 2], [4])):
        with pytest.raises(InvalidError) as e:
            expand_image_tokens(ids, 9, counts)
        assert e.value.rule == "frontend.image.count"
    with pytest.raises(InvalidError) as e:
        rope_index([1, 9, 9, 2], 9, [(1, 4, 4)], 2)  # a 2x2 image needs 4 tokens
    assert e.value.rule == "frontend.image.count"


ARCH = dict(
    vis_depth=2, vis_hidden=32, vis_heads=2, vis_ffn=48, vis_patch=16, vis_temporal=2,
    vis_merge=2, vis_out_dim=64, vis_max_pos=16, vis_ds_count=1, vis_ds_idx=[1, 0, 0, 0],
    norm_eps=1e-6,
)  # fmt: skip


def test_vision_arch_rules() -> None:
    c = vision_config_from_arch(ARCH, 64)
    assert (c.head_dim, c.side, c.deepstack_visual_indexes, c.merged_dim) == (16, 4, (1,), 128)
    for bad in ({"vis_out_dim": 32}, {"vis_max_pos": 15}, {"vis_ds_idx": [2, 0, 0, 0]},
                {"vis_heads": 3}, {"vis_hidden": 40}):  # fmt: skip
        with pytest.raises(InvalidError) as e:
            vision_config_from_arch({**ARCH, **bad}, 64)
        assert e.value.rule == "vqf.bind.vision_arch", bad


def test_fc2_padding_must_be_zero() -> None:
    codes = np.zeros((32, 64), np.int8)
    codes[:, :48] = 5
    m = QuantMatrix(codes, np.full((32, 2), 0x3C00, np.uint16))
    check_fc2_padding(m, 48, 0)  # zero padding passes
    codes[7, 50] = 1
    with pytest.raises(InvalidError) as e:
        check_fc2_padding(QuantMatrix(codes, m.scale_bits), 48, 3)
    assert e.value.rule == "vqf.bind.vision_padding"
    assert "row 7" in str(e.value) and "column 50" in str(e.value)


def test_vision_input_rule() -> None:
    c = VisionConfig(2, 32, 2, 48, 64, 16, (1,))
    good = VisionInput(np.zeros((24, 1536), F32), (1, 4, 6))
    check_inputs(c, [good])
    for bad in (VisionInput(np.zeros((9, 1536), F32), (1, 3, 3)),
                VisionInput(np.zeros((24, 1536), F32), (2, 4, 6)),
                VisionInput(np.zeros((24, 768), F32), (1, 4, 6)),
                VisionInput(np.zeros((24, 1536), np.float64), (1, 4, 6))):  # fmt: skip
        with pytest.raises(InvalidError) as e:
            check_inputs(c, [good, bad])
        assert e.value.rule == "vqf.bind.vision_input" and e.value.path == "images[1]"
