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
