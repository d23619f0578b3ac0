"""mode="ggml" equals ggml's reference quantisers, with the `gguf` package as the oracle
(spec/vqf.md §vs-ggml).

Known oracle quirks, excluded here and pinned by hand instead:
* gguf's Q4_0 picks `max` by argmax, so an all-zero block whose first element is -0.0 gets d = +0
  (0x0000); ggml's C loop keeps its starting +0.0 and stores d = -0.0 (0x8000).
* When 1/d overflows (a block whose largest |x| is below ~1e-36), gguf and ggml cast NaN/Inf to
  integers, which C leaves undefined; blocks that small are drawn as exact zeros here.
"""

from __future__ import annotations

import gguf
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies.codecs_vqf import finite_f32

from weightfile.ref.codecs.vqf import q4_0, q8_0

TINY = np.float32(2.0**-100)


@st.composite
def ggml_blocks(draw: st.DrawFn) -> np.ndarray:
    """[rows, 32·k] finite float32 with every block's max |x| either 0 or >= 2^-100."""
    rows, nb = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    x = draw(hnp.arrays(np.float32, (rows, 32 * nb), elements=finite_f32()))
    blocks = x.reshape(-1, 32)
    small = np.abs(blocks).max(axis=1) < TINY
    blocks[small] = 0.0  # +0.0 everywhere: see the module docstring
    return blocks.reshape(rows, 32 * nb)


def _gguf(x: np.ndarray, qtype: gguf.GGMLQuantizationType) -> bytes:
    with np.errstate(all="ignore"):
        return gguf.quants.quantize(x, qtype).tobytes()


@given(ggml_blocks())
def test_q8_0_ggml_mode_equals_gguf(x: np.ndarray) -> None:
    assert q8_0.encode(x, *x.shape, mode="ggml") == _gguf(x, gguf.GGMLQuantizationType.Q8_0)


@given(ggml_blocks())
def test_q4_0_ggml_mode_equals_gguf(x: np.ndarray) -> None:
    assert q4_0.encode(x, *x.shape, mode="ggml") == _gguf(x, gguf.GGMLQuantizationType.Q4_0)


@given(ggml_blocks())
def test_decoders_equal_gguf_dequantize(x: np.ndarray) -> None:
    for codec, qtype in (
        (q8_0, gguf.GGMLQuantizationType.Q8_0),
        (q4_0, gguf.GGMLQuantizationType.Q4_0),
    ):
        payload = codec.encode(x, *x.shape)
        raw = np.frombuffer(payload, dtype=np.uint8).reshape(x.shape[0], -1)
        with np.errstate(all="ignore"):
            want = gguf.quants.dequantize(raw, qtype).astype(np.float32)
        got = codec.decode(payload, *x.shape)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_q4_0_all_zero_block_in_ggml_mode_stores_minus_zero() -> None:
    # ggml: max stays +0.0, d = max / -8 = -0.0 -> f16 0x8000 (spec/vqf.md §vs-ggml says 0x0000:
    # sign differs).
    payload = q4_0.encode(np.zeros(32, np.float32), 1, 32, mode="ggml")
    assert payload == b"\x00\x80" + b"\x88" * 16
    assert _gguf(np.zeros((1, 32), np.float32), gguf.GGMLQuantizationType.Q4_0) == payload
