"""The geometry of a synthetic bench model (issue 6; weightfile/bench/synthetic.py generates the
files): a real model's shapes (spec/vqf.md §text-tensors symbols) and quantization, with seeded
random weights. Each family's presets (weightfile/families/<family>/presets.py) are instances; this
module imports neither the generator nor a family, so both can import it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
