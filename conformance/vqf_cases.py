"""The VQF container cases: valid files and one invalid file per VQF file rule (spec/vqf.md
§loader-chain, §strict-checks).

Valid cases are written by the reference writer from seeded tiny models across header layouts,
versions, wmodes, tilings and embedding types; invalid cases are the mutation table
(vqf_mutations.CASES). Before a case is kept the reference validator must find no violation
(valid) or exactly the rules the case names (invalid).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from weightfile.examples import tiny_tensors
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType
from weightfile.spec.vqf.rules import RETIRED, RULES

from .case_types import Case, ValidCase
from .sections import published_section
from .vqf_describe import describe_vqf
from .vqf_mutations import CASES, RULE_ARCH, write_base

TILED = VQFFlag.Q8_8X8 | VQFFlag.Q4_4X4
MOE_ARCH: dict[str, Any] = {**RULE_ARCH, "n_experts": 2, "moe_ffn": 32, "top_k": 1}


def _writer(arch: dict[str, Any], wmode: str, flags: int, **kw: Any) -> Callable[[Path], Path]:
    embed = QType.F16 if flags & VQFFlag.EMB_F16 else QType.F32
    tensors = tiny_tensors(arch, wmode, seed=7, embed=embed)
    return lambda p: write_base(p, arch=arch, tensors=tensors, flags=flags, **kw)


VALID = (
    ValidCase("current", "v2-q4-tiled", "wmode q4, Q8_8X8|Q4_4X4|EMB_F16",
              _writer(RULE_ARCH, "q4", TILED | VQFFlag.EMB_F16)),
    ValidCase("current", "v2-q8-plain", "wmode q8, untiled, F16 embedding",
              _writer(RULE_ARCH, "q8", VQFFlag.EMB_F16)),
    ValidCase("current", "v2-dual-tiled", "wmode dual: q8_* and q4_* matrices, tiled",
              _writer(RULE_ARCH, "dual", TILED | VQFFlag.EMB_F16)),
    ValidCase("current", "v2-q4-f32-embed", "no flags: untiled q4, F32 embedding",
              _writer(RULE_ARCH, "q4", 0)),
    ValidCase("current", "v2-g256-tiled", "wmode g256: G256|Q8_8X8|EMB_F16",
              _writer(RULE_ARCH, "g256", VQFFlag.G256 | VQFFlag.Q8_8X8 | VQFFlag.EMB_F16)),
    ValidCase("current", "v2-q4i", "wmode q4i: q8_* tensors hold Q4I8 (Q8BUF_Q4|EMB_F16)",
              _writer(RULE_ARCH, "q4i", VQFFlag.Q8BUF_Q4 | VQFFlag.EMB_F16)),
    ValidCase("current", "v3-moe-q4", "version 3 MoE with a router, MOE flag",
              _writer(MOE_ARCH, "q4", TILED | VQFFlag.EMB_F16 | VQFFlag.MOE, version=3)),
    ValidCase("legacy", "v2-q4-tiled", "the legacy 432-byte header layout (§2.4)",
              _writer(RULE_ARCH, "q4", TILED | VQFFlag.EMB_F16, layout="legacy")),
)  # fmt: skip


def valid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """Every valid VQF case."""
    for case in VALID:
        path = case.write(scratch / f"{case.topic}-{case.name}.vqf")
        found = validate(path, checksum=True)
        if found:
            raise RuntimeError(f"valid case {case.name} is invalid: {[str(v) for v in found]}")
        with open_vqf(path) as vqf:
            want = describe_vqf(vqf)
        meta = {"expect": "accept", "input": "input.vqf", "description": case.meaning}
        yield (
            f"{prefix}/valid/{case.topic}/{case.name}",
            meta,
            {"input.vqf": path.read_bytes()},
            want,
        )


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One invalid case per VQF file rule."""
    for rule_id in sorted(CASES):
        mutate, broken = CASES[rule_id]
        path = write_base(scratch / f"{rule_id}.vqf")
        mutate(path)
        expected = broken or {rule_id}
        found = {v.rule for v in validate(path, checksum=True)}
        if found != {RETIRED.get(r, r) for r in expected}:  # a retired v1 case: its successor
            raise RuntimeError(f"case {rule_id} breaks {sorted(found)}, not {sorted(expected)}")
        rule = RULES[rule_id]
        _, topic, name = rule_id.split(".")
        accepted = [{"rule": r, "error_class": RULES[r].error_class} for r in sorted(expected)]
        meta = {"expect": "reject", "input": "input.vqf", "rule": rule_id,
                "error_class": rule.error_class, "accepted": accepted, "origin": rule.origin,
                "section": published_section(rule), "description": rule.meaning}  # fmt: skip
        yield f"{prefix}/invalid/{topic}/{name}", meta, {"input.vqf": path.read_bytes()}, None
