"""A tiny random transformers Qwen3.5 checkpoint folder (both layer types) and its canonical
spec/ninfer3.md §qwen35-names tensors, cut from the transformers modules the way their forward
passes use them.

Shared by the `.ninfer` import tests (tests/convert/test_qwen35_ninfer*.py); needs torch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from strategies.tiny_vqf import bpe_tokenizer

torch = pytest.importorskip("torch", reason="the import check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="the import check needs the 'external' extra (transformers)"
)

FORMATS = ("bf16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16")
SIZES = dict(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    linear_num_key_heads=2,
    linear_key_head_dim=16,
    linear_num_value_heads=4,
    linear_value_head_dim=16,
    linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "full_attention", "linear_attention"],
)
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['content'] }}<|im_end|>{% endfor %}"


def hf_config(tied: bool, vocab: int, sizes: dict | None = None) -> transformers.Qwen3_5TextConfig:
    return transformers.Qwen3_5TextConfig(
        **(SIZES if sizes is None else sizes),
        vocab_size=vocab,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.25},
        tie_word_embeddings=tied,
        eos_token_id=2,
        attn_implementation="eager",
    )  # fmt: skip


def round_to_bf16(t: torch.Tensor) -> None:
    t.copy_(t.to(torch.bfloat16).to(torch.float32))


def write_checkpoint(
    folder: Path, tied: bool, seed: int, sizes: dict | None = None
) -> torch.nn.Module:
    """save_pretrained of a random model (`SIZES` unless `sizes` is given), plus the tokenizer
    files of a tiny BPE tokenizer."""
    torch.manual_seed(seed)
    tok = bpe_tokenizer()
    model = transformers.Qwen3_5ForCausalLM(hf_config(tied, tok.get_vocab_size(), sizes)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))  # zero-centred norms start at 0
            if not name.endswith(("A_log", "dt_bias")):
                round_to_bf16(p)
            else:
                p.add_(1e-3 * torch.randn_like(p))  # bits below bf16 precision
    model.save_pretrained(folder)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    return model


def canonical(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """spec/ninfer3.md §qwen35-names name -> float32 values, cut as the transformers forward passes
    use the modules."""
    cfg, m = model.config, model.model
    out = {
        "text/token_embedding": m.embed_tokens.weight,
        "text/final_norm": m.norm.weight,
        "text/output_head": model.lm_head.weight,
    }
    for i, layer in enumerate(m.layers):
        p = f"text/layers/{i}/"
        out[p + "input_norm"] = layer.input_layernorm.weight
        out[p + "post_attention_norm"] = layer.post_attention_layernorm.weight
        out |= {
            p + f"mlp/{r}": getattr(layer.mlp, f"{r}_proj").weight for r in ("gate", "up", "down")
        }
        if cfg.layer_types[i] == "full_attention":
            a = layer.self_attn
            # forward: q_proj(x).view(..., -1, head_dim * 2), then chunk(2, dim=-1)
            q = a.q_proj.weight.view(cfg.num_attention_heads, 2 * cfg.head_dim, -1)
            query, gate = torch.chunk(q, 2, dim=1)
            out |= {
                p + "attention/query": query.reshape(-1, cfg.hidden_size),
                p + "attention/gate": gate.reshape(-1, cfg.hidden_size),
                p + "attention/key": a.k_proj.weight, p + "attention/value": a.v_proj.weight,
                p + "attention/query_norm": a.q_norm.weight,
                p + "attention/key_norm": a.k_norm.weight, p + "attention/output": a.o_proj.weight,
            }  # fmt: skip
        else:
            g = layer.linear_attn
            # forward: split(in_proj_qkv(x) after the conv, [key_dim, key_dim, value_dim])
            q, k, v = torch.split(g.in_proj_qkv.weight, [g.key_dim, g.key_dim, g.value_dim])
            out |= {
                p + "gdn/query": q, p + "gdn/key": k, p + "gdn/value": v,
                p + "gdn/z": g.in_proj_z.weight, p + "gdn/a_projection": g.in_proj_a.weight,
                p + "gdn/b_projection": g.in_proj_b.weight, p + "gdn/a_log": g.A_log,
                p + "gdn/dt_bias": g.dt_bias, p + "gdn/norm": g.norm.weight,
                p + "gdn/convolution": g.conv1d.weight.squeeze(1).T,  # [taps, channels]
                p + "gdn/output": g.out_proj.weight,
            }  # fmt: skip
    return {k: v.detach().contiguous().numpy().astype(np.float32) for k, v in out.items()}


def load_canonical(model: torch.nn.Module, params: dict[str, np.ndarray]) -> None:
    """Set the transformers model's weights from canonical tensors (the inverse of `canonical`)."""
    cfg, m = model.config, model.model

    def put(p: torch.nn.Parameter, value: np.ndarray) -> None:
        p.copy_(torch.from_numpy(np.ascontiguousarray(value)).reshape(p.shape))

    with torch.no_grad():
        put(m.embed_tokens.weight, params["text/token_embedding"])
        put(m.norm.weight, params["text/final_norm"])
        put(model.lm_head.weight, params["text/output_head"])
        for i, layer in enumerate(m.layers):
            p = f"text/layers/{i}/"
            put(layer.input_layernorm.weight, params[p + "input_norm"])
            put(layer.post_attention_layernorm.weight, params[p + "post_attention_norm"])
            if hasattr(layer.mlp, "gate_proj"):  # dense; an MoE block: qwen35_moe_checkpoint
                for r in ("gate", "up", "down"):
                    put(getattr(layer.mlp, f"{r}_proj").weight, params[p + f"mlp/{r}"])
            if cfg.layer_types[i] == "full_attention":
                a, h, d = layer.self_attn, cfg.hidden_size, cfg.head_dim
                query = params[p + "attention/query"].reshape(-1, d, h)
                gate = params[p + "attention/gate"].reshape(-1, d, h)
                put(a.q_proj.weight, np.concatenate([query, gate], axis=1))  # per head [q | g]
                for name, mod in (("key", a.k_proj), ("value", a.v_proj), ("output", a.o_proj)):
                    put(mod.weight, params[p + "attention/" + name])
                put(a.q_norm.weight, params[p + "attention/query_norm"])
                put(a.k_norm.weight, params[p + "attention/key_norm"])
            else:
                g, q = layer.linear_attn, p + "gdn/"
                qkv = [params[q + n] for n in ("query", "key", "value")]
                put(g.in_proj_qkv.weight, np.concatenate(qkv))
                put(g.in_proj_z.weight, params[q + "z"])
                put(g.in_proj_a.weight, params[q + "a_projection"])
                put(g.in_proj_b.weight, params[q + "b_projection"])
                put(g.A_log, params[q + "a_log"])
                put(g.dt_bias, params[q + "dt_bias"])
                put(g.conv1d.weight, params[q + "convolution"].T)
                put(g.norm.weight, params[q + "norm"])
                put(g.out_proj.weight, params[q + "output"])
