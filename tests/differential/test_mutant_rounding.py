"""The codec cases the surviving mutants of tools/mutations.py showed untested (issue 14 item 7).

Each property reaches one decision no other test reached, and checks the fast codec against ref
and against an oracle outside our code: the grouped encoders' rescue word for a scale that
underflows binary16 (spec/ninfer3.md §grouped-absmax step 5; codes by NumPy's rint), E4M3FN code
ties and subnormal codes of fp8_e4m3fn_row_bf16 (spec/ninfer3.md §fp8-row-maxabs step 7; ml_dtypes
float8_e4m3fn), and NaN words of the bf16 `.ninfer` codec (spec/ninfer3.md §fp8-row-maxabs) and the
VQF f16 codec (spec/vqf.md §f16-rne; NumPy's float16 and ml_dtypes bfloat16 say the words are NaN).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import assert_identical
from strategies.codecs_ninfer3 import outcome as ninfer_outcome
from strategies.codecs_vqf import same_outcome
from strategies.rounding import (
    F32,
    bf16_oracle,
    e4m3fn_tie_rows,
    f16_underflow_amax,
    nan_bits,
)

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_ninfer
from weightfile.fast.codecs.vqf import codec as fast_vqf
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_ninfer
from weightfile.ref.codecs.vqf import codec as ref_vqf
from weightfile.spec.codecs.ninfer3.formats import GROUPED_FORMATS
from weightfile.spec.errors import InvalidError

EXAMPLES = settings(max_examples=30, deadline=None)
GROUPED = sorted(n for n in GROUPED_FORMATS if not n.startswith("t2"))  # t2 is import-only
FP8 = ("fp8_e4m3fn_row_bf16", "row_scale_v1")


@pytest.mark.parametrize("fmt", GROUPED)
@settings(max_examples=12, deadline=None)  # the ref encoder is slow; the case is simple
@given(data=st.data())
def test_grouped_underflowing_scale_gets_the_rescue_word(fmt: str, data: st.DataObject) -> None:
    """A group whose amax/qmax rounds to f16 0 stores word 0x0001 (2^-24), and its codes are
    rint(x·2^24) (spec/ninfer3.md §grouped-absmax steps 5-6): NumPy's float16 says the scale
    underflows, NumPy's rint gives the codes."""
    f = GROUPED_FORMATS[fmt]
    g = f.group_size
    groups = data.draw(st.integers(1, 2))
    x = np.zeros((1, g * groups), np.float32)
    for j in range(groups):
        amax = F32(data.draw(f16_underflow_amax(f.qmax)))
        vals = data.draw(st.lists(st.floats(-float(amax), float(amax), width=32), min_size=g,
                                  max_size=g))  # fmt: skip
        block = np.array(vals, np.float32)
        block[data.draw(st.integers(0, g - 1))] = amax if data.draw(st.booleans()) else -amax
        x[0, j * g : (j + 1) * g] = block
    layout = "row_split_k128_v1"
    ref = ninfer_outcome(ref_ninfer(fmt, layout).encode, x, x.shape)
    fast = ninfer_outcome(fast_ninfer(fmt, layout).encode, x, x.shape)
    assert_identical(ref, fast)
    assert fast[0] == "ok", fast
    words = fast_ninfer(fmt, layout).decode_words(fast[1], x.shape)
    amax = np.abs(x.reshape(groups, g)).max(axis=1)
    assert (amax.astype(np.float32) / F32(f.qmax)).astype(np.float16).tolist() == [0.0] * groups
    assert words["scales"][0, :groups].tolist() == [1] * groups
    want = np.clip(np.rint(x * F32(2.0**24)), f.qmin, f.qmax).astype(np.int64)
    assert np.asarray(words["codes"]).reshape(1, -1)[:, : x.shape[1]].tolist() == want.tolist()


