"""The board's Q8 MoE FFN through fast/csrc/board_moe.c (spec/numerics.md §board-moe).

`moe_ffn` has the reference's (`ref.qwen3_moe.board.ffn.moe_ffn`) results on a layer's stacked
words (`StackedLayer`): the C does the same float32 operations in the same order, fmaf() where
the reference's `fma_f32` rounds once, and the host libm's expf after the reference's libm check.
Products split over output rows only, so `threads` never changes a result.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

import numpy as np

from weightfile.fast.qwen3.board import ops as dense_ops
from weightfile.ref.qwen3_moe.board.ffn import MoeExpert, MoeStep, refused, refused_step

F32 = np.float32
DEFAULT_GRAIN = 65536


@cache
def lib() -> ctypes.CDLL:
    """The kernel library with board_moe.c's prototypes (after board.c's libm and compiler
    checks: the same refusals as the dense fast board engine)."""
    c = dense_ops.lib()
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    c.wfbm_moe_ffn.argtypes = (p, i64, p, i64, i64, p, p, p, p, p, p, i64, i32) + (p,) * 8
    c.wfbm_moe_ffn.restype = i32
    c.wfbm_set_thread_grain.argtypes, c.wfbm_set_thread_grain.restype = (i64,), None
    return c


@contextmanager
def thread_grain(grain: int) -> Iterator[None]:
    """Within the block, a thread per `grain` multiply-adds (1: always the asked count)."""
    lib().wfbm_set_thread_grain(grain)
    try:
        yield
    finally:
        lib().wfbm_set_thread_grain(DEFAULT_GRAIN)


#: Rows a group in the packed layout of fast/csrc/board_moe.c.
GROUP = 16


@dataclass(frozen=True)
class Words:
    """One packed matrix's words (fast/csrc/board_moe.c): rows in groups of 16 and, per group
    and 32-column block, the block's 32 columns of the 16 rows side by side — int8 codes
    [groups, blocks, 32, 16], f32 scales [groups, blocks, 16]."""

    codes: np.ndarray
    scales: np.ndarray


@dataclass(frozen=True)
class StackedLayer:
    """A layer's router [E, d], its experts' gate/up ([E·Ie, d] stacked) and down (each
    expert's [d, Ie], expert after expert) words, packed."""

    router: np.ndarray
    gate: Words
    up: Words
    down: Words
    expert_width: int


def _packed(codes: np.ndarray, scale_bits: np.ndarray) -> Words:
    """Rows [R, C] in groups of 16 (a geometry the C refuses may leave a last group short: it
    is padded with zero rows, never read)."""
    rows, cols = codes.shape
    scales = scale_bits.view(np.float16).astype(F32)
    pad = -rows % GROUP
    if pad:
        codes = np.concatenate([codes, np.zeros((pad, cols), np.int8)])
        scales = np.concatenate([scales, np.zeros((pad, scales.shape[1]), F32)])
    groups, blocks = (rows + pad) // GROUP, cols // 32
    pc = codes.reshape(groups, GROUP, blocks, 32).transpose(0, 2, 3, 1)
    ps = scales.reshape(groups, GROUP, blocks).transpose(0, 2, 1)
    return Words(np.ascontiguousarray(pc, np.int8), np.ascontiguousarray(ps, F32))


def _joined(words: list[Words]) -> Words:
    return Words(
        np.concatenate([w.codes for w in words]), np.concatenate([w.scales for w in words])
    )


def stack(router: np.ndarray, experts: tuple[MoeExpert, ...]) -> StackedLayer:
    """The packed words of one layer (from the file's own stacking, spec/vqf.md §text-tensors)."""
    return StackedLayer(
        np.ascontiguousarray(router, F32),
        _joined([_packed(e.gate.codes, e.gate.scale_bits) for e in experts]),
        _joined([_packed(e.up.codes, e.up.scale_bits) for e in experts]),
        _joined([_packed(e.down.codes, e.down.scale_bits) for e in experts]),
        experts[0].gate.shape[0],
    )


def _p(a: np.ndarray) -> int:
    return a.ctypes.data


def moe_ffn(layer: StackedLayer, k: int, x: np.ndarray, threads: int = 1) -> MoeStep:
    """spec/numerics.md §board-moe one token's Q8 MoE FFN (no residual), every intermediate."""
    xv = np.ascontiguousarray(x, F32)
    d, ie, ne = len(xv), layer.expert_width, layer.router.shape[0]
    if refused(d, ie):
        return refused_step(d)
    if layer.router.shape[1] != d or layer.gate.codes.size != ne * ie * d:
        raise ValueError(f"x [{d}] does not fit the layer's router {layer.router.shape}")
    logits, weights = np.zeros(ne, F32), np.zeros(k, F32)
    experts = np.zeros(k, np.int32)
    gate, up, act = (np.zeros((k, ie), F32) for _ in range(3))
    partial, out = np.zeros((k, d), F32), np.zeros(d, F32)
    g, u, dn = layer.gate, layer.up, layer.down
    lib().wfbm_moe_ffn(
        _p(xv), d, _p(layer.router), ne, k, _p(g.codes), _p(g.scales), _p(u.codes),
        _p(u.scales), _p(dn.codes), _p(dn.scales), ie, threads, _p(logits), _p(experts),
        _p(weights), _p(gate), _p(up), _p(act), _p(partial), _p(out),
    )  # fmt: skip
    return MoeStep(logits, experts, weights, gate, up, act, partial, out)
