"""Two dumps compared as a whole: the verdict `weightfile diff` prints (spec/numerics.md
§dump-diff).

The result is "equal" when every array compared is bit-identical (or within the tolerance given)
and, unless `common_only`, no array is in one file only — the arrays a trace could not be mapped
to the board's names included. An empty comparison (nothing in common while something was on one
side) is "different": comparing nothing proves nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .compare import ArrayDiff, Tolerance, compare_arrays
from .names import board_order, divergence, is_board, is_op, views
from .read import Dump

SCHEMA = "weightfile.diff/1"


@dataclass(slots=True)
class Report:
    """Everything `weightfile diff` says about two dumps."""

    a: Dump
    b: Dump
    tolerance: Tolerance
    common_only: bool
    naming: str = ""
    notes: list[str] = field(default_factory=list)
    arrays: list[ArrayDiff] = field(default_factory=list)
    only_a: list[tuple[str, str]] = field(default_factory=list)  # (name, why)
    only_b: list[tuple[str, str]] = field(default_factory=list)
    first_divergence: str = ""

    @property
    def equal(self) -> bool:
        one_sided = bool(self.only_a or self.only_b) and not self.common_only
        empty = not self.arrays and bool(self.only_a or self.only_b)
        return all(d.ok for d in self.arrays) and not one_sided and not empty

    def as_json(self) -> dict:
        """The document of `diff --json` (schema weightfile.diff/1)."""
        t = self.tolerance
        return {
            "schema": SCHEMA,
            "result": "equal" if self.equal else "different",
            "a": {"path": str(self.a.path), "format": self.a.kind, "arrays": len(self.a.names)},
            "b": {"path": str(self.b.path), "format": self.b.kind, "arrays": len(self.b.names)},
            "tolerance": {"atol": t.atol, "rtol": t.rtol, "max_ulps": t.max_ulps},
            "common_only": self.common_only,
            "naming": self.naming or "direct",
            "notes": self.notes,
            "only_in_a": [{"name": n, "why": w} for n, w in self.only_a],
            "only_in_b": [{"name": n, "why": w} for n, w in self.only_b],
            "arrays": [_array_json(d) for d in self.arrays],
            "first_divergence": self.first_divergence or None,
        }


def _array_json(d: ArrayDiff) -> dict:
    floats = "a_bits" in d.first  # ulps and signs are said of floats only
    return {
        "name": d.name, "source": d.source or None, "status": d.status, "note": d.note or None,
        "shape_a": list(d.shape_a), "shape_b": list(d.shape_b),
        "dtype_a": d.dtype_a, "dtype_b": d.dtype_b,
        "count": d.count, "differ": d.differ, "beyond_tolerance": d.beyond,
        "max_abs": _finite_or_text(d.max_abs), "max_ulps": d.max_ulps if floats else None,
        "sign_changes": (
            {"count": d.sign_changes, "max_ulps": d.sign_change_ulps} if floats else None
        ),
        "nan_mismatch": d.nan_mismatch,
        "first": {k: _finite_or_text(v) for k, v in d.first.items()} or None,
    }  # fmt: skip


def _finite_or_text(v):
    """JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf"."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def diff_dumps(a: Dump, b: Dump, tolerance: Tolerance, common_only: bool = False) -> Report:
    """Compare every array the two dumps hold under the names of names.views."""
    va, vb, naming = views(a, b)
    report = Report(a, b, tolerance, common_only, naming, [*va.notes, *vb.notes])
    common = [n for n in va.arrays if n in vb.arrays]
    if is_board(list(va.arrays)) or is_board(list(vb.arrays)):
        common.sort(key=board_order)
    report.only_a = [(n, "not in B") for n in va.arrays if n not in vb.arrays]
    report.only_a += [(n, f"not mapped: {why}") for n, why in va.unmapped]
    report.only_b = [(n, "not in A") for n in vb.arrays if n not in va.arrays]
    report.only_b += [(n, f"not mapped: {why}") for n, why in vb.unmapped]
    if len(a.names) == len(b.names) == 1 and not common and a.kind == b.kind == "npy":
        # two single .npy files hold one unnamed array each: compare them whatever the names
        report.only_a, report.only_b = [], []
        d = compare_arrays(f"{a.names[0]} | {b.names[0]}", a.array(a.names[0]),
                           b.array(b.names[0]), tolerance)  # fmt: skip
        report.arrays.append(d)
        return report
    for name in common:
        d = compare_arrays(name, va.arrays[name].read(), vb.arrays[name].read(), tolerance)
        shown = {va.arrays[name].shown, vb.arrays[name].shown} - {name}
        if shown:
            d.source = ", ".join(sorted(shown))
        report.arrays.append(d)
        if not d.ok and not report.first_divergence and is_op(name):
            report.first_divergence = divergence(name, d.first.get("index", []))
    return report
