"""A Hugging Face Qwen3.5 checkpoint folder with the official Qwen3.6-27B layer pattern (64
layers, full attention every 4th, a 27-block vision tower, one MTP layer) at tiny widths, written
straight as safetensors (no transformers model), so importing it takes seconds.

The tensor names and shapes are transformers' `Qwen3_5ForConditionalGeneration` ones (the text
model under `model.language_model.`, the tower under `model.visual.`) and the MTP names of the
hub checkpoints, which transformers drops on load: `mtp.fc.weight` [H, 2H],
`mtp.pre_fc_norm_embedding.weight`, `mtp.pre_fc_norm_hidden.weight`, `mtp.norm.weight` and
`mtp.layers.0.*` as a full-attention text layer (spec/ninfer3.md §qwen35-mtp-import). They are
listed here by hand, independently of the importer's mapping.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from strategies.qwen35_checkpoint import TEMPLATE
from strategies.tiny_vqf import bpe_tokenizer

TEXT = dict(
    hidden_size=32, intermediate_size=64, num_attention_heads=2, num_key_value_heads=1,
    head_dim=16, linear_num_key_heads=2, linear_key_head_dim=32, linear_num_value_heads=4,
    linear_value_head_dim=32, linear_conv_kernel_dim=4,
)  # fmt: skip
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=32)  # fmt: skip
VISION = dict(
    hidden_size=16, intermediate_size=24, num_heads=2, patch_size=2, temporal_patch_size=2,
    spatial_merge_size=2, num_position_embeddings=16,
)  # fmt: skip
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
PROCESSOR = dict(patch_size=2, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3,
                 image_std=[0.5] * 3, min_pixels=16, max_pixels=1024)  # fmt: skip


def layer_types(n: int) -> list[str]:
    """Full attention every 4th layer (layers 3, 7, ...), as the official models."""
    return ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]


def config(layers: int, depth: int, vocab: int, moe: bool, mtp: bool) -> dict[str, Any]:
    text = dict(
        TEXT, **(MOE if moe else {}), num_hidden_layers=layers, layer_types=layer_types(layers),
        vocab_size=vocab, rms_norm_eps=1e-6, hidden_act="silu", attention_bias=False,
        max_position_embeddings=4096, tie_word_embeddings=False, eos_token_id=2,
        model_type="qwen3_5_moe_text" if moe else "qwen3_5_text",
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True},
    )  # fmt: skip
    if moe:
        del text["intermediate_size"]
    if mtp:
        text["mtp_num_hidden_layers"] = 1
    out: dict[str, Any] = {
        "architectures": ["Qwen3_5MoeForConditionalGeneration" if moe
                          else "Qwen3_5ForConditionalGeneration"],
        "model_type": "qwen3_5_moe" if moe else "qwen3_5",
        "text_config": text, "tie_word_embeddings": False,
    }  # fmt: skip
    if depth:
        out["vision_config"] = dict(
            VISION, depth=depth, out_hidden_size=TEXT["hidden_size"], in_channels=3,
            hidden_act="gelu_pytorch_tanh", deepstack_visual_indexes=[],
            model_type="qwen3_5_moe_vision" if moe else "qwen3_5_vision",
        )  # fmt: skip
    return out


def ffn_shapes(p: str, moe: bool, fused: bool) -> dict[str, tuple[int, ...]]:
    h, i = TEXT["hidden_size"], TEXT["intermediate_size"]
    if not moe:
        return {p + f"mlp.{r}_proj.weight": s for r, s in
                (("gate", (i, h)), ("up", (i, h)), ("down", (h, i)))}  # fmt: skip
    e, ir, is_ = (
        MOE["num_experts"],
        MOE["moe_intermediate_size"],
        MOE["shared_expert_intermediate_size"],
    )
    out: dict[str, tuple[int, ...]] = {p + "mlp.gate.weight": (e, h),
                                       p + "mlp.shared_expert_gate.weight": (1, h)}  # fmt: skip
    if fused:
        out[p + "mlp.experts.gate_up_proj"] = (e, 2 * ir, h)
        out[p + "mlp.experts.down_proj"] = (e, h, ir)
    else:
        for x in range(e):
            q = f"{p}mlp.experts.{x}."
            out |= {q + "gate_proj.weight": (ir, h), q + "up_proj.weight": (ir, h),
                    q + "down_proj.weight": (h, ir)}  # fmt: skip
    for r, s in (("gate", (is_, h)), ("up", (is_, h)), ("down", (h, is_))):
        out[p + f"mlp.shared_expert.{r}_proj.weight"] = s
    return out


def attention_shapes(p: str) -> dict[str, tuple[int, ...]]:
    h, d = TEXT["hidden_size"], TEXT["head_dim"]
    q, kv = TEXT["num_attention_heads"] * d, TEXT["num_key_value_heads"] * d
    return {
        p + "self_attn.q_proj.weight": (2 * q, h), p + "self_attn.k_proj.weight": (kv, h),
        p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
        p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
    }  # fmt: skip


def gdn_shapes(p: str) -> dict[str, tuple[int, ...]]:
    h = TEXT["hidden_size"]
    kg = TEXT["linear_num_key_heads"] * TEXT["linear_key_head_dim"]
    nv = TEXT["linear_num_value_heads"]
    vg = nv * TEXT["linear_value_head_dim"]
    a = p + "linear_attn."
    return {
        a + "in_proj_qkv.weight": (2 * kg + vg, h), a + "in_proj_z.weight": (vg, h),
        a + "in_proj_a.weight": (nv, h), a + "in_proj_b.weight": (nv, h), a + "A_log": (nv,),
        a + "dt_bias": (nv,), a + "conv1d.weight": (2 * kg + vg, 1, TEXT["linear_conv_kernel_dim"]),
        a + "norm.weight": (TEXT["linear_value_head_dim"],), a + "out_proj.weight": (h, vg),
    }  # fmt: skip


def layer_shapes(p: str, kind: str, moe: bool, fused: bool) -> dict[str, tuple[int, ...]]:
    h = TEXT["hidden_size"]
    out = {p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,)}
    out |= attention_shapes(p) if kind == "full_attention" else gdn_shapes(p)
    return out | ffn_shapes(p, moe, fused)


def vision_shapes(depth: int) -> dict[str, tuple[int, ...]]:
    w, i, h = VISION["hidden_size"], VISION["intermediate_size"], TEXT["hidden_size"]
    pd = 3 * VISION["temporal_patch_size"] * VISION["patch_size"] ** 2
    m = w * VISION["spatial_merge_size"] ** 2
    v = "model.visual."
    out = {v + "patch_embed.proj.weight": (w, 3, VISION["temporal_patch_size"],
                                           VISION["patch_size"], VISION["patch_size"]),
           v + "patch_embed.proj.bias": (w,),
           v + "pos_embed.weight": (VISION["num_position_embeddings"], w)}  # fmt: skip
    assert w * pd == int(np.prod(out[v + "patch_embed.proj.weight"]))
    for b in range(depth):
        q = f"{v}blocks.{b}."
        out |= {
            q + "norm1.weight": (w,), q + "norm1.bias": (w,), q + "norm2.weight": (w,),
            q + "norm2.bias": (w,), q + "attn.qkv.weight": (3 * w, w),
            q + "attn.qkv.bias": (3 * w,),
            q + "attn.proj.weight": (w, w), q + "attn.proj.bias": (w,),
            q + "mlp.linear_fc1.weight": (i, w), q + "mlp.linear_fc1.bias": (i,),
            q + "mlp.linear_fc2.weight": (w, i), q + "mlp.linear_fc2.bias": (w,),
        }  # fmt: skip
    out |= {v + "merger.norm.weight": (w,), v + "merger.norm.bias": (w,),
            v + "merger.linear_fc1.weight": (m, m), v + "merger.linear_fc1.bias": (m,),
            v + "merger.linear_fc2.weight": (h, m), v + "merger.linear_fc2.bias": (h,)}  # fmt: skip
    return out


def mtp_shapes(moe: bool, fused: bool) -> dict[str, tuple[int, ...]]:
    h = TEXT["hidden_size"]
    out = {"mtp.fc.weight": (h, 2 * h), "mtp.pre_fc_norm_embedding.weight": (h,),
           "mtp.pre_fc_norm_hidden.weight": (h,), "mtp.norm.weight": (h,)}  # fmt: skip
    return out | layer_shapes("mtp.layers.0.", "full_attention", moe, fused)


def shapes(layers: int, depth: int, vocab: int, moe: bool, mtp: bool, fused: bool
           ) -> dict[str, tuple[int, ...]]:  # fmt: skip
    t = "model.language_model."
    h = TEXT["hidden_size"]
    out = {t + "embed_tokens.weight": (vocab, h), t + "norm.weight": (h,),
           "lm_head.weight": (vocab, h)}  # fmt: skip
    for n, kind in enumerate(layer_types(layers)):
        out |= layer_shapes(f"{t}layers.{n}.", kind, moe, fused)
    if depth:
        out |= vision_shapes(depth)
    if mtp:
        out |= mtp_shapes(moe, fused)
    return out


def write_official(
    folder: Path,
    *,
    layers: int = 64,
    depth: int = 27,
    moe: bool = False,
    mtp: bool = True,
    fused: bool = False,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """The checkpoint folder (config, safetensors, the six resources); returns the tensors
    (float32, every value a bf16 one)."""
    from safetensors.numpy import save_file

    tok = bpe_tokenizer()
    tok.add_special_tokens(list(VISION_TOKENS))
    vocab = tok.get_vocab_size()
    rng = np.random.default_rng(seed)
    tensors = {}
    for name, shape in shapes(layers, depth, vocab, moe, mtp, fused).items():
        x = rng.standard_normal(shape).astype(np.float32) * 0.3
        if name.endswith("A_log"):
            x = np.log(rng.uniform(1, 8, shape)).astype(np.float32)
        bits = x.view(np.uint32) & np.uint32(0xFFFF0000)  # exact bf16 values
        tensors[name] = bits.view(np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(config(layers, depth, vocab, moe, mtp)))
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": 2}))
    (folder / "preprocessor_config.json").write_text(json.dumps(PROCESSOR))
    (folder / "video_preprocessor_config.json").write_text(json.dumps(PROCESSOR))
    return tensors
