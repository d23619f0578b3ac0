"""Random tiny Qwen3-MoE VQF files (version 3), for the binder and the fast == ref properties.

The weights are a random transformers-named state dict written by the importer's own inventory
builder (weightfile/families/qwen3_moe/to_vqf.py), so the files are what `weightfile import` writes.
Router ties are drawn on purpose: duplicated router rows (every odd expert a copy of expert 0)
give experts bit-equal logits, and a zero router gives every expert the same logit (the tie
rule of spec/models.md §qwen35-ffn decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.families.qwen3.to_vqf import arch_from_config
from weightfile.families.qwen3_moe.hf_names import ATTENTION_FIELDS, expert_tensor, router_tensor
from weightfile.families.qwen3_moe.to_vqf import build_tensors
from weightfile.fast.backend import FAST
from weightfile.ref.qwen3_moe.config import Qwen3MoeConfig
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: (projection qtype, header flags): the layouts an expert band can take.
MOE_FORMATS = {
    "q8_0": (QType.Q8_0, 0),
    "q8_0_8x8": (QType.Q8_0, VQFFlag.Q8_8X8),
    "q4_0": (QType.Q4_0, 0),
    "q4_0_4x4": (QType.Q4_0, VQFFlag.Q4_4X4),
    "f32": (QType.F32, 0),
    "f16": (QType.F16, 0),
}
TIES = ("none", "duplicate", "zero")


@dataclass(frozen=True)
class MoeSpec:
    """What a random MoE file holds."""

    config: Qwen3MoeConfig
    matrix_format: str
    ties: str
    seed: int

    def describe(self) -> str:
        c = self.config
        return (
            f"{self.matrix_format} ties={self.ties} d={c.hidden_size} E={c.num_experts} "
            f"k={c.num_experts_per_tok} Ie={c.moe_intermediate_size} L={c.num_hidden_layers} "
            f"h={c.num_attention_heads}/{c.num_key_value_heads}x{c.head_dim} V={c.vocab_size} "
            f"tied={c.tie_word_embeddings}"
        )


def moe_config(
    *, vocab: int = 40, hidden: int = 32, layers: int = 1, heads: int = 2, kv_heads: int = 1,
    head_dim: int = 16, experts: int = 4, top_k: int = 2, moe_ffn: int = 32, tied: bool = False,
) -> Qwen3MoeConfig:  # fmt: skip
    return Qwen3MoeConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=experts * moe_ffn,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        head_dim=head_dim, rope_theta=10000.0, rms_norm_eps=1e-6, tie_word_embeddings=tied,
        num_experts=experts, num_experts_per_tok=top_k, moe_intermediate_size=moe_ffn,
    )  # fmt: skip


@st.composite
def moe_specs(draw: st.DrawFn) -> MoeSpec:
    """A random small MoE geometry: widths multiples of 32, row counts of 8 (tiles)."""
    experts = draw(st.integers(2, 6))
    head_dim = draw(st.sampled_from([8, 16]))
    kv = draw(st.integers(1, 2))
    heads = kv * draw(st.integers(1, 2))
    while heads * head_dim % 32:
        heads *= 2
    config = moe_config(
        vocab=draw(st.integers(8, 40)), hidden=32 * draw(st.integers(1, 2)),
        layers=draw(st.integers(1, 2)), heads=heads, kv_heads=kv, head_dim=head_dim,
        experts=experts, top_k=draw(st.integers(1, experts)),
        moe_ffn=32 * draw(st.integers(1, 2)), tied=draw(st.booleans()),
    )  # fmt: skip
    return MoeSpec(
        config,
        draw(st.sampled_from(sorted(MOE_FORMATS))),
        draw(st.sampled_from(TIES)),
        draw(st.integers(0, 2**32 - 1)),
    )


def state_dict(spec: MoeSpec) -> dict[str, np.ndarray]:
    """Random transformers-named weights (norms around 1) with the spec's router ties."""
    c, rng = spec.config, np.random.default_rng(spec.seed)
    d, ne, ie = c.hidden_size, c.num_experts, c.moe_intermediate_size

    def values(*shape: int, base: float = 0.0, scale: float = 0.3) -> np.ndarray:
        return (base + scale * rng.standard_normal(shape)).astype(np.float32)

    sd = {EMBED: values(c.vocab_size, d, scale=1.0), FINAL_NORM: values(d, base=1.0)}
    if not c.tie_word_embeddings:
        sd[LM_HEAD] = values(c.vocab_size, d)
    shapes = {
        "attn_norm": (d,), "ffn_norm": (d,), "q_norm": (c.head_dim,), "k_norm": (c.head_dim,),
        "q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
        "o_proj": (d, c.q_dim),
    }  # fmt: skip
    for i in range(c.num_hidden_layers):
        for f in ATTENTION_FIELDS:
            norm = f.endswith("norm")
            sd[layer_tensor(i, f)] = values(*shapes[f], base=1.0 if norm else 0.0)
        router = values(ne, d, scale=1.0)
        if spec.ties == "duplicate":  # every odd expert has expert 0's logit
            router[1::2] = router[0]
        elif spec.ties == "zero" and i == 0:
            router[:] = 0.0
        sd[router_tensor(i)] = router
        for e in range(ne):
            sd[expert_tensor(i, e, "gate")] = values(ie, d)
            sd[expert_tensor(i, e, "up")] = values(ie, d)
            sd[expert_tensor(i, e, "down")] = values(d, ie)
    return sd


def moe_file_parts(spec: MoeSpec) -> tuple[dict[str, Any], list[TensorSource], int]:
    """(arch, tensors, flags) of the spec's version-3 file."""
    c = spec.config
    qtype, flags = MOE_FORMATS[spec.matrix_format]
    flags |= VQFFlag.MOE | (0 if qtype == QType.F32 else VQFFlag.EMB_F16)
    tensors = build_tensors(
        state_dict(spec), c, c.num_experts, c.moe_intermediate_size, qtype, int(flags),
        FAST,
    )  # fmt: skip
    if c.tie_word_embeddings:  # the importer always writes an lm_head; a tied file has none
        tensors = [t for t in tensors if not t.name.endswith("_lm")]
    arch = arch_from_config({"bos_token_id": 0, "eos_token_id": 0}, c)
    arch |= {"n_experts": c.num_experts, "moe_ffn": c.moe_intermediate_size,
             "top_k": c.num_experts_per_tok}  # fmt: skip
    return arch, tensors, int(flags)


def write_moe_file(path: Path, spec: MoeSpec) -> Path:
    arch, tensors, flags = moe_file_parts(spec)
    return write_vqf(path, arch=arch, tensors=tensors, flags=flags)
