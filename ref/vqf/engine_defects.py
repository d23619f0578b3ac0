"""Which known board-engine defects a VQF file's geometry triggers (spec/numerics.md
§board-defects).

Each check reads the header's arch (and, for the MoE row, which expert matrices the directory
holds) and returns a finding naming its rule id (spec/vqf/defects.py) and, in words, the
file's numbers and what the engine then computes. Nothing here reads a payload.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weightfile.spec.numerics.constants import QBLOCK
from weightfile.spec.vqf.defects import DEFECTS

LANES = 4  # the vision attention's vector width (spec/numerics.md §board-defects)


@dataclass(frozen=True)
class DefectFinding:
    """One defect the file triggers: its rule id and the file's own numbers in words."""

    rule: str
    detail: str


def lost_score_elements(head_dim: int) -> list[tuple[int, int]]:
    """The element ranges [a, b] of a head that the engine's score tree never adds: n = hd/4
    vectors, then acc[i] += acc[i + w] for i < w, w = n/2, n/4, ..., 1; what is left out of acc[0]
    is lost (spec/numerics.md §board-defects). Empty when n is a power of two."""
    n = head_dim // LANES
    held = {i: [i] for i in range(n)}  # vector slot -> the input vectors it holds
    w = n // 2
    while w >= 1:
        for i in range(w):
            held[i] = held[i] + held.pop(i + w)
        for j in [j for j in held if j >= w]:  # slots no longer read
            held.pop(j)
        w //= 2
    kept = set(held.get(0, []))
    return [(LANES * v, LANES * v + LANES - 1) for v in range(n) if v not in kept]


def _vision_head_dim(arch: Mapping[str, Any], _: set[str]) -> DefectFinding | None:
    heads = int(arch.get("vis_heads", 0) or 0)
    if not arch.get("has_vision") or heads <= 0:
        return None
    hd = int(arch["vis_hidden"]) // heads
    lost = lost_score_elements(hd)
    if hd % LANES == 0 and not lost:
        return None
    where = ", ".join(f"{a}..{b}" for a, b in lost) or f"its last {hd % LANES}"
    return DefectFinding(
        "vqf.defect.vision_attention_head_dim",
        f"vision head_dim {hd}: head_dim/4 is not a power of two, so every attention score "
        f"leaves out elements {where} of each head",
    )


def _vision_ffn(arch: Mapping[str, Any], _: set[str]) -> DefectFinding | None:
    ffn = int(arch.get("vis_ffn", 0) or 0)
    if not arch.get("has_vision") or ffn % QBLOCK == 0:
        return None
    padded = -(-ffn // QBLOCK) * QBLOCK
    return DefectFinding(
        "vqf.defect.vision_ffn_stride",
        f"vis_ffn {ffn} is not a multiple of 32: fc1 writes rows {ffn} apart and GELU/fc2 read "
        f"them {padded} apart, so every patch after the first reads its neighbours' values",
    )


def _odd_grid(arch: Mapping[str, Any], _: set[str]) -> DefectFinding | None:
    if not arch.get("has_vision"):
        return None
    return DefectFinding(
        "vqf.defect.vision_odd_grid",
        "for images whose patch grid is odd (a side of 16·odd pixels after resizing), the 2x2 "
        "merge drops the last patch row or column",
    )


def _moe_q8(arch: Mapping[str, Any], names: set[str]) -> DefectFinding | None:
    ie, d = int(arch.get("moe_ffn", 0) or 0), int(arch.get("dim", 0) or 0)
    if not arch.get("n_experts") or "q8_gate" not in names:
        return None
    if ie % QBLOCK == 0 and d % QBLOCK == 0:
        return None
    return DefectFinding(
        "vqf.defect.moe_q8_width",
        f"Q8_0 experts with moe_ffn {ie} and hidden size {d}: not both multiples of 32, so the "
        "engine's Q8 MoE FFN returns zeros and every MoE layer contributes nothing",
    )


#: One check per row of spec/vqf/defects.py, in its order.
CHECKS: tuple[Callable[[Mapping[str, Any], set[str]], DefectFinding | None], ...] = (
    _vision_head_dim,
    _vision_ffn,
    _odd_grid,
    _moe_q8,
)
assert len(CHECKS) == len(DEFECTS)


def engine_defects(arch: Mapping[str, Any], entry_names: Sequence[str]) -> list[DefectFinding]:
    """spec/numerics.md §board-defects every defect this header and directory trigger."""
    names = set(entry_names)
    return [f for check in CHECKS if (f := check(arch, names)) is not None]


def engine_defects_file(vqf: Any) -> list[DefectFinding]:
    """`engine_defects` of an open VQFFile (header and directory only)."""
    return engine_defects(vqf.header.arch, [e.name for e in vqf.entries])
