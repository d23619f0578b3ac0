"""Tiny Qwen3 models for the forward-pass tests: random weights, and weights from a state dict."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from weightfile.ref.numerics.matrix import DenseMatrix, Matrix, QuantMatrix
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.weights import LayerWeights, ModelWeights

MatrixMaker = Callable[[np.random.Generator, int, int], Matrix]


def dense(rng: np.random.Generator, rows: int, cols: int) -> Matrix:
    return DenseMatrix((rng.standard_normal((rows, cols)) * 0.2).astype(np.float32))


def quantized(rng: np.random.Generator, rows: int, cols: int) -> Matrix:
    """Q8_0-like logical words: int8 codes, positive f16 scales near 0.002."""
    codes = rng.integers(-127, 128, size=(rows, cols), dtype=np.int8)
    scales = (0.001 + 0.002 * rng.random((rows, cols // 32))).astype(np.float16)
    return QuantMatrix(codes, scales.view(np.uint16))


def tiny_config(**overrides: object) -> Qwen3Config:
    base: dict = dict(
        vocab_size=48,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )
    return Qwen3Config(**{**base, **overrides})


def random_weights(
    config: Qwen3Config, seed: int, make: MatrixMaker = dense, untied: bool = False
) -> ModelWeights:
    """Random weights with perturbed norms, so a missed norm weight changes the logits."""
    rng = np.random.default_rng(seed)
    c = config

    def norm(n: int) -> np.ndarray:
        return (1 + 0.2 * rng.standard_normal(n)).astype(np.float32)

    layers = tuple(
        LayerWeights(
            attn_norm=norm(c.hidden_size),
            q_proj=make(rng, c.q_dim, c.hidden_size),
            k_proj=make(rng, c.kv_dim, c.hidden_size),
            v_proj=make(rng, c.kv_dim, c.hidden_size),
            q_norm=norm(c.head_dim),
            k_norm=norm(c.head_dim),
            o_proj=make(rng, c.hidden_size, c.q_dim),
            ffn_norm=norm(c.hidden_size),
            gate_proj=make(rng, c.intermediate_size, c.hidden_size),
            up_proj=make(rng, c.intermediate_size, c.hidden_size),
            down_proj=make(rng, c.hidden_size, c.intermediate_size),
        )
        for _ in range(c.num_hidden_layers)
    )
    embed = rng.standard_normal((c.vocab_size, c.hidden_size)).astype(np.float32)
    lm_head = make(rng, c.vocab_size, c.hidden_size) if untied else None
    return ModelWeights(embed=embed, layers=layers, final_norm=norm(c.hidden_size), lm_head=lm_head)


#: Token sequences for the tiny config's vocabulary.
def token_ids(vocab: int, min_size: int = 1, max_size: int = 6) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, vocab - 1), min_size=min_size, max_size=max_size)


# --- legacy (untiled) Q8_0 / Q4_0 blocks, for binder tests (spec/vqf.md §q8-0, §q4-0;
# spec/models.md §gguf-oracle) ---


def legacy_block_bytes(m: QuantMatrix, qtype: str) -> bytes:
    """Row-major blocks: f16 scale then 32 int8 codes (q8), or 16 bytes of q+8 nibbles (q4)."""
    rows, cols = m.codes.shape
    out = bytearray()
    for r in range(rows):
        for b in range(cols // 32):
            out += int(m.scale_bits[r, b]).to_bytes(2, "little")
            codes = m.codes[r, 32 * b : 32 * b + 32].astype(np.int16)
            if qtype == "q8":
                out += codes.astype(np.int8).tobytes()
            else:  # byte j: element j in the low nibble, element j+16 in the high one
                nib = (codes + 8).astype(np.uint8)
                out += (nib[:16] | (nib[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def legacy_words(
    name: str, qtype: int, flags: int, payload: bytes, rows: int, cols: int
) -> tuple[np.ndarray, np.ndarray]:
    """The MatrixWords hook for untiled payloads (qtype 2 = Q8_0, 3 = Q4_0)."""
    block = 34 if qtype == 2 else 18
    raw = np.frombuffer(payload, dtype=np.uint8).reshape(rows * cols // 32, block)
    scale_bits = raw[:, :2].copy().view("<u2").reshape(rows, cols // 32)
    if qtype == 2:
        codes = raw[:, 2:].view(np.int8)
    else:
        lo, hi = raw[:, 2:] & 0x0F, raw[:, 2:] >> 4
        codes = (np.concatenate([lo, hi], axis=1).astype(np.int16) - 8).astype(np.int8)
    return codes.reshape(rows, cols), scale_bits


def q4_matrix(rng: np.random.Generator, rows: int, cols: int) -> Matrix:
    """Q4_0-like logical words: codes in [-8, 7]."""
    codes = rng.integers(-8, 8, size=(rows, cols), dtype=np.int8)
    scales = (0.01 + 0.02 * rng.random((rows, cols // 32))).astype(np.float16)
    return QuantMatrix(codes, scales.view(np.uint16))
