"""The Qwen3 forward pass as the board engine runs it, on both prompt paths.

spec/numerics.md §board-forward.

* `decode_step`: one token through the single-token path (`st_qwen_model_forward`);
* `prefill`: a prompt through the batched path (`st_qwen_model_prefill_batch`), mini-batches of
  256 tokens, logits for the last prompt token only;
* `generate`: either prompt path, then greedy decode steps, every array under the names the
  board's dumps use (`prefill.logits`, `decode.step{k}.logits`, `decode.step0.layer{l}.q_proj`,
  ...; the token-wise path: `prompt.decode_path.logits`, `decode_path.*`).

The weights are the reference binder's (`ref.qwen3.bind_vqf`); which kernel a product uses
depends on the phase, the token's place in its mini-batch and the tensor's qtype (Q4_0 or Q8_0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from weightfile.ref.layers.sampling import greedy
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.bind_vqf import bind_vqf, dense_plan
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.weights import LayerWeights, ModelWeights
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import UnsupportedError

from . import matmul
from .attention import BoardKV, attention_scale, decode_head, prefill_head
from .expsilu import silu_mul
from .norm import head_norms, rmsnorm_sequential, rmsnorm_tree8
from .quant import quantize_act
from .rope import rope_heads

F32 = np.float32
MINI_BATCH = 256  # spec/numerics.md §board-forward: prefill mini-batch size
Record = Callable[[str, np.ndarray], None]


def _ignore(name: str, value: np.ndarray) -> None:
    pass


#: The geometry the board's kernels cover (spec/numerics.md §board-forward): head_dim a multiple
#: of 32 and at most 256 (decode attention), an FFN width a multiple of 4 (SiLU's lanes).
HEAD_DIM_MULTIPLE = 32
HEAD_DIM_MAX = 256
FFN_MULTIPLE = 4


def head_kind(lm_head: object) -> str:
    """The file's value for the board's lm_head limit, in the refusal's words: "tied" when the
    file has no lm_head of its own (spec/numerics.md §board-text-paths)."""
    return "tied" if lm_head is None else f"a {type(lm_head).__name__}, not Q4_0 / Q8_0 words"


@dataclass(frozen=True)
class BoardModel:
    """A Qwen3 dense decoder under the kestrel-board profile; qtype is "q4" or "q8"."""

    config: Qwen3Config
    weights: ModelWeights
    qtype: str

    def __post_init__(self) -> None:
        """Refuse what the board cannot run, or runs on paths the packs do not cover
        (spec/numerics.md §board-forward)."""
        c, w = self.config, self.weights
        matrices = [m for lw in w.layers for m in (lw.q_proj, lw.down_proj)]
        why = None
        if self.qtype not in ("q4", "q8") or not all(isinstance(m, QuantMatrix) for m in matrices):
            why = f"Q4_0 or Q8_0 projections (this file's projection set is {self.qtype})"
        elif not isinstance(w.lm_head, QuantMatrix):
            why = f"an untied Q4_0 or Q8_0 lm_head (this file's lm_head is {head_kind(w.lm_head)})"
        elif c.head_dim % HEAD_DIM_MULTIPLE or c.head_dim > HEAD_DIM_MAX:
            why = (
                f"head_dim a multiple of {HEAD_DIM_MULTIPLE} and at most {HEAD_DIM_MAX} "
                f"(decode attention; this file's head_dim is {c.head_dim})"
            )
        elif c.intermediate_size % FFN_MULTIPLE:
            why = (
                f"an FFN width that is a multiple of {FFN_MULTIPLE} (the SiLU's 4-lane groups; "
                f"this file's is {c.intermediate_size})"
            )
        if why is not None:
            raise UnsupportedError(
                "vqf.bind.unsupported", f"the kestrel-board profile needs {why}", path="arch"
            )

    def new_cache(self) -> list[BoardKV]:
        return [BoardKV() for _ in range(self.config.num_hidden_layers)]

    # --- products ----------------------------------------------------------------------

    def project(self, m: QuantMatrix, x: np.ndarray, form: str) -> np.ndarray:
        """spec/numerics.md §board-products one product of x, quantized once, in the named kernel
        form: "decode", "gemm" (prefill, tokens before n & ~3) or "lm_head"."""
        codes, d_x = quantize_act(x)
        if form == "lm_head" or (form == "decode" and self.qtype == "q8"):
            return matmul.single_chain(m, codes, d_x)
        if form == "decode":
            return matmul.q4_decode(m, codes, d_x)
        if self.qtype == "q4":
            return matmul.q4_prefill_gemm(m, codes, d_x)
        return matmul.q8_prefill_gemm(m, codes, d_x)

    # --- one layer, one token ----------------------------------------------------------

    def attention_part(
        self, lw: LayerWeights, x: np.ndarray, pos: int, phase: str, form: str, rec: Record
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Norm, Q/K/V, q/k norms, RoPE of one token: (q_rope, k_rope, v, the norm's output)."""
        c = self.config
        norm = rmsnorm_tree8 if phase == "decode" else rmsnorm_sequential
        n = norm(x, lw.attn_norm, c.eps_f32)
        q = self.project(lw.q_proj, n, form)
        k = self.project(lw.k_proj, n, form)
        v = self.project(lw.v_proj, n, form)
        qn, kn = head_norms(q, lw.q_norm, c.head_dim), head_norms(k, lw.k_norm, c.head_dim)
        qr = rope_heads(qn, pos, c.rope_theta, c.head_dim)
        kr = rope_heads(kn, pos, c.rope_theta, c.head_dim)
        for name, value in (("attn_norm", n), ("q_proj", q), ("k_proj", k), ("v_proj", v)):
            rec(name, value)
        for name, value in (("q_norm", qn), ("k_norm", kn), ("q_rope", qr), ("k_rope", kr)):
            rec(name, value)
        return qr, kr, v, n

    def attend(self, q: np.ndarray, kv: BoardKV, upto: int, phase: str) -> np.ndarray:
        """spec/numerics.md §board-attention every query head; decode reads the INT8 copy, prefill
        the f32 copy at positions 0..upto-1. [heads*head_dim]"""
        c = self.config
        scale = attention_scale(c.head_dim)
        out = []
        for h, qh in enumerate(q.reshape(c.num_attention_heads, c.head_dim)):
            g = h * c.num_key_value_heads // c.num_attention_heads
            if phase == "decode":
                out.append(decode_head(qh, kv, g, scale))
            else:
                keys = [kv.keys[t][g] for t in range(upto)]
                values = [kv.values[t][g] for t in range(upto)]
                out.append(prefill_head(qh, keys, values, scale))
        return np.concatenate(out)

    def mlp_part(
        self, lw: LayerWeights, h: np.ndarray, phase: str, form: str, rec: Record
    ) -> np.ndarray:
        """spec/numerics.md §board-forward h + down(silu_mul(gate(n), up(n))), n the FFN norm of
        h."""
        norm = rmsnorm_tree8 if phase == "decode" else rmsnorm_sequential
        n = norm(h, lw.ffn_norm, self.config.eps_f32)
        g = self.project(lw.gate_proj, n, form)
        u = self.project(lw.up_proj, n, form)
        sm = silu_mul(g, u)
        out = h + self.project(lw.down_proj, sm, form)  # the residual: one rounding
        for name, value in (("ffn_norm", n), ("gate_proj", g), ("up_proj", u), ("silu_mul", sm)):
            rec(name, value)
        rec("down_residual", out)
        return out

    def logits(self, x: np.ndarray, rec: Record) -> np.ndarray:
        """spec/numerics.md §board-forward final norm (tree8 in both phases) and the lm_head.
        [vocab]"""
        n = rmsnorm_tree8(x, self.weights.final_norm, self.config.eps_f32)
        rec("final_norm", n)
        return self.project(self.weights.lm_head, n, "lm_head")

    # --- the two phases ------------------------------------------------------------------

    def decode_step(self, token: int, cache: list[BoardKV], rec: Record = _ignore) -> np.ndarray:
        """spec/numerics.md §board-decode-step one token at position len(cache); float32 logits
        [vocab]."""
        pos = len(cache[0].keys)
        x = self.embed(token)
        rec("embedding", x)
        c = self.config
        for i, lw in enumerate(self.weights.layers):
            lrec = _prefixed(rec, f"layer{i}.")
            qr, kr, v, _ = self.attention_part(lw, x, pos, "decode", "decode", lrec)
            cache[i].append(kr.reshape(-1, c.head_dim), v.reshape(-1, c.head_dim))
            att = self.attend(qr, cache[i], pos + 1, "decode")
            h = x + self.project(lw.o_proj, att, "decode")
            lrec("attn_out", att)
            lrec("o_proj_residual", h)
            x = self.mlp_part(lw, h, "decode", "decode", lrec)
        return self.logits(x, rec)

    def prefill(
        self, tokens: Sequence[int], cache: list[BoardKV], rec: Record = _ignore
    ) -> np.ndarray:
        """spec/numerics.md §board-prefill the batched prompt path; logits of the last token
        [vocab].

        rec sees the last token's intermediates only."""
        x = None
        for start in range(0, len(tokens), MINI_BATCH):
            batch = tokens[start : start + MINI_BATCH]
            last = start + len(batch) == len(tokens)
            x = self.prefill_batch(batch, cache, rec if last else _ignore)
        return self.logits(x, rec)

    def prefill_batch(self, tokens: Sequence[int], cache: list[BoardKV], rec: Record) -> np.ndarray:
        """spec/numerics.md §board-prefill one mini-batch through every layer; the last hidden
        state."""
        c, n = self.config, len(tokens)
        pos0 = len(cache[0].keys)
        xs = [self.embed(t) for t in tokens]
        for i, lw in enumerate(self.weights.layers):
            forms = [self.prefill_form(t, n) for t in range(n)]
            lrec = _prefixed(rec, f"layer{i}.")
            parts = []
            for t in range(n):
                r = lrec if t == n - 1 else _ignore
                parts.append(self.attention_part(lw, xs[t], pos0 + t, "prefill", forms[t], r))
            for _q, kr, v, _n in parts:  # the batch's exact K/V (and their INT8 copies) first
                cache[i].append(kr.reshape(-1, c.head_dim), v.reshape(-1, c.head_dim))
            out = []
            for t, (qr, _, _, _) in enumerate(parts):
                r = lrec if t == n - 1 else _ignore
                att = self.attend(qr, cache[i], pos0 + t + 1, "prefill")
                h = xs[t] + self.project(lw.o_proj, att, forms[t])
                r("attn_out", att)
                r("o_proj_residual", h)
                out.append(self.mlp_part(lw, h, "prefill", forms[t], r))
            xs = out
        return xs[-1]

    def prefill_form(self, t: int, n: int) -> str:
        """spec/numerics.md §board-q4-prefill, §board-q8-prefill the kernel form of token t of an
        n-token mini-batch: Q4 uses the GEMM for t < n & ~3 and the decode form after; Q8 the GEMM
        for all tokens when n > 1."""
        if self.qtype == "q4":
            return "gemm" if t < (n & ~3) else "decode"
        return "gemm" if n > 1 else "decode"

    def embed(self, token: int) -> np.ndarray:
        """The F16 embedding row, widened exactly. [hidden]"""
        if not 0 <= token < self.config.vocab_size:
            raise ValueError(f"token id {token} outside the vocabulary of {self.config.vocab_size}")
        return self.weights.embed[token].astype(F32)


