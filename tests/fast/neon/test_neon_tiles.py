"""The MoE column band read in place and the prefill attention tiles on the NEON / dotprod path
equal the reference bit for bit under qemu-aarch64 (issue 33 items 1-2).

The folder's cross-built driver: `q8band` runs a column band of a stacked payload through the
products with `group_stride` (fast/csrc/wf_kernels.h; the band's first unit and the whole
matrix's row-group length), `attend_tile` a tile of tokens × every query head of a kv head
(fast/csrc/attention_tiles.c, its NEON body) with slots that skip and repeat positions.
"""

from __future__ import annotations

import numpy as np
import pytest
from emulated import QemuDriver, same_bits
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.layer_ops import bits, hard_vectors
from strategies.weights import QUANT_LAYOUTS, activations, quant_payload, quant_words

from weightfile.fast.numerics.matrix import KINDS
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_moe.bands import col_band_view
from weightfile.spec.codecs.vqf.registry import CODECS
from weightfile.spec.numerics.profile import CANONICAL

#: Extreme words overflow the reference's float32 arithmetic to inf/NaN, as the contract defines.
pytestmark = pytest.mark.filterwarnings(
    "ignore:overflow encountered:RuntimeWarning", "ignore:invalid value encountered:RuntimeWarning"
)


@settings(max_examples=6, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    layout=st.sampled_from(sorted(QUANT_LAYOUTS)),
    experts=st.integers(2, 3),
    tokens=st.integers(1, 5),
)
def test_column_band_in_place_under_neon(driver: QemuDriver, seed, layout, experts, tokens):
    rng = np.random.default_rng(seed)
    g = CODECS[layout].row_group
    rows, width = 8 * max(g, 1) if g > 1 else 9, 64
    words = quant_words(rng, layout, rows, experts * width)
    payload = np.frombuffer(quant_payload(layout, words), dtype=np.uint8)
    x = activations(rng, tokens, width)
    t = CODECS[layout].tiling
    geometry = [t.group_rows, t.chunk_bytes, t.xor] if t else [1, 0, 0]
    k = kernels_for(CANONICAL)
    e = int(rng.integers(experts))
    lo, hi = e * width, (e + 1) * width
    view, stride = col_band_view(layout, payload, rows, experts * width, lo, hi)
    offset = int(view.ctypes.data - payload.ctypes.data)
    band = QuantMatrix(
        np.ascontiguousarray(words.codes[:, lo:hi]),
        np.ascontiguousarray(words.scale_bits[:, lo // 32 : hi // 32]),
    )
    want = [k.matvec(band, list(row)) for row in x]
    kind = KINDS[CODECS[layout].base]
    for threads in (1, 3):
        params = [rows, width, tokens, kind, *geometry, payload.size, threads, offset, stride]
        same_bits(driver.run("q8band", params, payload.tobytes(), x), want)


@settings(max_examples=6, deadline=None)
@given(
    data=st.data(),
    shape=st.sampled_from([(2, 1), (4, 2), (8, 1), (3, 1)]),
    hd=st.sampled_from([32, 64]),
    tokens=st.integers(1, 7),
    scale=st.sampled_from([0.05, 1.0, 12.0]),
)
def test_attention_tiles_under_neon(driver: QemuDriver, data, shape, hd, tokens, scale) -> None:
    heads, kv_heads = shape
    steps = data.draw(st.lists(st.integers(0, 6), min_size=tokens, max_size=tokens))
    slots = np.cumsum(steps).astype(np.int64)
    npos, stride = int(slots[-1]) + 1, kv_heads * hd
    q = data.draw(hard_vectors(tokens * heads * hd, scale)).reshape(tokens, heads * hd)
    keys = data.draw(hard_vectors(npos * stride, scale)).reshape(npos, stride)
    values = data.draw(hard_vectors(npos * stride, 1.0)).reshape(npos, stride)
    keys[1::2] = keys[0]  # ties
    ref = kernels_for(CANONICAL)
    want: list[float] = []
    with np.errstate(all="ignore"):
        for t in range(tokens):
            n = int(slots[t]) + 1
            for h in range(heads):
                kv = h // (heads // kv_heads) * hd
                ks = [list(keys[j, kv : kv + hd]) for j in range(n)]
                vs = [list(values[j, kv : kv + hd]) for j in range(n)]
                want += ref.attend(list(q[t, h * hd : (h + 1) * hd]), ks, vs)
    params = [tokens, npos, heads, kv_heads, hd, *slots.tolist()]
    got = driver.run("attend_tile", params, q, keys, values)
    assert bits(got) == bits(want)
