"""A tiny seeded transformers Qwen3MoeForCausalLM and its checkpoint folder (spec/models.md
§tiny-checkpoints).

Shared by the Qwen3-MoE oracle tests (tests/convert/test_qwen3_moe_vqf.py); needs torch. The
fused expert tensors transformers 5 leaves uninitialised are filled, norms are perturbed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

SIZES: dict[str, Any] = dict(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=8,
    num_experts_per_tok=2, moe_intermediate_size=32,
)  # fmt: skip
TOKENS = [3, 141, 59, 26, 5, 200, 97, 9]


def hf_config(**overrides: Any):
    import transformers

    settings = dict(
        norm_topk_prob=True, mlp_only_layers=[], decoder_sparse_step=1, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=False, attn_implementation="eager", bos_token_id=1, eos_token_id=2,
    )  # fmt: skip
    return transformers.Qwen3MoeConfig(**{**SIZES, **settings, **overrides})


def build_model(seed: int = 7, **overrides: Any):
    """The seeded model in eval mode, every weight set."""
    import torch
    import transformers

    torch.manual_seed(seed)
    model = transformers.Qwen3MoeForCausalLM(hf_config(**overrides)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
            elif "experts" in name:
                p.copy_(0.08 * torch.randn_like(p))
            elif "mlp.gate" in name:
                p.copy_(0.3 * torch.randn_like(p))
    return model


def run(model, tokens: list[int]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """(logits [T, V], per layer the chosen experts sorted ascending [T, k], per layer their
    weights in the same order [T, k]), the routers hooked."""
    import torch

    experts: list[np.ndarray] = []
    weights: list[np.ndarray] = []

    def hook(_module, _inputs, out) -> None:
        _, scores, idx = out
        order = torch.argsort(idx, dim=-1)
        experts.append(torch.gather(idx, -1, order).numpy())
        weights.append(torch.gather(scores, -1, order).numpy())

    handles = [layer.mlp.gate.register_forward_hook(hook) for layer in model.model.layers]
    try:
        with torch.no_grad():
            logits = model(torch.tensor([tokens])).logits[0].numpy()
    finally:
        for h in handles:
            h.remove()
    return logits, experts, weights


def save(model, folder: Path) -> Path:
    model.save_pretrained(folder)
    (folder / "tokenizer.json").write_text('{"marker": 1}')
    return folder


def load_weights(model, config, weights) -> None:
    """Put a bound file's weights (ref/qwen3_moe/weights.py, matrices dense-able) into `model`."""
    import torch

    def t(a) -> torch.Tensor:
        return torch.from_numpy(np.array(dense(a), dtype=np.float32))

    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(t(weights.embed))
        model.model.norm.weight.copy_(t(weights.final_norm))
        model.lm_head.weight.copy_(t(weights.output_matrix()))
        for layer, lw in zip(model.model.layers, weights.layers, strict=True):
            a = layer.self_attn
            for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                getattr(a, name).weight.copy_(t(getattr(lw, name)))
            a.q_norm.weight.copy_(t(lw.q_norm))
            a.k_norm.weight.copy_(t(lw.k_norm))
            layer.input_layernorm.weight.copy_(t(lw.attn_norm))
            layer.post_attention_layernorm.weight.copy_(t(lw.ffn_norm))
            layer.mlp.gate.weight.copy_(t(lw.router))
            for e, ew in enumerate(lw.experts):
                layer.mlp.experts.gate_up_proj[e].copy_(torch.cat([t(ew.gate), t(ew.up)]))
                layer.mlp.experts.down_proj[e].copy_(t(ew.down))


def dense(m) -> np.ndarray:
    """A Matrix (or array) as float32 values: quantized words de-quantized exactly
    (spec/numerics.md §f32-weights: code times the widened f16 scale)."""
    from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix

    if isinstance(m, DenseMatrix):
        return m.values
    if isinstance(m, QuantMatrix):
        scales = m.scale_bits.view(np.float16).astype(np.float32)
        return m.codes.astype(np.float32) * np.repeat(scales, 32, axis=1)
    return np.asarray(m, dtype=np.float32)
