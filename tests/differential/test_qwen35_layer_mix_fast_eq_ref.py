"""The Qwen3.5 layer calls of fast/csrc/qwen35_layer.c equal the reference bit for bit.

`wf_q35_gdn_mix` (a Gated DeltaNet layer's work between its input projections and its output
projection, T tokens of one sequence in one call) against the reference's steps token by token:
the causal convolution over the cached window (`ref.numerics.deltanet.causal_conv`,
spec/numerics.md §gdn-conv) and SiLU, the L2 normalisation of q (then ÷ sqrt(dk)) and k
(spec/numerics.md §gdn-l2norm), beta = sigmoid(b) and g = −exp(A_log) · softplus(a + dt_bias)
(spec/models.md §qwen35; spec/numerics.md §softplus), the delta rule (`delta_rule_step`,
spec/numerics.md §gdn-gates) and the gated RMSNorm (`gated_rmsnorm`, spec/numerics.md
§gated-rmsnorm); the window and the states it leaves. Every kernel path usable here, 1–3 threads
(value heads; 3–1 for the per-token parts), token counts within one pool chunk and across
several; hard values (±0, subnormals, the largest finite floats) in the projections, the window,
the states and the weights; the gate inputs also at softplus's threshold and where exp under- or
overflows; a row stride wider than the parts.

`wf_q35_attention_mix` (a full-attention layer's work between its projections and its output
projection) against the reference's q_norm / k_norm (`ref.numerics.norm.rmsnorm` per head), the
partial rotation (`ref.numerics.rope.apply_rope` on the first 2 · rh dims), K / V written at each
token's slot, GQA attention over rows 0 .. slot and att · sigmoid(gate) (spec/numerics.md
§rmsnorm, §rotation, §attention, §silu); rotations of no, some and all pairs.
"""

from __future__ import annotations

import ctypes

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.layer_ops import bits, hard_vectors, ref_attend

from weightfile.fast._native import WfQ35Attention, WfQ35Gdn, address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.deltanet import (
    L2NORM_EPS,
    causal_conv,
    delta_rule_step,
    gated_rmsnorm,
    l2normalize,
)
from weightfile.ref.numerics.exp import exp, sigmoid, silu
from weightfile.ref.numerics.f32 import ONE
from weightfile.ref.numerics.log import softplus
from weightfile.ref.numerics.norm import rmsnorm
from weightfile.ref.numerics.rope import apply_rope

#: Token counts within one pool chunk (8) and across two or three.
TOKENS = st.one_of(st.integers(1, 4), st.integers(9, 20))
GATE_EDGES = [20.0, 19.999998, 20.000002, -88.0, -104.0, 89.0, 0.0, -0.0, 1.0, -1.0]


