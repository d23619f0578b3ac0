"""The chosen experts of one Qwen3-MoE layer in one C call (spec/models.md §qwen3-moe-forward;
fast/csrc/moe.c): gate/up, SwiGLU and down of each chosen expert, in ascending index, over the
tokens that chose it, on its bands of the stacked matrices read in place (spec/vqf.md
§text-tensors), and the combine `moe[t] ← moe[t] ⊕ (w ⊗ y)`, the reference's order."""

from __future__ import annotations

import ctypes

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.layers.moe import expert_lists
from weightfile.fast.numerics import matrix
from weightfile.fast.numerics.matrix import FastMatrix, kernels, quantize_activation, takes_codes

from .bind import ExpertStack


def experts_of(
    stack: ExpertStack, n: np.ndarray, routes: list[list[tuple[int, np.float32]]], threads: int
) -> np.ndarray:
    """moe [T, d]: Σ over each token's chosen experts, ascending, of w ⊗ down(swiglu(gate n,
    up n)), one C call for the layer."""
    n = np.ascontiguousarray(n, dtype=np.float32)
    whole = stack.whole
    gate, up, down = whole
    codes = takes_codes(whole)
    if codes:
        xq, xd = quantize_activation(n)
    else:
        xq, xd = np.zeros(1, np.int8), np.zeros(1, np.float32)
    ids, start, tok, wt = expert_lists(routes)
    moe = np.zeros_like(n)
    status = kernels().wf_moe_experts(
        _ref(gate), _ref(up), _ref(down), stack.width, int(codes), address(n), address(xq),
        address(xd), n.shape[0], ids.size, address(ids), address(start), address(tok),
        address(wt), address(moe), int(threads), matrix.MIN_ELEMENTS_PER_THREAD,
    )  # fmt: skip
    if status != 0:
        raise MemoryError("wf_moe_experts could not allocate its buffers")
    return moe


def _ref(m: FastMatrix) -> int:
    return ctypes.addressof(m._struct)
