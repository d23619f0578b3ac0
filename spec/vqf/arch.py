"""VQFArch: the model architecture inside the header (spec/vqf.md §header-layout, §arch-semantics).

45 little-endian words, 180 bytes, starting at header offset 16. The legacy layout
(spec/vqf.md §legacy-header) stores only the first 41 words: it has no MoE tail.
"""

from __future__ import annotations

from construct import Array, Float32l, Int32sl, Int32ul, Struct

#: The first 41 words, identical in both header layouts (header offsets 16..179).
ARCH_CORE_FIELDS = (
    "dim" / Int32ul * "hidden_size; > 0",
    "n_layers" / Int32ul * "num_hidden_layers; > 0",
    "n_heads" / Int32ul * "num_attention_heads; > 0",
    "n_kv_heads" / Int32ul * "num_key_value_heads (GQA); not checked by the loader",
    "head_dim" / Int32ul * "head_dim; > 0",
    "ffn_dim" / Int32ul * "intermediate_size; MoE: n_experts * moe_ffn",
    "vocab_size" / Int32ul * "vocab_size; > 0",
    "max_seq_len" / Int32ul * "context limit, clamped to <= 8192 by the converters",
    "rope_theta" / Float32l * "rope_theta",
    "norm_eps" / Float32l * "rms_norm_eps",
    "bos_id" / Int32ul * "bos_token_id",
    "eos_id" / Int32ul * "eos_token_id",
    "has_q_norm" / Int32ul * "0/1: per-head RMSNorm on Q and K",
    "has_mrope" / Int32ul * "0/1: Qwen3-VL multimodal RoPE",
    "head_dim_full" / Int32ul * "always = head_dim",
    "kv_lora_rank" / Int32ul * "always 0 (reserved)",
    "has_vision" / Int32ul * "0/1",
    "vis_depth" / Int32ul * "vision_config.depth",
    "vis_hidden" / Int32ul * "vision_config.hidden_size",
    "vis_heads" / Int32ul * "vision_config.num_heads",
    "vis_ffn" / Int32ul * "vision_config.intermediate_size",
    "vis_patch" / Int32ul * "patch_size",
    "vis_temporal" / Int32ul * "temporal_patch_size",
    "vis_merge" / Int32ul * "spatial_merge_size",
    "vis_out_dim" / Int32ul * "out_hidden_size",
    "vis_in_chan" / Int32ul * "in_channels; informational, not used for sizes",
    "vis_max_pos" / Int32ul * "num_position_embeddings",
    "vis_ds_count" / Int32ul * "len(deepstack_visual_indexes), <= 4",
    "mrope_n_sec" / Int32ul * "number of mrope_section entries, <= 4",
    "vis_ds_idx" / Array(4, Int32sl) * "deepstack ViT block indices; unused slots 0",
    "mrope_sections" / Array(4, Int32sl) * "rope_scaling.mrope_section; unused slots 0",
    "vision_start_id" / Int32ul * "vision_start_token_id",
    "vision_end_id" / Int32ul * "vision_end_token_id",
    "image_token_id" / Int32ul * "image_token_id",
    "video_token_id" / Int32ul * "video_token_id",
)

#: The 4-word MoE tail of the current layout (header offsets 180..195); 0 for dense models.
ARCH_MOE_FIELDS = (
    "n_experts" / Int32ul * "num_experts",
    "moe_ffn" / Int32ul * "moe_intermediate_size",
    "top_k" / Int32ul * "num_experts_per_tok",
    "shared_experts" / Int32ul * "num_shared_experts",
)

VQFArch = Struct(*ARCH_CORE_FIELDS, *ARCH_MOE_FIELDS)  # 45 words, 180 bytes
VQFArchLegacy = Struct(*ARCH_CORE_FIELDS)  # 41 words, 164 bytes

#: Field names in file order (the two arrays count once each here, four words on disk).
ARCH_FIELD_NAMES: tuple[str, ...] = tuple(sc.name for sc in VQFArch.subcons)
MOE_FIELD_NAMES: tuple[str, ...] = tuple(sc.name for sc in ARCH_MOE_FIELDS)
ARRAY_FIELD_NAMES = ("vis_ds_idx", "mrope_sections")

#: The arch gate of spec/vqf.md §legacy-header step 2: these must all be > 0 (n_kv_heads is not
#: checked).
GATED_FIELD_NAMES = ("dim", "n_layers", "n_heads", "head_dim", "ffn_dim", "vocab_size")


def arch_defaults() -> dict[str, object]:
    """An all-zero arch (every field present), the base a writer fills in."""
    values: dict[str, object] = dict.fromkeys(ARCH_FIELD_NAMES, 0)
    values["rope_theta"] = 0.0
    values["norm_eps"] = 0.0
    for name in ARRAY_FIELD_NAMES:
        values[name] = [0, 0, 0, 0]
    return values
