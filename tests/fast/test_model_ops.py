"""fast/csrc/model_ops.c against the reference's element-wise operations (spec/numerics.md §exp,
§silu).

swiglu runs a vector at a time (8 AVX2 lanes, 4 NEON; fast/csrc/ops_body.h) with a scalar tail,
so lengths cover both; the inputs are arbitrary bit patterns (NaN payloads, infinities,
subnormals, the exp clamps' neighbours). Every kernel path usable here runs (spec/numerics.md
§kernel-paths: portable takes the scalar loops).
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from weightfile.fast._native import address, each_isa
from weightfile.fast.layers.swiglu import swiglu
from weightfile.fast.numerics.matrix import kernels, quantize_activation
from weightfile.ref.numerics.exp import exp, silu

#: exp's overflow / underflow thresholds and their neighbours, ±0, ±inf, a NaN with payload.
EDGES = [0x42B17217, 0x42B17218, 0x42B17216, 0xC2CFF1B4, 0xC2CFF1B5, 0xC2CFF1B3]
EDGES += [0, 0x7F800000, 0x7FC01234, 0x7FA00001, 0x00000001, 0x3F000000]
EDGES += [w ^ 0x80000000 for w in EDGES]  # swiglu takes exp of -g


def bits_arrays(min_size: int = 0) -> st.SearchStrategy[np.ndarray]:
    in_range = st.floats(-110.0, 110.0, width=32).map(
        lambda f: int(np.array(f, dtype=np.float32).view(np.uint32))
    )  # where exp neither overflows nor underflows: most of a random bit pattern's range does
    word = st.one_of(st.sampled_from(EDGES), st.integers(0, 2**32 - 1), in_range)
    return st.lists(word, min_size=min_size, max_size=67).map(
        lambda w: np.array(w, dtype=np.uint32).view(np.float32)
    )


def bits(a: np.ndarray) -> list[int]:
    """uint32 views with every NaN as one pattern: spec/numerics.md §special-values leaves NaN sign
    and payload open."""
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32)).tolist()


@given(bits_arrays())
def test_exp_equals_ref_bits(x: np.ndarray) -> None:
    want = bits(exp(x))
    for _isa in each_isa():
        got = np.empty_like(x)
        kernels().wf_exp_array(address(x), x.size, address(got))
        assert bits(got) == want


@given(st.data())
def test_swiglu_equals_ref_bits(data: st.DataObject) -> None:
    g = data.draw(bits_arrays())
    u = data.draw(bits_arrays(len(g)).map(lambda a: a[: len(g)]))
    with np.errstate(all="ignore"):
        want = (silu(g) * u).astype(np.float32)
    for _isa in each_isa():
        assert bits(swiglu(g, u)) == bits(want)


@given(st.lists(st.floats(-1e4, 1e4, width=32), min_size=64, max_size=64))
def test_swiglu_quantize_equals_swiglu_then_quantize(values: list[float]) -> None:
    g = np.array(values, dtype=np.float32)
    u = g[::-1].copy()
    sw, codes, scales = np.empty_like(g), np.empty(64, np.int8), np.empty(2, np.float32)
    kernels().wf_swiglu_quantize(
        address(g), address(u), 64, address(sw), address(codes), address(scales)
    )
    want = swiglu(g, u)
    want_codes, want_scales = quantize_activation(want.reshape(1, -1))
    assert sw.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    assert codes.tolist() == want_codes[0].tolist()
    assert scales.view(np.uint32).tolist() == want_scales[0].view(np.uint32).tolist()
