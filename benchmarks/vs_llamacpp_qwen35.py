"""llama.cpp's `qwen35` / `qwen35moe` GGUF of a synthetic `.ninfer` preset's geometry, written with
gguf-py for benchmarks/vs_llamacpp.py `--arch qwen35|qwen35moe` (issue 28 item 4).

The tensor names, shapes and metadata keys are the ones llama.cpp's loader asks for (its source,
commit 0c1e570 of the llama_cpp_python 0.3.36 sdist: src/models/qwen35.cpp, qwen35moe.cpp,
src/llama-arch.cpp), restated here:

* per layer `attn_norm`, `post_attention_norm`, `ffn_*` (dense) or `ffn_gate_inp`,
  `ffn_{gate,up,down}_exps` [E, ·, ·], `ffn_gate_inp_shexp` [H], `ffn_{gate,up,down}_shexp` (MoE);
* a full-attention layer: `attn_q` with the query and its gate together (2 · heads · head_dim
  rows), `attn_k`, `attn_v`, `attn_output`, `attn_q_norm`, `attn_k_norm`;
* a Gated DeltaNet layer: `attn_qkv` (2 · key_dim + value_dim rows), `attn_gate` (z, value_dim
  rows), `ssm_conv1d` [conv_dim, kernel], `ssm_dt.bias`, `ssm_a` [value heads], `ssm_beta`,
  `ssm_alpha` [value heads rows], `ssm_norm` [head_v_dim], `ssm_out`;
* keys `<arch>.ssm.{conv_kernel, inner_size (value_dim), state_size (head dim), time_step_rank
  (value heads), group_count (key heads)}`, `<arch>.full_attention_interval`,
  `<arch>.rope.dimension_sections` (4 entries), `<arch>.rope.dimension_count`, the expert counts
  and widths for MoE.

Random weights make llama.cpp's value-head reordering and its norm conventions (it adds the 1 of
the zero-centred norms at conversion) irrelevant to speed; the file has to load and compute the
same amount. Matrices are Q8_0 (against our q8_g32_fp16: 8.5 bits a weight both) or BF16; the
token embedding is BF16 in both, as our importer writes it (a direct parameter, spec/ninfer3.md
§qwen35-names), so the tied output head reads the same bytes on both sides; 1-D tensors and the
convolution F32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from weightfile.bench.synthetic_spec import NinferSyntheticSpec


def random_matrix(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Raw bytes of a [.., rows, cols] matrix: Q8_0 blocks (f16 scale, 32 int8) or bf16 words."""
    *lead, rows, _cols = shape
    if kind == "bf16":
        w = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
        return (w.view(np.uint32) >> 16).astype(np.uint16)
    blocks = int(np.prod(shape)) // 32
    d = (rng.uniform(0.5, 1.5, blocks) * 0.06 / 127).astype(np.float16).view(np.uint8)
    qs = rng.integers(0, 256, (blocks, 32), dtype=np.uint8)
    return np.concatenate([d.reshape(blocks, 2), qs], axis=1).reshape(*lead, rows, -1)