def ref_token(p, row, window, states):
    """One token through the reference's steps: (parts, window, states) after it."""
    conv_w, a_exp, dt_bias, norm_w, eps, (hv, hk, dk, dv) = p
    chans = conv_w.shape[1]
    kg, vd, per = hk * dk, hv * dv, hv // hk
    window = [*window, row[:chans]]
    conv = silu(np.array(causal_conv(conv_w, window), np.float32))
    window = window[1:]
    scale = np.sqrt(np.float32(dk))
    q = [[x / scale for x in l2normalize(conv[h * dk : (h + 1) * dk])] for h in range(hk)]
    k = [l2normalize(conv[kg + h * dk : kg + (h + 1) * dk]) for h in range(hk)]
    z, a, b = row[chans : chans + vd], row[chans + vd : chans + vd + hv], row[chans + vd + hv :]
    beta = sigmoid(b[:hv])
    g = -(a_exp * softplus(a + dt_bias))
    decay = exp(g)
    core, normed = [], []
    for h in range(hv):
        v = conv[2 * kg + h * dv : 2 * kg + (h + 1) * dv]
        states[h], o = delta_rule_step(states[h], q[h // per], k[h // per], v, decay[h], beta[h])
        core += o
        normed += gated_rmsnorm(o, norm_w, z[h * dv : (h + 1) * dv], eps, silu)
    parts = [conv, np.ravel(q), np.ravel(k), beta, g, core, normed]
    return [np.asarray(x, np.float32) for x in parts], window


@settings(max_examples=40, deadline=None)
@given(
    heads=st.sampled_from([(1, 1), (2, 1), (4, 2), (9, 3)]),
    dk=st.sampled_from([1, 3, 8, 9]),
    dv=st.sampled_from([1, 7, 8, 16]),
    kernel=st.integers(1, 5),
    tokens=TOKENS,
    extra=st.integers(0, 3),
    data=st.data(),
)
def test_gdn_mix_equals_ref(heads, dk, dv, kernel, tokens, extra, data) -> None:
    hv, hk = heads
    chans, vd = 2 * hk * dk + hv * dv, hv * dv
    ld = chans + vd + 2 * hv + extra
    proj = data.draw(hard_vectors(tokens * ld, 1.0)).reshape(tokens, ld)
    edges = st.lists(st.sampled_from(GATE_EDGES), min_size=tokens * hv, max_size=tokens * hv)
    if data.draw(st.booleans()):  # the decay gate's inputs at the edges of softplus and exp
        proj[:, chans + vd : chans + vd + hv] = np.array(data.draw(edges), np.float32).reshape(
            tokens, hv
        )
    window = np.zeros((0, chans), np.float32)
    if kernel > 1:
        window = data.draw(hard_vectors((kernel - 1) * chans, 1.0)).reshape(kernel - 1, chans)
    states = data.draw(hard_vectors(hv * dk * dv, 1.0)).reshape(hv, dk, dv)
    conv_w = data.draw(hard_vectors(kernel * chans, 0.5)).reshape(kernel, chans)
    with np.errstate(all="ignore"):
        a_exp = exp(data.draw(hard_vectors(hv, 1.0)))
    dt_bias, norm_w = data.draw(hard_vectors(hv, 1.0)), data.draw(hard_vectors(dv, 1.0))
    eps = np.float32(1e-6)
    p = (conv_w, a_exp, dt_bias, norm_w, eps, (hv, hk, dk, dv))
    want_states, win, want = states.copy(), list(window), []
    with np.errstate(all="ignore"):
        for t in range(tokens):
            parts, win = ref_token(p, proj[t, : ld - extra], win, want_states)
            want.append(parts)
    want_parts = [np.concatenate([w[i] for w in want]) for i in range(7)]
    layer = WfQ35Gdn(*map(address, (conv_w, a_exp, dt_bias, norm_w)), kernel, hv, hk, dk, dv, eps,
                     L2NORM_EPS)  # fmt: skip
    per = sum(x.size for x in want_parts)
    for isa in each_isa():
        for threads in (1, 2, 3):
            w, s = window.copy(), states.copy()
            out = np.full(per + 1, np.nan, np.float32)
            out[-1] = 7.0  # a guard past the end
            status = kernels().wf_q35_gdn_mix(
                ctypes.addressof(layer), address(proj), ld, tokens, address(w), address(s),
                address(out), threads, 4 - threads,
            )  # fmt: skip
            assert status == 0
            got, at = [], 0
            for x in want_parts:
                got.append(out[at : at + x.size])
                at += x.size
            where = (isa, threads)
            for name, g, x in zip(("conv", "q", "k", "beta", "g", "core", "normed"), got,
                                  want_parts, strict=True):  # fmt: skip
                assert bits(g) == bits(x), (name, where)
            assert bits(s) == bits(want_states), where
            assert bits(w) == bits(np.array(win, np.float32).reshape(kernel - 1, chans)), where
            assert out[-1] == 7.0, where


def ref_attention_token(p, row, cos, sin, keys, values, slot):
    """One token through the reference's attention steps, its K / V written at `slot` first:
    [qn, kn, qr, kr, att, gated]."""
    q_norm, k_norm, eps, (heads, kvh, hd) = p
    qd, kvd, rh = heads * hd, kvh * hd, len(cos)

    def norm_rope(x, w, n):
        normed, rotated = [], []
        for h in range(n):
            v = rmsnorm(x[h * hd : (h + 1) * hd], w, eps)
            normed += v
            rotated += apply_rope(v[: 2 * rh], cos, sin) + v[2 * rh :]
        return normed, rotated

    qn, qr = norm_rope(row[:qd], q_norm, heads)
    kn, kr = norm_rope(row[2 * qd : 2 * qd + kvd], k_norm, kvh)
    keys[slot], values[slot] = kr, row[2 * qd + kvd : 2 * qd + 2 * kvd]
    att = ref_attend(np.array(qr, np.float32), keys[: slot + 1], values[: slot + 1], heads, kvh, hd)
    gated = [a * (ONE / (ONE + exp(-g))) for a, g in zip(att, row[qd : 2 * qd], strict=True)]
    return [np.asarray(x, np.float32) for x in (qn, kn, qr, kr, att, gated)]


@settings(max_examples=40, deadline=None)
@given(
    heads=st.sampled_from([(1, 1), (2, 1), (4, 2), (6, 3)]),
    hd=st.sampled_from([2, 8, 12, 32]),
    tokens=TOKENS,
    past=st.integers(0, 4),
    extra=st.integers(0, 3),
    data=st.data(),
)
def test_attention_mix_equals_ref(heads, hd, tokens, past, extra, data) -> None:
    """Token t (after `past` cached rows) writes row past + t and attends rows 0 .. past + t;
    rotation of 0 .. hd / 2 pairs (partial, whole, none)."""
    h, kvh = heads
    qd, kvd = h * hd, kvh * hd
    rh = data.draw(st.integers(0, hd // 2))
    ld = 2 * qd + 2 * kvd + extra
    proj = data.draw(hard_vectors(tokens * ld, 1.0)).reshape(tokens, ld)
    cos = sin = np.zeros((tokens, 0), np.float32)
    if rh:
        cos = data.draw(hard_vectors(tokens * rh, 1.0)).reshape(tokens, rh)
        sin = data.draw(hard_vectors(tokens * rh, 1.0)).reshape(tokens, rh)
    cap = past + tokens + data.draw(st.integers(0, 2))
    keys = data.draw(hard_vectors(cap * kvd, 1.0)).reshape(cap, kvd)
    values = data.draw(hard_vectors(cap * kvd, 1.0)).reshape(cap, kvd)
    q_norm, k_norm = data.draw(hard_vectors(hd, 1.0)), data.draw(hard_vectors(hd, 1.0))
    eps = np.float32(1e-6)
    p = (q_norm, k_norm, eps, (h, kvh, hd))
    want_k, want_v, want = keys.copy(), values.copy(), []
    with np.errstate(all="ignore"):
        for t in range(tokens):
            want.append(ref_attention_token(p, proj[t], cos[t], sin[t], want_k, want_v, past + t))
    want_parts = [np.concatenate([w[i] for w in want]) for i in range(6)]
    layer = WfQ35Attention(address(q_norm), address(k_norm), h, kvh, hd, rh, eps)
    slots = np.arange(past, past + tokens, dtype=np.int64)
    per = sum(x.size for x in want_parts)
    for isa in each_isa():
        for threads in (1, 2, 3):
            k, v = keys.copy(), values.copy()
            out = np.full(per + 1, np.nan, np.float32)
            out[-1] = 7.0  # a guard past the end
            kernels().wf_q35_attention_mix(
                ctypes.addressof(layer), address(proj), ld, tokens, address(cos), address(sin),
                address(k), address(v), address(slots), address(out), threads, 4 - threads,
            )  # fmt: skip
            at, where = 0, (isa, threads)
            for name, x in zip(("qn", "kn", "qr", "kr", "att", "gated"), want_parts, strict=True):
                assert bits(out[at : at + x.size]) == bits(x), (name, where)
                at += x.size
            assert bits(k) == bits(want_k) and bits(v) == bits(want_v), where
            assert out[-1] == 7.0, where
