"""The FFN half of a layer on arrays [T, width]: dense SwiGLU, or MoE with a shared expert
(spec/models.md §qwen35, §qwen35-ffn, §qwen3-moe-forward).

Dense: the reference's gate, up, SwiGLU (C kernel) and down. MoE: the router product, its
softmax in C (`router_softmax`, shared with Qwen3-MoE), then the reference's own `choose` (top-k
and renormalisation: a few scalar operations on k values, so no second implementation to keep
equal); each chosen expert, in ascending index, over the tokens that chose it, added as
`out ← out + w · y` from zeros (each token meets its experts in ascending index, the reference's
order); the shared expert, its sigmoid gate and `routed + score · shared`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.layers.moe import expert_lists, router_softmax
from weightfile.fast.layers.swiglu import swiglu
from weightfile.fast.numerics import matrix as numerics_matrix
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.layers.moe import choose
from weightfile.ref.layers.trace import emit
from weightfile.ref.qwen35.trace import DENSE_OPS, MOE_OPS
from weightfile.ref.qwen35.weights import MoeWeights

from .matrix import NfMatrix, ProductSet, matmat_set
from .ops import rmsnorm, sigmoid


def swiglu_ffn(w, n: np.ndarray, threads: int) -> tuple[np.ndarray, ...]:
    """(gate, up, silu(gate) · up, down) of every token through one SwiGLU FFN."""
    g, u = matmat_set((w.gate, w.up), n, threads)  # one pool run for the two
    sw = swiglu(g, u)
    return g, u, sw, w.down.matmat(sw, threads)


class ExpertsBinding:
    """A MoE layer's routed experts bound for `wf_q35_experts` (fast/csrc/qwen35_moe.c): each
    expert's gate / up as one ProductSet (blocks) and its down, their structs' addresses in
    arrays indexed by expert. `fused` is False when some expert matrix is not read in place (a
    Hadamard input): `routed` then runs the experts one at a time."""

    def __init__(self, w) -> None:
        self.fused = all(isinstance(m, NfMatrix) for e in w.experts for m in (e.gate, e.up, e.down))
        if self.fused:
            self.sets = [
                (ProductSet((e.gate, e.up), blocks=True), ProductSet((e.down,))) for e in w.experts
            ]
            self.gate_up, self.down = (
                np.array([ctypes.addressof(s[j].struct) for s in self.sets], np.int64)
                for j in (0, 1)
            )


def routed(model, i: int, w, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(router logits [T, E], Σ weight · expert(n) over each token's routes [T, H]): the chosen
    experts in one C call when they are read in place, else one expert at a time."""
    logits = w.router.matmat(n, model.threads)
    k = model.config.num_experts_per_tok
    routes = [choose(model.kernels, list(row), k) for row in router_softmax(logits)]
    out = np.zeros_like(n)
    b = model.bound((i, "experts"), lambda: ExpertsBinding(w))
    if b.fused:
        n = np.ascontiguousarray(n, dtype=np.float32)
        ids, start, tok, wt = expert_lists(routes)
        status = kernels().wf_q35_experts(
            address(b.gate_up), address(b.down), address(n), n.shape[0], n.shape[1], ids.size,
            address(ids), address(start), address(tok), address(wt), address(out),
            model.threads, numerics_matrix.MIN_ELEMENTS_PER_THREAD,
        )  # fmt: skip
        if status:
            raise MemoryError("wf_q35_experts: out of memory")
        return logits, out
    for e in sorted({e for r in routes for e, _ in r}):  # ascending expert index
        rows = [t for t, r in enumerate(routes) if any(x == e for x, _ in r)]
        weight = np.array([[wt for x, wt in routes[t] if x == e] for t in rows], np.float32)
        y = swiglu_ffn(w.experts[e], n[rows], model.threads)[3]
        out[rows] = out[rows] + weight * y  # one rounding for the product, one for the add
    return logits, out


def ffn_block(model, i: int, w, h: np.ndarray, hook) -> np.ndarray:
    """out = h + FFN(zero-centred RMSNorm(h)) for every token of the call."""
    n = rmsnorm(h, model.post_norms[i], model.eps)
    if isinstance(w, MoeWeights):
        logits, moe = routed(model, i, w, n)
        shared = swiglu_ffn(w.shared, n, model.threads)[3]
        score = sigmoid(w.shared_score.matmat(n, model.threads))  # [T, 1]
        parts: tuple[np.ndarray, ...] = (logits, moe, shared, score, moe + score * shared)
        table = MOE_OPS
    else:
        products = model.bound((i, "ffn"), lambda: ProductSet((w.gate, w.up), blocks=True))
        g, u = products.split(products(n, model.threads))  # one pool run for the two
        sw = swiglu(g, u)
        parts = (g, u, sw, w.down.matmat(sw, model.threads))
        table = DENSE_OPS
    out = h + parts[-1]
    if hook is not None:
        middle = dict(zip(table[1:-1], parts, strict=True))  # the parts, in the table's order
        emit(hook, i, table, {"ffn_norm": n, **middle, "ffn_residual": out})
    return out
