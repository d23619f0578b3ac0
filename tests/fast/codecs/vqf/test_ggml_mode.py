"""fast's mode="ggml" equals the `gguf` package (ggml's reference quantisers) on both fast paths.
The oracle quirks are those listed in tests/ref/codecs/vqf/test_ggml_mode.py."""

from __future__ import annotations

import gguf
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies.codecs_vqf import finite_f32

from weightfile.fast.codecs.vqf import _native as native
from weightfile.fast.codecs.vqf import q4_0, q8_0


@st.composite
def ggml_blocks(draw: st.DrawFn) -> np.ndarray:
    """[rows, 32·k] finite float32; blocks whose max |x| is below 2^-100 are made exact zeros."""
    rows, nb = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    x = draw(hnp.arrays(np.float32, (rows, 32 * nb), elements=finite_f32()))
    blocks = x.reshape(-1, 32)
    blocks[np.abs(blocks).max(axis=1) < np.float32(2.0**-100)] = 0.0
    return blocks.reshape(rows, 32 * nb)


@given(ggml_blocks())
def test_ggml_mode_equals_gguf_with_and_without_the_c_kernels(x: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        want8 = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0).tobytes()
        want4 = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q4_0).tobytes()
    assert q8_0.encode(x, *x.shape, mode="ggml") == want8
    assert q4_0.encode(x, *x.shape, mode="ggml") == want4
    with native.disabled():
        assert q8_0.encode(x, *x.shape, mode="ggml") == want8
        assert q4_0.encode(x, *x.shape, mode="ggml") == want4


@given(st.integers(1, 4), st.integers(1, 3), st.data())
def test_decoders_equal_gguf_dequantize_on_any_bytes(
    rows: int, nb: int, data: st.DataObject
) -> None:
    """The "dequantize random data" check: any scale bits (subnormal, Inf, NaN) and any codes."""
    for codec, qtype, width in ((q8_0, gguf.GGMLQuantizationType.Q8_0, 34),
                                (q4_0, gguf.GGMLQuantizationType.Q4_0, 18)):  # fmt: skip
        payload = data.draw(st.binary(min_size=rows * nb * width, max_size=rows * nb * width))
        raw = np.frombuffer(payload, dtype=np.uint8).reshape(rows, nb * width)
        with np.errstate(all="ignore"):
            want = gguf.quants.dequantize(raw, qtype).astype(np.float32).view(np.uint32)
        for path in (True, False):
            with native.disabled() if not path else np.errstate():
                got = codec.decode(payload, rows, 32 * nb).view(np.uint32)
            assert np.array_equal(got, want)
