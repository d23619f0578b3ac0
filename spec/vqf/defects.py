"""Known defects of the board engine that a file's geometry triggers (spec/numerics.md
§board-defects).

Declarative: one row per defect, its rule id, what triggers it and what the engine then computes.
The file is valid and the engine loads it, but the board's output for it is not the model's;
`verify --engine-defaults` and `inspect` name each row a file triggers
(`weightfile.ref.vqf.engine_defects` evaluates them from the header). The rule rows of
spec/rules.py carry the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from weightfile.spec.rule import INV, Rule, table


@dataclass(frozen=True, slots=True)
class EngineDefect:
    """One defect: its rule id, the geometry that triggers it, the engine's wrong result."""

    rule: str
    trigger: str
    effect: str


DEFECTS: Final = (
    EngineDefect(
        "vqf.defect.vision_attention_head_dim",
        "a vision tower whose head_dim (vis_hidden / vis_heads) over 4 is not a power of two",
        "the attention scores' halving tree never adds some 4-lane products",
    ),
    EngineDefect(
        "vqf.defect.vision_ffn_stride",
        "a vision tower whose vis_ffn is not a multiple of 32",
        "GELU and fc2 read fc1's rows with the padded stride: every patch after the first is fed "
        "a window shifted into its neighbours",
    ),
    EngineDefect(
        "vqf.defect.vision_odd_grid",
        "a vision tower (for images whose patch grid is odd)",
        "the 2x2 merge drops the grid's last patch row or column",
    ),
    EngineDefect(
        "vqf.defect.moe_q8_width",
        "Q8_0 experts whose moe_ffn or hidden size is not a multiple of 32",
        "the Q8 MoE FFN returns zeros without an error: every MoE layer contributes nothing",
    ),
)

#: The rule rows (origin `defect`: reported, never raised).
DEFECT_RULES = table(
    Rule(d.rule, INV, "defect", "§board-defects", f"{d.trigger}: {d.effect}", doc="numerics")
    for d in DEFECTS
)