def layer_tensors(s: NinferSyntheticSpec, i: int) -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, numpy shape [.., rows, cols], is a matrix) of layer i."""
    b, h = f"blk.{i}.", s.hidden
    out: list[tuple[str, tuple[int, ...], bool]] = [
        (b + "attn_norm.weight", (h,), False),
        (b + "post_attention_norm.weight", (h,), False),
    ]
    if (i + 1) % s.full_attention_interval == 0:
        q, kv = s.heads * s.head_dim, s.kv_heads * s.head_dim
        out += [
            (b + "attn_q.weight", (2 * q, h), True),
            (b + "attn_k.weight", (kv, h), True),
            (b + "attn_v.weight", (kv, h), True),
            (b + "attn_output.weight", (h, q), True),
            (b + "attn_q_norm.weight", (s.head_dim,), False),
            (b + "attn_k_norm.weight", (s.head_dim,), False),
        ]
    else:
        key, value = s.gdn_key_heads * s.gdn_head_dim, s.gdn_value_heads * s.gdn_head_dim
        vh = s.gdn_value_heads
        out += [
            (b + "attn_qkv.weight", (2 * key + value, h), True),
            (b + "attn_gate.weight", (value, h), True),
            (b + "ssm_conv1d.weight", (2 * key + value, 4), False),
            (b + "ssm_dt.bias", (vh,), False),
            (b + "ssm_a", (vh,), False),
            (b + "ssm_beta.weight", (vh, h), True),
            (b + "ssm_alpha.weight", (vh, h), True),
            (b + "ssm_norm.weight", (s.gdn_head_dim,), False),
            (b + "ssm_out.weight", (h, value), True),
        ]
    return out + ffn_tensors(s, b)


def ffn_tensors(s: NinferSyntheticSpec, b: str) -> list[tuple[str, tuple[int, ...], bool]]:
    h = s.hidden
    if not s.experts:
        f = s.intermediate
        return [
            (b + "ffn_gate.weight", (f, h), True),
            (b + "ffn_up.weight", (f, h), True),
            (b + "ffn_down.weight", (h, f), True),
        ]
    e, f, sh = s.experts, s.moe_ffn, s.shared_ffn
    return [(b + "ffn_gate_inp.weight", (e, h), False),
            (b + "ffn_gate_exps.weight", (e, f, h), True),
            (b + "ffn_up_exps.weight", (e, f, h), True),
            (b + "ffn_down_exps.weight", (e, h, f), True),
            (b + "ffn_gate_inp_shexp.weight", (h,), False),
            (b + "ffn_gate_shexp.weight", (sh, h), True),
            (b + "ffn_up_shexp.weight", (sh, h), True),
            (b + "ffn_down_shexp.weight", (h, sh), True)]  # fmt: skip


def metadata(w: Any, s: NinferSyntheticSpec, arch: str) -> None:
    """The hyperparameters llama.cpp's qwen35 / qwen35moe loaders read."""
    u32 = {"context_length": s.max_seq_len, "embedding_length": s.hidden,
           "block_count": s.layers, "feed_forward_length": s.intermediate or s.moe_ffn,
           "attention.head_count": s.heads, "attention.head_count_kv": s.kv_heads,
           "attention.key_length": s.head_dim, "attention.value_length": s.head_dim,
           "rope.dimension_count": 2 * sum(s.mrope_section), "ssm.conv_kernel": 4,
           "ssm.inner_size": s.gdn_value_heads * s.gdn_head_dim, "ssm.state_size": s.gdn_head_dim,
           "ssm.time_step_rank": s.gdn_value_heads, "ssm.group_count": s.gdn_key_heads,
           "full_attention_interval": s.full_attention_interval}  # fmt: skip
    if s.experts:
        u32 |= {"expert_count": s.experts, "expert_used_count": s.top_k,
                "expert_feed_forward_length": s.moe_ffn,
                "expert_shared_feed_forward_length": s.shared_ffn}  # fmt: skip
    for key, value in u32.items():
        w.add_uint32(f"{arch}.{key}", value)
    w.add_float32(f"{arch}.rope.freq_base", s.rope_theta)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", s.norm_eps)
    w.add_array(f"{arch}.rope.dimension_sections", [*s.mrope_section, 0])


def write_gguf(s: NinferSyntheticSpec, kind: str, path: Path, seed: int = 28) -> Path:
    """The GGUF of `s`'s geometry, matrices in `kind` ("q8_0" or "bf16"); reused when present."""
    import gguf

    if path.is_file():
        return path
    arch = "qwen35moe" if s.experts else "qwen35"
    rng = np.random.default_rng(seed)
    raw = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "bf16": gguf.GGMLQuantizationType.BF16}
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    w = gguf.GGUFWriter(part, arch)
    w.add_name(f"synthetic {s.name} ({kind}, random weights)")
    metadata(w, s, arch)
    w.add_file_type(
        gguf.LlamaFileType.MOSTLY_Q8_0 if kind == "q8_0" else gguf.LlamaFileType.MOSTLY_BF16
    )
    w.add_tokenizer_model("none")  # no vocabulary: vocab_size placeholder tokens
    w.add_vocab_size(s.vocab)
    tensors = [("token_embd.weight", (s.vocab, s.hidden), "bf16"), ("output_norm.weight",
               (s.hidden,), None)]  # fmt: skip
    if not s.tied:
        tensors.append(("output.weight", (s.vocab, s.hidden), kind))
    for i in range(s.layers):
        tensors += [(n, shape, kind if m else None) for n, shape, m in layer_tensors(s, i)]
    for name, shape, k in tensors:
        if name.endswith("ffn_gate_inp.weight"):  # a random router: routes vary by token
            w.add_tensor(name, rng.standard_normal(shape, dtype=np.float32))
        elif k is None:
            w.add_tensor(name, np.ones(shape, dtype=np.float32) * np.float32(0.5))
        else:
            data = random_matrix(k, shape, rng)
            w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=raw[k])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    part.rename(path)
    return path
