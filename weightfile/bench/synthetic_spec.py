"""The geometry of a synthetic bench model (issue 6; weightfile/bench/synthetic.py generates the
files): a real model's shapes (spec/vqf.md §text-tensors symbols) and quantization, with seeded
random weights. Each family's presets (weightfile/families/<family>/presets.py) are instances; this
module imports neither the generator nor a family, so both can import it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.encode import file_flags
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: The two weight modes every preset comes in (spec/vqf.md §weight-modes: wmode q4, q8).
QTYPES = ("q4_0", "q8_0")


@dataclass(frozen=True)
class SyntheticSpec:
    """The geometry (spec/vqf.md §text-tensors symbols in comments) and quantization of one
    synthetic model."""

    name: str
    qtype: str  # "q4_0" (wmode q4) or "q8_0" (wmode q8)
    vocab: int  # V
    hidden: int  # d
    intermediate: int  # ff
    layers: int  # nl
    heads: int
    kv_heads: int
    head_dim: int  # hd
    rope_theta: float = 1_000_000.0
    norm_eps: float = 1e-6
    max_seq_len: int = 8192
    seed: int = 2026

    @property
    def config(self) -> Qwen3Config:
        return Qwen3Config(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            head_dim=self.head_dim,
            rope_theta=self.rope_theta,
            rms_norm_eps=self.norm_eps,
        )

    @property
    def qtype_code(self) -> QType:
        return {"q4_0": QType.Q4_0, "q8_0": QType.Q8_0}[self.qtype]

    @property
    def flags(self) -> int:
        return file_flags(self.qtype_code, "tiled")


@dataclass(frozen=True)
class VLSyntheticSpec(SyntheticSpec):
    """A Qwen3-VL file with its vision tower (flag VISION, spec/vqf.md §vision-tensors,
    §arch-semantics): the text fields of SyntheticSpec plus the vision_config geometry. A subclass,
    so the text-only specs' cache keys do not change."""

    vis_depth: int = 0  # vd
    vis_hidden: int = 0  # vh
    vis_heads: int = 0
    vis_ffn: int = 0  # vf
    vis_max_pos: int = 0  # vmp (S·S)
    deepstack: tuple[int, ...] = ()  # deepstack_visual_indexes, ds = len
    mrope_section: tuple[int, ...] = (24, 20, 20)
    #: vision_start, vision_end, image, video token ids (Qwen3-VL's public config)
    special_ids: tuple[int, int, int, int] = (151_652, 151_653, 151_655, 151_656)

    @property
    def flags(self) -> int:
        return file_flags(self.qtype_code, "tiled") | int(VQFFlag.VISION)


@dataclass(frozen=True)
class MoeSyntheticSpec(SyntheticSpec):
    """A Qwen3-MoE (version-3) synthetic model: `intermediate` is the stacked width E·Ie
    (spec/vqf.md §text-tensors, §arch-semantics). A subclass, so the dense specs' cache keys do not
    change."""

    experts: int = 0  # E
    top_k: int = 0  # k
    moe_ffn: int = 0  # Ie

    @property
    def flags(self) -> int:
        return file_flags(self.qtype_code, "tiled") | int(VQFFlag.MOE)


def both_qtypes(base: str, geometry: dict[str, int | float]) -> tuple[SyntheticSpec, ...]:
    """A dense model's two presets, `<base>-q4_0` and `<base>-q8_0`."""
    return tuple(
        SyntheticSpec(name=f"{base}-{q}", qtype=q, **geometry)  # type: ignore[arg-type]
        for q in QTYPES
    )


#: The matrix formats a synthetic `.ninfer` preset comes in: 8.5 bits a weight (llama.cpp's Q8_0
#: has the same) and bf16 (spec/ninfer3.md §grouped-formats, §contiguous).
NINFER_FORMATS = ("q8_g32_fp16", "bf16")


@dataclass(frozen=True)
class NinferSyntheticSpec:
    """A Qwen3.5 / 3.6 text model of real geometry in a `.ninfer` file (issue 28 item 3): the
    spec/ninfer3.md §qwen35-config keys, every matrix in `fmt` as the importer writes it
    (weightfile/families/qwen35/to_ninfer_plan.py: bf16 embedding and direct parameters), with
    seeded random weights. Layer i is full attention when (i + 1) is a multiple of
    `full_attention_interval`, else Gated DeltaNet. `experts` > 0 makes it the MoE architecture
    (`intermediate` unused), else dense."""

    name: str
    fmt: str  # a NINFER_FORMATS entry
    vocab: int
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    gdn_key_heads: int
    gdn_value_heads: int
    gdn_head_dim: int = 128
    intermediate: int = 0
    experts: int = 0
    top_k: int = 0
    moe_ffn: int = 0
    shared_ffn: int = 0
    tied: bool = False
    full_attention_interval: int = 4
    partial_rotary_factor: float = 0.25
    mrope_section: tuple[int, int, int] = (11, 11, 10)
    rope_theta: float = 10_000_000.0
    norm_eps: float = 1e-6
    max_seq_len: int = 262_144
    seed: int = 2028

    @property
    def architecture(self) -> str:
        return "Qwen3_5MoeForCausalLM" if self.experts else "Qwen3_5ForCausalLM"

    @property
    def config_json(self) -> dict[str, object]:
        """The closed text config (spec/ninfer3.md §qwen35-config)."""
        kinds = [
            "full_attention" if (i + 1) % self.full_attention_interval == 0 else "linear_attention"
            for i in range(self.layers)
        ]
        doc: dict[str, object] = {
            "architectures": [self.architecture],
            "model_type": "qwen3_5_moe_text" if self.experts else "qwen3_5_text",
            "hidden_size": self.hidden, "vocab_size": self.vocab,
            "num_hidden_layers": self.layers, "max_position_embeddings": self.max_seq_len,
            "tie_word_embeddings": self.tied, "rms_norm_eps": self.norm_eps, "layer_types": kinds,
            "num_attention_heads": self.heads, "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "rope_parameters": {
                "rope_theta": self.rope_theta,
                "partial_rotary_factor": self.partial_rotary_factor,
                "mrope_section": list(self.mrope_section),
            },
            "linear_num_key_heads": self.gdn_key_heads, "linear_key_head_dim": self.gdn_head_dim,
            "linear_num_value_heads": self.gdn_value_heads,
            "linear_value_head_dim": self.gdn_head_dim, "linear_conv_kernel_dim": 4,
        }  # fmt: skip
        if "full_attention" not in kinds:  # a -L<n> cut before the first attention layer
            for key in ("num_attention_heads", "num_key_value_heads", "head_dim"):
                del doc[key]
            del doc["rope_parameters"]
        if self.experts:
            doc |= {"num_experts": self.experts, "num_experts_per_tok": self.top_k,
                    "moe_intermediate_size": self.moe_ffn,
                    "shared_expert_intermediate_size": self.shared_ffn}  # fmt: skip
        else:
            doc["intermediate_size"] = self.intermediate
        return doc


def both_ninfer_formats(base: str, geometry: dict[str, Any]) -> tuple[NinferSyntheticSpec, ...]:
    """A `.ninfer` model's two presets, `<base>-q8_g32_fp16` and `<base>-bf16`."""
    return tuple(NinferSyntheticSpec(name=f"{base}-{f}", fmt=f, **geometry) for f in NINFER_FORMATS)
