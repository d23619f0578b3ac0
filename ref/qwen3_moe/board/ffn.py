"""The board engine's Q8 MoE FFN, op by op (spec/numerics.md §board-moe).

One token's FFN input x [d] (after the FFN norm) goes through: the F32 router (one sequential
multiply-then-add chain per expert), the insertion top-k (descending logits, ties to the smaller
expert index), a softmax over the k chosen logits only (glibc `expf`, a sequential sum in rank
order, one reciprocal), each chosen expert's gate and up products on unquantised f32 activations
(per row and 32-column block an FMA chain from 0 over the block's columns, then
acc = fma(d_w, o, acc) over blocks ascending), the exact-form SiLU fl(fl(g / fl(1 + expf(−g)))·u),
the same product for down over the expert's column band, and the combine
y = fl(y + fl(p_j·acc_j)) in rank order from y = 0. A hidden size or expert width that is not a
multiple of 32 makes the engine return y = 0 without computing anything (a defect the profile
reproduces, spec/numerics.md §board-moe-defect).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board import libm
from weightfile.ref.qwen3.board.fma import fma_f32
from weightfile.spec.numerics.constants import QBLOCK

F32 = np.float32
ONE = F32(1.0)


def refused(hidden: int, expert_width: int) -> bool:
    """spec/numerics.md §board-moe-defect True when the engine's Q8 MoE FFN returns zeros
    for this geometry: the hidden size or the expert width not a multiple of 32."""
    return hidden % QBLOCK != 0 or expert_width % QBLOCK != 0


def router_logits(router: np.ndarray, x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-moe-router l_e = fl(l_e + fl(w[e, i]·x[i])), i ascending from
    l_e = 0 (no fusion). router float32 [E, d]; float32 [E]."""
    w = np.asarray(router, dtype=F32)
    acc = np.zeros(w.shape[0], dtype=F32)
    for i in range(w.shape[1]):
        acc = acc + w[:, i] * F32(x[i])
    return acc


def top_k(logits: np.ndarray, k: int) -> list[int]:
    """spec/numerics.md §board-moe-topk insertion of experts 0..E−1 into k ranked slots: an
    expert goes ahead of a slot's occupant when its logit is greater, or equal with a smaller
    index (so descending logits, ties to the smaller index)."""
    chosen: list[int] = []
    for e in range(len(logits)):
        pos = len(chosen)
        while pos > 0 and _ahead(logits, e, chosen[pos - 1]):
            pos -= 1
        if pos < k:
            chosen.insert(pos, e)
            del chosen[k:]
    return chosen


def _ahead(logits: np.ndarray, a: int, b: int) -> bool:
    return bool(logits[a] > logits[b] or (logits[a] == logits[b] and a < b))


