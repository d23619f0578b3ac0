"""The Qwen3 forward of the kestrel-board profile with the C kernels (spec/numerics.md
§board-forward).

`FastBoardModel` is the reference `BoardModel` with every operation swapped for its C twin in
`ops`; the phase logic (which norm order, which kernel form for which token of a mini-batch,
the prefill filling the cache before attending) is the reference's, inherited, so the two
engines cannot drift apart there. The cache keeps contiguous arrays (`FastKV`) for the C
attention. `generate` of the reference drives either model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from weightfile.fast.codecs.vqf import codec as fast_codec
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.bind_vqf import bind_vqf, dense_plan
from weightfile.ref.qwen3.board.attention import attention_scale
from weightfile.ref.qwen3.board.model import BoardModel, Record
from weightfile.ref.qwen3.weights import LayerWeights
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.codecs.vqf.registry import codec_for

from . import ops

F32 = np.float32


@dataclass
class FastKV:
    """One layer's cache as growing arrays: f32 keys/values [pos, kv_heads, head_dim] (prefill
    attention) and their INT8 codes and scales (decode; spec/numerics.md §board-kv-cache)."""

    kv_heads: int
    head_dim: int
    n: int = 0
    _k: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _v: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _k8: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _v8: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _ks: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    _vs: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]

    def _grow(self) -> None:
        cap = max(16, 2 * (0 if self._k is None else self._k.shape[0]))
        shape = (cap, self.kv_heads, self.head_dim)

        def more(old: np.ndarray | None, dtype: type, sh: tuple[int, ...]) -> np.ndarray:
            new = np.zeros(sh, dtype)
            if old is not None:
                new[: self.n] = old[: self.n]
            return new

        self._k, self._v = more(self._k, F32, shape), more(self._v, F32, shape)
        self._k8, self._v8 = more(self._k8, np.int8, shape), more(self._v8, np.int8, shape)
        self._ks = more(self._ks, F32, (cap, self.kv_heads))
        self._vs = more(self._vs, F32, (cap, self.kv_heads))

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        """spec/numerics.md §board-kv-cache store one position [kv_heads, head_dim]."""
        if self._k is None or self.n == self._k.shape[0]:
            self._grow()
        t = self.n
        self._k[t], self._v[t] = k, v
        self._k8[t], self._ks[t] = ops.quantize_kv(self._k[t])
        self._v8[t], self._vs[t] = ops.quantize_kv(self._v[t])
        self.n += 1

    @property
    def keys(self) -> np.ndarray:
        """The float32 keys so far [pos, kv_heads, head_dim] (its len is the position)."""
        return self._k[: self.n] if self._k is not None else np.zeros((0,), F32)

    @property
    def values(self) -> np.ndarray:
        return self._v[: self.n] if self._v is not None else np.zeros((0,), F32)

    def int8(self, upto: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self._k8[:upto], self._v8[:upto], self._ks[:upto], self._vs[:upto]


@dataclass(frozen=True)
class FastBoardModel(BoardModel):
    """BoardModel on the C kernels; threads splits products over rows, attention over heads."""

    threads: int = 1

    def new_cache(self) -> list[FastKV]:  # type: ignore[override]
        c = self.config
        return [FastKV(c.num_key_value_heads, c.head_dim) for _ in range(c.num_hidden_layers)]

    def project(self, m: QuantMatrix, x: np.ndarray, form: str) -> np.ndarray:
        """spec/numerics.md §board-products as the reference's `project`, on the C products."""
        codes, d_x = ops.quantize_act(x)
        t = self.threads
        if form == "lm_head" or (form == "decode" and self.qtype == "q8"):
            return ops.single_chain(m, codes, d_x, t)
        if form == "decode":
            return ops.q4_decode(m, codes, d_x, t)
        if self.qtype == "q4":
            return ops.q4_prefill_gemm(m, codes, d_x, t)
        return ops.q8_prefill_gemm(m, codes, d_x, t)

    def attention_part(
        self, lw: LayerWeights, x: np.ndarray, pos: int, phase: str, form: str, rec: Record
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Norm, Q/K/V, q/k norms, RoPE of one token, as the reference's `attention_part`."""
        c = self.config
        norm = ops.rmsnorm_tree8 if phase == "decode" else ops.rmsnorm_sequential
        n = norm(x, lw.attn_norm, c.eps_f32)
        q = self.project(lw.q_proj, n, form)
        k = self.project(lw.k_proj, n, form)
        v = self.project(lw.v_proj, n, form)
        qn, kn = ops.head_norms(q, lw.q_norm, c.head_dim), ops.head_norms(k, lw.k_norm, c.head_dim)
        qr = ops.rope_heads(qn, pos, c.rope_theta, c.head_dim)
        kr = ops.rope_heads(kn, pos, c.rope_theta, c.head_dim)
        for name, value in (("attn_norm", n), ("q_proj", q), ("k_proj", k), ("v_proj", v)):
            rec(name, value)
        for name, value in (("q_norm", qn), ("k_norm", kn), ("q_rope", qr), ("k_rope", kr)):
            rec(name, value)
        return qr, kr, v, n

    def attend(self, q: np.ndarray, kv: FastKV, upto: int, phase: str) -> np.ndarray:  # type:
        # ignore[override]
        """spec/numerics.md §board-attention every query head, in C."""
        c = self.config
        scale = attention_scale(c.head_dim)
        heads = c.num_attention_heads
        if phase == "decode":
            k8, v8, ks, vs = kv.int8(upto)
            return ops.attn_decode(q, k8, v8, ks, vs, heads, scale, self.threads)
        return ops.attn_prefill(q, kv.keys[:upto], kv.values[:upto], heads, scale, self.threads)

    def mlp_part(
        self, lw: LayerWeights, h: np.ndarray, phase: str, form: str, rec: Record
    ) -> np.ndarray:
        """spec/numerics.md §board-forward h + down(silu_mul(gate(n), up(n))), as the
        reference's."""
        norm = ops.rmsnorm_tree8 if phase == "decode" else ops.rmsnorm_sequential
        n = norm(h, lw.ffn_norm, self.config.eps_f32)
        g = self.project(lw.gate_proj, n, form)
        u = self.project(lw.up_proj, n, form)
        sm = ops.silu_mul(g, u)
        out = h + self.project(lw.down_proj, sm, form)  # the residual: one rounding
        for name, value in (("ffn_norm", n), ("gate_proj", g), ("up_proj", u), ("silu_mul", sm)):
            rec(name, value)
        rec("down_residual", out)
        return out

    def logits(self, x: np.ndarray, rec: Record) -> np.ndarray:
        """spec/numerics.md §board-forward final norm (tree8) and the lm_head. [vocab]"""
        n = ops.rmsnorm_tree8(x, self.weights.final_norm, self.config.eps_f32)
        rec("final_norm", n)
        return self.project(self.weights.lm_head, n, "lm_head")


def fast_matrix_words(
    name: str, qtype: int, flags: int, payload: bytes, rows: int, cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """The reference binder's word hook on the fast codecs (proven equal to the reference
    codecs by tests/differential): signed codes and f16 scale bits (spec/vqf.md §encodings,
    §text-tensors)."""
    codec = codec_for(qtype, flags, name, shape=(rows, cols))
    words = fast_codec(codec).decode_words(payload, rows, cols)
    codes = words["codes"]
    if codes.dtype == np.uint8:  # Q4 nibbles n -> the signed code n - 8 (spec/vqf.md §q4-0)
        codes = (codes.astype(np.int16) - 8).astype(np.int8)
    return np.ascontiguousarray(codes, np.int8), np.ascontiguousarray(words["scales"], np.uint16)


def bind_board_fast(vqf: VQFFile, threads: int = 1) -> FastBoardModel:
    """A dense Qwen3 VQF bound for the fast kestrel-board engine (spec/numerics.md
    §board-forward)."""
    ops.lib()  # refuse early: no C kernels, or a libm that is not the board's
    plan = dense_plan(vqf)
    config, weights = bind_vqf(vqf, fast_matrix_words)
    return FastBoardModel(config, weights, plan.projection_set, threads)
