"""What a VQF conversion writes: weight mode, layout, x8 copies, quantizer, embedding, and the
header flags the engine's repack gates give them (spec/vqf.md §weight-modes, §repack-gates,
§converter).

The gates decide per model, as the engine's converter does: a tiling whose gate fails is left off
(its flag clear, its matrices untiled) rather than refusing the model, and a single matrix the
flagged tiling cannot cover — a q8_lm whose vocabulary is not a multiple of 8 — stays untiled
(`codec_for(..., shape=...)`, spec/vqf.md §q8-tiled).
"""

from __future__ import annotations

from dataclasses import dataclass

from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import WMODE_PROJECTION_SETS

#: Engine weight modes (spec/vqf.md §weight-modes), then the reference-precision files
#: (spec/vqf.md §text-tensors).
WMODES = (*WMODE_PROJECTION_SETS, "f32", "f16")
LAYOUTS = ("tiled", "legacy")
QUANTIZERS = ("kestrel", "kestrel_legacy")
EMBEDDINGS = ("f16", "f32")

#: Each weight mode in words (spec/vqf.md §weight-modes), for --help and docs/commands.md.
WMODE_WORDS = {
    "dual": "a Q8_0 and a Q4_0 copy of every projection; the engine picks one per run",
    "q4": "Q4_0: 4-bit codes, one f16 scale per 32 weights",
    "q8": "Q8_0: 8-bit codes, one f16 scale per 32 weights",
    "q4i": "Q4_0's values (int8 code - 8) in Q8_0 blocks, for the Q8 kernels",
    "g256": "Q8_0 blocks whose runs of 8 (256 weights) share one scale",
    "f32": "reference precision: every tensor binary32, nothing quantized",
    "f16": "reference precision: projections binary16, not quantized",
}

#: The VQF codec (spec/codecs/vqf/registry.py) of each projection set a weight mode writes.
WMODE_CODECS = {
    "dual": ("q8_0", "q4_0"),
    "q4": ("q4_0",),
    "q8": ("q8_0",),
    "q4i": ("q4i8",),
    "g256": ("g256",),
    "f32": ("f32",),
    "f16": ("f16",),
}


def codec_bits_per_weight(codec: str) -> float:
    """Stored bits per weight of one VQF codec: 8 · block bytes / block elements (Q8_0: 8 · 34 /
    32 = 8.5, as llama-quantize counts; tiling moves blocks and changes nothing)."""
    from weightfile.spec.codecs.vqf.registry import CODECS

    c = CODECS[codec]
    return 8 * c.block_bytes / c.block_elements


def bits_per_weight(wmode: str, x8: bool = False) -> float:
    """Stored bits per projection weight of a weight mode: the sum over the sets it writes (dual
    stores two copies; --x8 adds a Q4_0 copy, spec/vqf.md §q4-8x8l)."""
    total = sum(codec_bits_per_weight(c) for c in WMODE_CODECS[wmode])
    return total + (codec_bits_per_weight("q4_0") if x8 else 0.0)


def wmode_help() -> str:
    """The short form for --help: each mode with its bits per weight."""
    return "; ".join(f"{m} {bits_per_weight(m):.1f} bpw ({WMODE_WORDS[m]})" for m in WMODES)


@dataclass(frozen=True)
class VQFPlan:
    """The options of one conversion to VQF (spec/vqf.md §converter)."""

    wmode: str = "q8"
    layout: str = "tiled"  # tiled: the repack gates decide; legacy: no tiling at all
    x8: bool = False  # wmode q4 only: the x8_* copies and X8 (VLLM_ENABLE_8X8L=1)
    quantizer: str = "kestrel"
    embedding: str = "f16"  # f16: EMB_F16 (truncating, spec/vqf.md §f16); f32

    def __post_init__(self) -> None:
        for what, value, allowed in (
            ("weight mode", self.wmode, WMODES),
            ("quantizer", self.quantizer, QUANTIZERS),
            ("embedding", self.embedding, EMBEDDINGS),
        ):
            if value not in allowed:
                raise UnsupportedError(
                    "vqf.import.option", f"{what} {value!r}; expected one of {', '.join(allowed)}"
                )
        if self.layout not in LAYOUTS:
            raise UnsupportedError("vqf.import.layout", f"layout {self.layout!r}", path="layout")
        if self.x8 and self.wmode != "q4":
            raise UnsupportedError(
                "vqf.import.option", f"--x8 is an option of weight mode q4, not {self.wmode}"
            )
        if self.wmode == "f32" and self.embedding != "f32":
            object.__setattr__(self, "embedding", "f32")  # an all-F32 file (spec/vqf.md §converter)

    @property
    def projection_sets(self) -> tuple[str, ...]:
        """The projection sets written: q8, q4 or both (f32/f16 files use the q8 names)."""
        return WMODE_PROJECTION_SETS.get(self.wmode, ("q8",))


def q4_gate(c: Qwen3Config) -> bool:
    """spec/vqf.md §repack-gates: Q4 4x4 iff V, qo, ko are multiples of 4 and d, ff multiples of
    32."""
    four = all(n % 4 == 0 for n in (c.vocab_size, c.q_dim, c.kv_dim))
    return four and c.hidden_size % 32 == 0 and c.intermediate_size % 32 == 0


def q8_gate(c: Qwen3Config, group: int = 8) -> bool:
    """spec/vqf.md §repack-gates: Q8 tiling needs qo, ko, ff, d multiples of the group and d, ff of
    32; V is not part of it."""
    d, ff = c.hidden_size, c.intermediate_size
    return all(n % group == 0 for n in (c.q_dim, c.kv_dim, ff, d)) and d % 32 == 0 and ff % 32 == 0


def x8_gate(c: Qwen3Config) -> bool:
    """spec/vqf.md §flags: X8 needs all 7 per-layer matrices in whole 8-row, 32-column tiles."""
    d, qo, ko, ff = c.hidden_size, c.q_dim, c.kv_dim, c.intermediate_size
    return all(n % 8 == 0 for n in (qo, ko, d, ff)) and all(n % 32 == 0 for n in (d, qo, ff))


def plan_flags(c: Qwen3Config, p: VQFPlan) -> int:
    """The header flags of spec/vqf.md §weight-modes for this model and plan, after the gates of
    spec/vqf.md §repack-gates."""
    flags = 0
    if p.embedding == "f16":
        flags |= VQFFlag.EMB_F16
    if p.layout == "tiled":
        if q4_gate(c):
            flags |= VQFFlag.Q4_4X4  # set even without q4_* tensors, as the engine does
        if p.wmode != "q4i" and q8_gate(c):
            flags |= VQFFlag.Q8_8X8
    if p.wmode == "q4i":
        flags |= VQFFlag.Q8BUF_Q4
    if p.wmode == "g256":
        flags |= VQFFlag.G256
    if p.x8 and x8_gate(c):
        flags |= VQFFlag.X8
    return int(flags)
