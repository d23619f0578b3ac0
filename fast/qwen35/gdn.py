"""Gated DeltaNet for all tokens of a call, on arrays [T, width] (spec/models.md §qwen35;
spec/numerics.md §gdn).

The reference's `gdn_block` with everything that does not depend on the recurrent state done for
all tokens at once: the input norm and the six projections (one pool run); then one C call per
sequence (`wf_q35_gdn_mix`, fast/csrc/qwen35_layer.c) for the rest up to the output projection:
the causal convolution (token t's window is the last kernel − 1 inputs before it, from the cache
or from the call, so it depends on inputs only) as per-channel tap sums, SiLU, the L2
normalisation of q and k, the gates, the delta rule token by token (value heads on the thread
pool) and the gated RMSNorm. Then the output projection and the residual for all tokens again.
A cache that keeps a verification's journal (fast/qwen35/mtp.py) takes the same steps one by one
here (`causal_conv`, `l2_heads`, `gates`, `recurrence`), which note its windows and states.
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np

from weightfile.fast._native import WfQ35Gdn, address
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.layers.trace import emit
from weightfile.ref.numerics.deltanet import L2NORM_EPS
from weightfile.ref.numerics.f32 import ONE
from weightfile.ref.qwen35.config import Qwen35Config
from weightfile.ref.qwen35.trace import GDN_OPS

from .matrix import ProductSet, cached_threads
from .ops import exp, gated_norm, lanes8_sum, rmsnorm, sigmoid, softplus


def runs(caches: list) -> list[tuple[int, int]]:
    """[begin, end) of each run of consecutive tokens sharing a cache (one request's tokens)."""
    out, begin = [], 0
    for t in range(1, len(caches) + 1):
        if t == len(caches) or caches[t] is not caches[begin]:
            out.append((begin, t))
            begin = t
    return out


def causal_conv(i: int, weight: np.ndarray, qkv: np.ndarray, caches: list) -> np.ndarray:
    """spec/numerics.md §gdn-conv silu(Σ_j w[j, c] · window[j, c]) for every token, the window its
    kernel newest inputs, oldest first; each cache keeps the last kernel − 1 inputs."""
    kernel, channels = weight.shape
    w = np.ascontiguousarray(weight, dtype=np.float32)
    out = np.empty((qkv.shape[0], channels), dtype=np.float32)
    for begin, end in runs(caches):
        cache = caches[begin]
        seq = np.concatenate([cache.conv[i], qkv[begin:end]])  # [kernel − 1 + T_r, C]
        kernels().wf_gdn_conv(
            address(seq), address(w), end - begin, channels, kernel, address(out[begin])
        )  # the tap products' sums, one C call
        cache.conv[i] = seq[seq.shape[0] - (kernel - 1) :].copy()
        if (note := getattr(cache, "note_conv", None)) is not None:  # a verification's journal
            note(i, seq, kernel)
    with np.errstate(all="ignore"):
        return out / (ONE + exp(-out))  # spec/numerics.md §silu


def l2_heads(x: np.ndarray, head_dim: int) -> np.ndarray:
    """spec/numerics.md §gdn-l2norm x · r per head, r = 1 / sqrt(Σ x² + eps) [T, heads, dk]."""
    h = x.reshape(x.shape[0], -1, head_dim)
    r = ONE / np.sqrt(lanes8_sum(h * h) + L2NORM_EPS)
    return h * r[..., None]


def gates(w, a: np.ndarray, b: np.ndarray, a_exp: np.ndarray | None = None):
    """beta = sigmoid(b); g = −(exp(A_log) · softplus(a + dt_bias)) (spec/models.md §qwen35);
    `a_exp`: exp(A_log) when the caller keeps it (it depends on the weights alone)."""
    scale = exp(w.a_log) if a_exp is None else a_exp
    with np.errstate(all="ignore"):
        g = -(scale[None, :] * softplus(a + w.dt_bias[None, :]))
    return sigmoid(b), g.astype(np.float32)


def recurrence(i: int, c: Qwen35Config, q, k, v, beta, g, caches: list, threads: int = 1):
    """spec/numerics.md §gdn-gates the delta rule: each run of tokens sharing a cache in one C
    call (`wf_gdn_steps`, value heads on the pool); token by token when the cache keeps a journal
    of its states (a verification's `note_state`)."""
    hv, hk = c.linear_num_value_heads, c.linear_num_key_heads
    dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
    decay = exp(g)
    out = np.empty((q.shape[0], hv, dv), dtype=np.float32)
    q, k = np.ascontiguousarray(q), np.ascontiguousarray(k)
    v = np.ascontiguousarray(v.reshape(-1, hv, dv))
    beta = np.ascontiguousarray(beta)
    lib = kernels()
    for begin, end in runs(caches):
        cache = caches[begin]
        note = getattr(cache, "note_state", None)  # a verification's journal
        steps = [(begin, end)] if note is None else [(t, t + 1) for t in range(begin, end)]
        th = cached_threads(threads, (end - begin) * hv * dk * dv)
        for t0, t1 in steps:
            state = cache.recurrent[i]
            status = lib.wf_gdn_steps(
                address(state), address(q[t0]), address(k[t0]), address(v[t0]),
                address(decay[t0]), address(beta[t0]), t1 - t0, hv, hk, dk, dv,
                address(out[t0]), th,
            )  # fmt: skip
            if status:
                raise MemoryError("wf_gdn_steps: out of memory")
            if note is not None:
                note(i, state)
    return out.reshape(q.shape[0], hv * dv)


class GdnBinding:
    """One Gated DeltaNet layer bound for `wf_q35_gdn_mix` (fast/csrc/qwen35_layer.c): its six
    input projections as one ProductSet and its constants in a `wf_q35_gdn` struct (the arrays
    kept alive here)."""

    def __init__(self, model, w) -> None:
        c = model.config
        mats = (w.query, w.key, w.value, w.z, w.a_projection, w.b_projection)
        self.products = ProductSet(mats)
        self.keep = [
            np.ascontiguousarray(a, dtype=np.float32)
            for a in (w.convolution, exp(w.a_log), w.dt_bias, w.norm)
        ]
        kernel = self.keep[0].shape[0]
        hv, hk = c.linear_num_value_heads, c.linear_num_key_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        dims = (kernel, hv, hk, dk, dv, model.eps, L2NORM_EPS)
        self.struct = WfQ35Gdn(*map(address, self.keep), *dims)
        self.at = ctypes.addressof(self.struct)
        self.channels, self.work = 2 * hk * dk + hv * dv, hv * dk * dv
        self.token_work = self.channels * (kernel + 1) + 2 * hv * dv  # taps, SiLU, gated norm
        # the parts of wf_q35_gdn_mix's output, per token: conv, q, k, beta, g, core, normed
        self.parts = (self.channels, hk * dk, hk * dk, hv, hv, hv * dv, hv * dv)


def run_parts(out: np.ndarray, spans, widths) -> list[np.ndarray]:
    """The parts [T, width] of a layer call's output `out` [T, Σ widths], in which each run
    [begin, end) of n tokens holds its parts end to end (part p as [n, widths[p]]) from its
    first row on: views when the call is one run."""
    bounds = list(itertools.accumulate(widths, initial=0))
    pieces: list[list[np.ndarray]] = [[] for _ in widths]
    for begin, end in spans:
        n, flat = end - begin, out[begin:end].reshape(-1)
        for p, (lo, hi) in enumerate(itertools.pairwise(bounds)):
            pieces[p].append(flat[n * lo : n * hi].reshape(n, hi - lo))
    return [
        x[0] if len(x) == 1 else np.concatenate([np.empty((0, w), np.float32), *x])
        for x, w in zip(pieces, widths, strict=True)
    ]


def mix(b: GdnBinding, i: int, proj: np.ndarray, caches: list, threads: int) -> list[np.ndarray]:
    """wf_q35_gdn_mix on each run of tokens sharing a cache: [conv, q, k, beta, g, core, normed],
    each [T, width]."""
    t, per = proj.shape[0], sum(b.parts)
    out = np.empty((t, per), dtype=np.float32)  # each run's parts end to end, at its first row
    lib = kernels()
    for begin, end in runs(caches):
        cache, n = caches[begin], end - begin
        for store in (cache.conv, cache.recurrent):  # the C call writes them in place
            if not store[i].flags.c_contiguous:
                store[i] = np.ascontiguousarray(store[i])
        status = lib.wf_q35_gdn_mix(
            b.at, address(proj[begin]), proj.shape[1], n, address(cache.conv[i]),
            address(cache.recurrent[i]), address(out[begin]), cached_threads(threads, n * b.work),
            cached_threads(threads, n * b.token_work),
        )  # fmt: skip
        if status:
            raise MemoryError("wf_q35_gdn_mix: out of memory")
    return run_parts(out, runs(caches), b.parts)


def journals(caches: list) -> bool:
    """True when a cache keeps a verification's journal (then the step-by-step path runs)."""
    return any(getattr(c, "note_state", None) is not None for c in caches)


def gdn_block(model, i: int, w, x: np.ndarray, caches: list, hook) -> np.ndarray:
    """One Gated DeltaNet mixer plus its residual, for every token of the call, in order."""
    c, eps, th = model.config, model.eps, model.threads
    kg, dk = c.gdn_key_dim, c.linear_key_head_dim
    b = model.bound((i, "gdn"), lambda: GdnBinding(model, w))
    n = rmsnorm(x, model.input_norms[i], eps)
    proj = b.products(n, th)  # one pool run for the six
    _, _, _, z, a, bb = b.products.split(proj)
    if journals(caches):
        conv = causal_conv(i, w.convolution, np.ascontiguousarray(proj[:, : b.channels]), caches)
        q = l2_heads(conv[:, :kg], dk) / np.sqrt(np.float32(dk))
        k = l2_heads(conv[:, kg : 2 * kg], dk)
        beta, g = gates(w, a, bb, model.a_exp(i, w))
        core = recurrence(i, c, q, k, conv[:, 2 * kg :], beta, g, caches, th)
        normed = gated_norm(core, w.norm, z, c.linear_value_head_dim, eps)
    else:
        conv, q, k, beta, g, core, normed = mix(b, i, proj, caches, th)
    o = w.output.matmat(normed, th)
    h = x + o
    if hook is not None:
        t = x.shape[0]
        rows = dict(
            attn_norm=n, gdn_qkv=proj[:, : b.channels], gdn_z=z, gdn_a=a, gdn_b=bb,
            gdn_conv=conv, gdn_q=q.reshape(t, -1), gdn_k=k.reshape(t, -1), gdn_beta=beta,
            gdn_g=g, gdn_core=core, gdn_norm=normed, gdn_out=o, attn_residual=h,
        )  # fmt: skip
        emit(hook, i, GDN_OPS, rows)
    return h
