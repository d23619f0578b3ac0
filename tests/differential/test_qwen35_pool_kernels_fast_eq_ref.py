"""The Qwen3.5 kernels that take a whole call at once equal the reference bit for bit:
`wf_gdn_steps` (fast/csrc/ninfer.c: T tokens of one sequence, value heads split over threads)
against `ref.numerics.deltanet.delta_rule_step` token by token (spec/numerics.md §gdn-gates), and
`wf_attend_tokens` (fast/csrc/layers.c: T tokens, (token tile, kv head) units over threads)
against the reference's GQA attention of each token over its cache rows (spec/numerics.md
§attention). 1, 2 and 3 threads on every kernel path usable here; enough value heads (up to 20)
that the pool's chunks of 8 heads really split; hard values (±0, subnormals, the largest finite
floats, exact ones) in states, q, k, v; decay and beta 0, 1 or anything between. And
`wf_gdn_conv` (the causal convolution's tap sums of T tokens) against
`ref.numerics.deltanet.causal_conv` of each token's window (spec/numerics.md §gdn-conv); and
`wf_softplus_array` (the decay gate's softplus with the contract's log, log1p and exp) against
`ref.numerics.log.softplus` (spec/numerics.md §softplus, §log-f32, §log1p).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.layer_ops import bits, hard_vectors, ref_attend

from weightfile.fast._native import address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.deltanet import causal_conv, delta_rule_step
from weightfile.ref.numerics.log import softplus

UNIT = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0, width=32))


def ref_gdn(states, q, k, v, decay, beta):
    """The reference's delta rule over T tokens and every value head: (out [T, hv, dv], states)."""
    states = states.copy()
    tokens, hv, dv = v.shape
    per = hv // q.shape[1]
    out = np.empty((tokens, hv, dv), np.float32)
    with np.errstate(all="ignore"):
        for t in range(tokens):
            for h in range(hv):
                g, d, b = h // per, decay[t, h], beta[t, h]
                s, o = delta_rule_step(states[h], q[t, g], k[t, g], v[t, h], d, b)
                states[h], out[t, h] = s, np.asarray(o, np.float32)
    return out, states


@settings(max_examples=30, deadline=None)
@given(
    heads=st.sampled_from([(1, 1), (2, 1), (16, 4), (17, 1), (20, 20)]),
    dk=st.sampled_from([1, 3, 8, 9, 16]),
    dv=st.sampled_from([1, 7, 8, 12, 16, 32]),
    tokens=st.integers(1, 4),
    data=st.data(),
)
def test_gdn_steps_equal_ref(heads, dk: int, dv: int, tokens: int, data) -> None:
    hv, hk = heads
    states = data.draw(hard_vectors(hv * dk * dv, 1.0)).reshape(hv, dk, dv)
    q = data.draw(hard_vectors(tokens * hk * dk, 0.5)).reshape(tokens, hk, dk)
    k = data.draw(hard_vectors(tokens * hk * dk, 0.5)).reshape(tokens, hk, dk)
    v = data.draw(hard_vectors(tokens * hv * dv, 1.0)).reshape(tokens, hv, dv)
    gates = st.lists(UNIT, min_size=tokens * hv, max_size=tokens * hv)
    decay = np.array(data.draw(gates), np.float32).reshape(tokens, hv)
    beta = np.array(data.draw(gates), np.float32).reshape(tokens, hv)
    want_out, want_states = ref_gdn(states, q, k, v, decay, beta)
    for isa in each_isa():
        for threads in (1, 2, 3):
            s = states.copy()
            out = np.full((tokens, hv, dv), np.nan, np.float32)
            status = kernels().wf_gdn_steps(
                address(s), address(q), address(k), address(v), address(decay), address(beta),
                tokens, hv, hk, dk, dv, address(out), threads,
            )  # fmt: skip
            assert status == 0
            where = (isa, threads)
            assert bits(out) == bits(want_out), where
            assert bits(s) == bits(want_states), where


@settings(max_examples=30, deadline=None)
@given(
    heads=st.sampled_from([(1, 1), (4, 2), (8, 2), (6, 3)]),
    hd=st.sampled_from([8, 12, 32, 64]),
    tokens=st.integers(1, 20),
    past=st.integers(0, 5),
    data=st.data(),
)
def test_attend_tokens_equal_ref(heads, hd: int, tokens: int, past: int, data) -> None:
    """Token t (after `past` cached rows) attends cache rows 0 .. past + t."""
    h, kvh = heads
    npos = past + tokens
    q = data.draw(hard_vectors(tokens * h * hd, 1.0)).reshape(tokens, h * hd)
    keys = data.draw(hard_vectors(npos * kvh * hd, 1.0)).reshape(npos, kvh * hd)
    values = data.draw(hard_vectors(npos * kvh * hd, 1.0)).reshape(npos, kvh * hd)
    slots = np.arange(past, npos, dtype=np.int64)
    want = [
        ref_attend(q[t], keys[: s + 1], values[: s + 1], h, kvh, hd) for t, s in enumerate(slots)
    ]
    for isa in each_isa():
        for threads in (1, 2, 3):
            att = np.empty((tokens, h * hd), np.float32)
            kernels().wf_attend_tokens(
                address(q), h * hd, address(keys), address(values), kvh * hd, address(slots),
                tokens, h, kvh, hd, address(att), threads,
            )  # fmt: skip
            assert bits(att) == bits(np.array(want, np.float32)), (isa, threads)


@settings(max_examples=40, deadline=None)
@given(
    kernel=st.integers(1, 10),
    channels=st.integers(1, 150),
    tokens=st.integers(1, 5),
    data=st.data(),
)
def test_gdn_conv_equals_ref(kernel: int, channels: int, tokens: int, data) -> None:
    """Kernels past eight taps (two terms a lane), channel counts across the 64-channel blocks."""
    seq = data.draw(hard_vectors((tokens + kernel - 1) * channels, 1.0))
    seq = seq.reshape(tokens + kernel - 1, channels)
    w = data.draw(hard_vectors(kernel * channels, 0.5)).reshape(kernel, channels)
    with np.errstate(all="ignore"):
        want = [causal_conv(w, seq[t : t + kernel]) for t in range(tokens)]
    for isa in each_isa():
        out = np.full((tokens, channels), np.nan, np.float32)
        kernels().wf_gdn_conv(address(seq), address(w), tokens, channels, kernel, address(out))
        assert bits(out) == bits(np.array(want, np.float32)), isa


#: Around softplus's threshold (20) and where exp underflows (u = 1 + y rounds to 1, y subnormal),
#: overflows, or is exactly 1; the specials.
SOFTPLUS_EDGES = [20.0, np.nextafter(np.float32(20), np.float32(21)), 19.999998, 0.0, -0.0, 1.0]
SOFTPLUS_EDGES += [-17.0, -17.33, -88.0, -103.9, -104.0, -150.0, 88.7, 89.0, np.inf, -np.inf]
SOFTPLUS_EDGES += [np.nan, 3.4e38, -3.4e38, 1e-45, -1e-45, 2.0**-126, 0.5, -0.5, 7.25]


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(
        st.one_of(
            st.sampled_from(SOFTPLUS_EDGES),
            st.floats(-110.0, 30.0, width=32),
            st.floats(width=32, allow_nan=True, allow_infinity=True),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_softplus_equals_ref(xs) -> None:
    x = np.array(xs, np.float32)
    with np.errstate(all="ignore"):
        want = softplus(x)
    for isa in each_isa():
        out = np.full_like(x, np.nan)
        kernels().wf_softplus_array(address(x), x.size, address(out))
        assert bits(out) == bits(want), isa
