"""A tiny random transformers Qwen3.5-MoE checkpoint folder (both layer types; routed experts
saved fused, as transformers 5 writes them; a shared expert and its gate), the inverse mapping
from canonical spec/ninfer3.md §qwen35-names tensors, and a router hook recording the chosen
experts.

Shared by tests/convert/test_qwen35_moe_ninfer.py; needs torch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from strategies.qwen35_checkpoint import (
    TEMPLATE,
    load_canonical,
    round_to_bf16,
    torch,
    transformers,
)
from strategies.tiny_vqf import bpe_tokenizer

EXPERTS, TOP_K, MOE_FFN, SHARED_FFN = 4, 2, 32, 48
SIZES = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    head_dim=16, linear_num_key_heads=2, linear_key_head_dim=16, linear_num_value_heads=4,
    linear_value_head_dim=16, linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "full_attention"], num_experts=EXPERTS,
    num_experts_per_tok=TOP_K, moe_intermediate_size=MOE_FFN,
    shared_expert_intermediate_size=SHARED_FFN,
)  # fmt: skip


def hf_config(vocab: int) -> transformers.Qwen3_5MoeTextConfig:
    return transformers.Qwen3_5MoeTextConfig(
        **SIZES, vocab_size=vocab, rms_norm_eps=1e-6, tie_word_embeddings=False, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.25},
        attn_implementation="eager",
    )  # fmt: skip


def write_checkpoint(folder: Path, seed: int) -> torch.nn.Module:
    """save_pretrained of a random bf16-valued model (A_log / dt_bias full fp32) + tokenizer."""
    torch.manual_seed(seed)
    tok = bpe_tokenizer()
    model = transformers.Qwen3_5MoeForCausalLM(hf_config(tok.get_vocab_size())).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
            if name.endswith(("mlp.gate.weight", "experts.gate_up_proj", "experts.down_proj")):
                p.copy_(0.2 * torch.randn_like(p))  # initialised at zero / tiny: spread them
            if not name.endswith(("A_log", "dt_bias")):
                round_to_bf16(p)
            else:
                p.add_(1e-3 * torch.randn_like(p))
    model.save_pretrained(folder)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    return model


def load_canonical_moe(model: torch.nn.Module, params: dict[str, np.ndarray]) -> None:
    """The inverse of the canonical cut, MoE blocks included."""

    def put(p: torch.nn.Parameter, value: np.ndarray) -> None:
        p.copy_(torch.from_numpy(np.ascontiguousarray(value)).reshape(p.shape))

    load_canonical(model, params)
    with torch.no_grad():
        for i, layer in enumerate(model.model.layers):
            p, mlp = f"text/layers/{i}/moe/", layer.mlp
            put(mlp.gate.weight, params[p + "router"])
            put(mlp.shared_expert_gate.weight, params[p + "shared_score"])
            for r in ("gate", "up", "down"):
                put(getattr(mlp.shared_expert, f"{r}_proj").weight, params[p + f"shared/{r}"])
            e = [f"{p}experts/{k}/" for k in range(EXPERTS)]
            gate_up = [np.concatenate([params[x + "gate"], params[x + "up"]]) for x in e]
            put(mlp.experts.gate_up_proj, np.stack(gate_up))
            put(mlp.experts.down_proj, np.stack([params[x + "down"] for x in e]))


def chosen_experts(model: torch.nn.Module, tokens: list[int]) -> tuple[np.ndarray, list]:
    """(logits [T, vocab], per layer the chosen experts [T, k] sorted ascending) of one run."""
    seen: list = [None] * len(model.model.layers)
    hooks = []
    for i, layer in enumerate(model.model.layers):

        def hook(_mod, _args, out, i=i) -> None:
            seen[i] = np.sort(out[2].numpy(), axis=1)

        hooks.append(layer.mlp.gate.register_forward_hook(hook))
    try:
        with torch.no_grad():
            logits = model(torch.tensor([tokens])).logits[0].float().numpy()
    finally:
        for h in hooks:
            h.remove()
    return logits, seen