def route_weights(chosen_logits: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-moe-weights softmax over the k chosen logits in rank order:
    e_j = expf(fl(l_j − l_0)), s = e_0 + e_1 + … sequentially, p_j = fl(e_j · fl(1/s))."""
    top = F32(chosen_logits[0])
    e = [libm.expf(F32(v) - top) for v in chosen_logits]
    s = F32(0.0)
    for v in e:
        s = F32(s + v)
    inv = F32(ONE / s)
    return np.array([F32(v * inv) for v in e], dtype=F32)


def block_chain(m: QuantMatrix, x: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-moe-products rows of m times f32 x: per 32-column block
    o = fma(x[c], code[c], o) over c ascending from o = 0, then acc = fma(d_w, o, acc) over
    blocks ascending. float32 [rows]."""
    rows, cols = m.shape
    codes = m.codes.astype(F32)
    scales = m.scale_bits.view(np.float16).astype(F32)
    xv = np.asarray(x, dtype=F32)
    acc = np.zeros(rows, dtype=F32)
    for b in range(cols // QBLOCK):
        o = np.zeros(rows, dtype=F32)
        for c in range(b * QBLOCK, (b + 1) * QBLOCK):
            o = fma_f32(np.full(rows, xv[c], dtype=F32), codes[:, c], o)
        acc = fma_f32(scales[:, b], o, acc)
    return acc


def silu_exact(g: np.ndarray, u: np.ndarray) -> np.ndarray:
    """spec/numerics.md §board-moe-silu fl(fl(g / fl(1 + expf(−g)))·u), glibc expf, a true
    division. float32, element-wise."""
    den = np.array([ONE + libm.expf(-F32(v)) for v in g], dtype=F32)
    return (np.asarray(g, dtype=F32) / den) * np.asarray(u, dtype=F32)


@dataclass(frozen=True)
class MoeExpert:
    """One expert's Q8_0 matrices (logical words): gate/up [Ie, d], down [d, Ie]."""

    gate: QuantMatrix
    up: QuantMatrix
    down: QuantMatrix


@dataclass(frozen=True)
class MoeStep:
    """Every intermediate of one token's board MoE FFN (the packs' `moe.*` arrays, one row).
    `refused` is the engine's silent refusal: then out is zeros and the rest is empty."""

    logits: np.ndarray  # [E]
    experts: np.ndarray  # int32 [k], rank order
    weights: np.ndarray  # [k]
    gate: np.ndarray  # [k, Ie]
    up: np.ndarray  # [k, Ie]
    act: np.ndarray  # [k, Ie]
    partial: np.ndarray  # [k, d]: y after each rank's expert
    out: np.ndarray  # [d]
    refused: bool = False


def refused_step(hidden: int) -> MoeStep:
    """spec/numerics.md §board-moe-defect the refused FFN: y = 0, nothing else computed."""
    empty = np.zeros((0,), dtype=F32)
    return MoeStep(
        empty, np.zeros((0,), np.int32), empty, empty, empty, empty, empty,
        np.zeros(hidden, dtype=F32), refused=True,
    )  # fmt: skip


def moe_ffn(router: np.ndarray, experts: tuple[MoeExpert, ...], k: int, x: np.ndarray) -> MoeStep:
    """spec/numerics.md §board-moe one token's Q8 MoE FFN (no residual), every intermediate."""
    d = len(x)
    ie = experts[0].gate.shape[0] if experts else 0
    if refused(d, ie):
        return refused_step(d)
    logits = router_logits(router, x)
    chosen = top_k(logits, k)
    p = route_weights(logits[chosen])
    y = np.zeros(d, dtype=F32)
    rows: dict[str, list[np.ndarray]] = {"gate": [], "up": [], "act": [], "partial": []}
    for j, e in enumerate(chosen):
        g = block_chain(experts[e].gate, x)
        u = block_chain(experts[e].up, x)
        a = silu_exact(g, u)
        y = y + p[j] * block_chain(experts[e].down, a)
        for name, v in (("gate", g), ("up", u), ("act", a), ("partial", y)):
            rows[name].append(v)
    return MoeStep(
        logits, np.array(chosen, dtype=np.int32), p,
        *(np.stack(rows[n]) for n in ("gate", "up", "act", "partial")), out=y,
    )  # fmt: skip


#: MoeStep field -> the engine dumps' array name (tests/data/kestrel-board-v2/README.md, MoE packs).
DUMP_NAMES = {
    "logits": "moe.router_logits",
    "experts": "moe.experts",
    "weights": "moe.weights",
    "gate": "moe.gate",
    "up": "moe.up",
    "act": "moe.act",
    "partial": "moe.partial_sum",
    "out": "moe.out",
}


def dump_arrays(steps: list[list[MoeStep]]) -> dict[str, np.ndarray]:
    """The engine dump's `moe.*` arrays [L, N, ...] of steps[l][t] (layer l, token t). A layer
    the engine refuses has only its zero output: then `moe.out` alone is returned."""
    flat = [s for row in steps for s in row]
    names = ["out"] if any(s.refused for s in flat) else list(DUMP_NAMES)
    lead = (len(steps), len(steps[0]) if steps else 0)
    out = {}
    for field in names:
        rows = [getattr(s, field) for s in flat]
        out[DUMP_NAMES[field]] = np.stack(rows).reshape(lead + rows[0].shape)
    return out