def _prefixed(rec: Record, prefix: str) -> Record:
    return lambda name, value: rec(prefix + name, value)


def generate(
    model: BoardModel,
    prompt: Sequence[int],
    steps: int,
    path: str = "prefill",
    ops: bool = False,
    stop_ids: frozenset[int] = frozenset(),
) -> dict[str, np.ndarray]:
    """spec/numerics.md §board-prompts a prompt path and greedy decode steps, as the board's dumps
    name them; ops adds the first decode step's (and the prefill's last token's)
    intermediates. Step k consumes token k (so steps tokens, steps logits); a greedy pick in
    stop_ids ends the run and is not kept."""
    if path not in ("prefill", "tokenwise"):
        raise ValueError(f"prompt path {path!r}: prefill or tokenwise")
    out: dict[str, np.ndarray] = {}
    cache = model.new_cache()
    tag = "decode" if path == "prefill" else "decode_path"

    def keep(prefix: str) -> Record:
        if not ops:
            return _ignore
        return lambda name, v: out.__setitem__(prefix + name, np.array(v, F32))

    if path == "prefill":
        logits = model.prefill(list(prompt), cache, keep("prefill.last."))
        out["prefill.logits"] = logits
    else:
        rows = [model.decode_step(t, cache) for t in prompt]
        out["prompt.decode_path.logits"] = np.stack(rows)
        logits = rows[-1]
    tokens: list[int] = []
    nxt = greedy(logits)
    for k in range(steps):
        if nxt in stop_ids:  # a stop id ends the run and is not kept
            break
        tokens.append(nxt)
        logits = model.decode_step(nxt, cache, keep(f"{tag}.step0.") if k == 0 else _ignore)
        out[f"{tag}.step{k}.logits"] = logits
        nxt = greedy(logits)
    out[f"{tag}.tokens"] = np.array(tokens, dtype=np.int32)
    return out


def bind_board(vqf: VQFFile) -> BoardModel:
    """A dense Qwen3 VQF bound for the kestrel-board profile: the reference binder's weights
    and the projections' qtype (spec/numerics.md §board-forward)."""
    plan = dense_plan(vqf)
    config, weights = bind_vqf(vqf)
    return BoardModel(config, weights, plan.projection_set)