@EXAMPLES
@given(x=e4m3fn_tie_rows())
def test_fp8_code_ties_and_subnormals_fast_eq_ref_eq_ml_dtypes(x: np.ndarray) -> None:
    """Every code is ml_dtypes' float8_e4m3fn cast (RNE) of x_bf16 / scale, clamped to ±448
    (spec/ninfer3.md §fp8-row-maxabs steps 6-7); the rows are built so that x / scale is exact and
    lands on halfway points (normal and subnormal) and between subnormal words."""
    ref = ninfer_outcome(ref_ninfer(*FP8).encode, x, x.shape)
    fast = ninfer_outcome(fast_ninfer(*FP8).encode, x, x.shape)
    assert_identical(ref, fast)
    assert fast[0] == "ok", fast
    words = fast_ninfer(*FP8).decode_words(fast[1], x.shape)
    xb = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    scale = bf16_oracle(np.abs(xb).max(axis=1) / F32(448))
    widened = (scale.astype(np.uint32) << 16).view(np.float32)
    normalised = np.clip(xb * (F32(1) / widened)[:, None], F32(-448), F32(448))
    want = normalised.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert words["scales"].reshape(-1).tolist() == scale.tolist()
    assert np.asarray(words["codes"]).reshape(x.shape).tolist() == want.tolist()


@EXAMPLES
@given(st.integers(1, 32), st.sampled_from([1e-40, 1e-39, 5e-39, 1e-38, 1.1754942e-38]))
def test_fp8_row_whose_scale_underflows_is_refused(k: int, amax: float) -> None:
    """A row whose bf16 scale amax/448 rounds to 0 is refused by both engines with the
    inverse-overflow rule: the rescue word 0x0001 is 2^-133 and 1/2^-133 > FLT_MAX (2^128), so
    the encoder's step 5 fails whatever non-zero word step 4 chose (spec/ninfer3.md
    §fp8-row-maxabs). This is why mutating the fp8 rescue word is an equivalent mutant
    (tools/mutations.py)."""
    x = np.zeros((1, k), np.float32)
    x[0, k - 1] = amax
    assert bf16_oracle(np.abs(x).max(axis=1) / F32(448)).tolist() == [0]
    for get in (fast_ninfer, ref_ninfer):
        with pytest.raises(InvalidError) as err:
            get(*FP8).encode(x, x.shape)
        assert err.value.rule == "ninfer3.codec.fp8_row_maxabs.inverse_overflow"


@EXAMPLES
@given(st.lists(st.one_of(nan_bits(), st.integers(0, 2**32 - 1)), min_size=1, max_size=16))
def test_bf16_nan_words_fast_eq_ref_are_quiet_nans(bits: list[int]) -> None:
    """Every NaN encodes to sign | 0x7FC0, the quiet NaN with its sign kept (spec/ninfer3.md
    §fp8-row-maxabs); ml_dtypes reads each such word as NaN of that sign."""
    x = np.array(bits, dtype=np.uint32).view(np.float32)
    layout = "contiguous_le_v1"
    fast = fast_ninfer("bf16", layout).encode(x, x.shape)
    assert fast == ref_ninfer("bf16", layout).encode(x, x.shape)
    words = np.frombuffer(fast, "<u2")
    nan = np.isnan(x)
    sign = (np.array(bits, dtype=np.uint32) >> 16) & 0x8000
    assert words[nan].tolist() == (sign[nan] | 0x7FC0).tolist()
    as_bf16 = words.view(ml_dtypes.bfloat16).astype(np.float32)
    assert np.isnan(as_bf16[nan]).all()
    assert np.signbit(as_bf16[nan]).tolist() == (sign[nan] != 0).tolist()


@EXAMPLES
@given(st.lists(st.one_of(nan_bits(), st.integers(0, 2**32 - 1)), min_size=1, max_size=16))
def test_vqf_f16_nan_words_fast_eq_ref(bits: list[int]) -> None:
    """RNE mode writes every NaN as sign | 0x7E00, NumPy's quiet float16 NaN (spec/vqf.md
    §f16-rne); both modes equal ref, on the C kernels and the NumPy paths."""
    x = np.array(bits, dtype=np.uint32).view(np.float32).reshape(1, -1)
    cols = x.shape[1]
    for mode in ("rne", "trunc_ftz"):
        same_outcome(
            lambda m=mode: fast_vqf("f16").encode(x, 1, cols, mode=m),
            lambda m=mode: ref_vqf("f16").encode(x, 1, cols, mode=m),
            2,
        )
    words = np.frombuffer(fast_vqf("f16").encode(x, 1, cols, mode="rne"), "<u2")
    nan = np.isnan(x[0])
    sign = (np.array(bits, dtype=np.uint32) >> 16) & 0x8000
    assert words[nan].tolist() == (sign[nan] | 0x7E00).tolist()
    quiet = np.float16(np.nan).view(np.uint16)
    assert int(quiet) & 0x7FFF == 0x7E00  # the spec's word is NumPy's own quiet NaN
