"""Would the board engine load this file, and with which settings (spec/vqf.md §engine-defaults)?

`engine_load` evaluates the setting-dependent conditions of spec/vqf/loader.py for one file's
flags, arch and directory: first in the default settings, then — if those refuse it — over every
combination of the load-time variables, keeping the smallest set that loads it. The conditions no
setting changes (the file's own bytes: spec/vqf.md §loader-chain steps 1-5, 12, 13) are the
validator's; `core` and `qtype` are repeated here because a file the validator accepts can still
break them (a reference-precision import) and no setting helps.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from weightfile.spec.vqf.flags import LAYOUT_MASK, VQFFlag, flag_names
from weightfile.spec.vqf.inventory import KINDS
from weightfile.spec.vqf.loader import (
    CONDITIONS,
    DEFAULT_SETTINGS,
    LOAD_WMODES,
    REFUSING,
    EngineSettings,
    engine_flags,
)
from weightfile.spec.vqf.qtypes import QType

#: The per-layer tensors layer streaming splits by nl (spec/vqf.md §engine-defaults).
PER_LAYER = frozenset(
    name
    for name, kind in KINDS.items()
    if kind.family in ("norm", "router", "q8", "q4", "x8")
    and name not in ("final_norm",)
    and not name.endswith("_lm")
)


class EntryLike(Protocol):
    name: str
    qtype: int
    rows: int
    bytes: int


@dataclass(frozen=True)
class Finding:
    """One condition of spec/vqf/loader.py CONDITIONS for one file: met or not, and why."""

    condition: str
    met: bool
    detail: str


@dataclass(frozen=True)
class EngineLoadReport:
    """The answer of spec/vqf.md §engine-defaults for one file."""

    loads_by_default: bool
    findings: tuple[Finding, ...]  # in the default settings, CONDITIONS order
    needs: tuple[str, ...] | None  # variables that make it load; None: no setting does
    streaming: bool  # layer streaming available (plaintext, every per-layer tensor divides)
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        """One line for `inspect` and `verify --engine-defaults`."""
        if self.loads_by_default:
            return "a default engine loads it" + ("" if self.streaming else " (unstreamed)")
        if self.needs is None:
            failed = [f for f in self.findings if not f.met and f.condition in REFUSING]
            why = "; ".join(f.detail for f in failed)
            return f"no engine settings load it: {why}"
        return "a default engine refuses it; it loads with " + " ".join(self.needs)


def layout_finding(flags: int, s: EngineSettings) -> Finding:
    """spec/vqf.md §loader-chain step 10: the file's layout bits against the engine's in settings
    `s`."""
    mine, theirs = flags & LAYOUT_MASK, engine_flags(s, flags)
    if mine == theirs:
        return Finding("layout", True, f"layout flags {names(mine)} equal the engine's")
    return Finding(
        "layout", False, f"layout flags {names(mine)} differ from the engine's {names(theirs)}"
    )


def names(bits: int) -> str:
    return "|".join(flag_names(bits)) or "none"


def x8_finding(flags: int) -> Finding:
    """spec/vqf.md §decisions item 4: X8 is never in the engine's flags."""
    if flags & VQFFlag.X8:
        return Finding("x8", False, "X8 is set, and no engine holds X8 (spec/vqf.md §0 item 4)")
    return Finding("x8", True, "X8 clear")


def key_finding(flags: int, s: EngineSettings) -> Finding:
    """spec/vqf.md §loader-chain step 7: an ENC file needs VLLM_VQF_KEY."""
    if flags & VQFFlag.ENC and not s.key:
        return Finding("key", False, "ENC file and VLLM_VQF_KEY is not set")
    return Finding("key", True, "no passphrase needed" if not flags & VQFFlag.ENC else "key set")


def signature_finding(flags: int, s: EngineSettings) -> Finding:
    """spec/vqf.md §sm2-signature: SIGNED and ENC is verified, failing closed without a trusted
    key."""
    verified = flags & VQFFlag.SIGNED and flags & VQFFlag.ENC
    if verified and not s.sign_pub:
        return Finding(
            "signature", False, "SIGNED and ENC: verified against VLLM_VQF_SIGN_PUB, which is "
            "not set (only a build whose VLLM_SM2_PUB_HEX is the signer's key loads it)"
        )  # fmt: skip
    return Finding("signature", True, "no signature check" if not verified else "key set")


def qtype_finding(flags: int, entries: Sequence[EntryLike]) -> Finding:
    """spec/vqf.md §loader-chain step 12: the loader mounts by name and reads each family in its own
    qtype."""
    for e in entries:
        kind = KINDS.get(e.name)
        if kind is None:
            continue  # skipped by the loader, or a vision name (spec/vqf.md §loader-chain step 12)
        if e.name == "token_embed":
            want: tuple[int, ...] = (QType.F16,) if flags & VQFFlag.EMB_F16 else (QType.F32,)
        else:
            want = tuple(int(q) for q in kind.qtypes)
        if e.qtype not in want:
            return Finding(
                "qtype", False, f"{e.name} has qtype {e.qtype:#04x}; the engine reads it as "
                f"{'/'.join(f'{q:#04x}' for q in want)} (a reference-precision file)"
            )  # fmt: skip
    return Finding("qtype", True, "every mounted tensor has the qtype it is read as")


def core_finding(flags: int, arch: Mapping[str, Any], entries: Sequence[EntryLike]) -> Finding:
    """spec/vqf.md §loader-chain step 13: token_embed and q8_q or q4_q (MoE: router, a gate,
    n_experts)."""
    have = {e.name for e in entries}
    missing = [] if "token_embed" in have else ["token_embed"]
    if not have & {"q8_q", "q4_q"}:
        missing.append("q8_q or q4_q")
    if flags & VQFFlag.MOE:
        if "moe_router" not in have:
            missing.append("moe_router")
        if not have & {"q8_gate", "q4_gate"}:
            missing.append("q8_gate or q4_gate")
        if not arch.get("n_experts"):
            missing.append("n_experts > 0")
    if missing:
        return Finding("core", False, "missing core tensors: " + ", ".join(missing))
    return Finding("core", True, "core tensors present")


def streaming_finding(flags: int, arch: Mapping[str, Any], entries: Sequence[EntryLike]) -> Finding:
    """spec/vqf.md §loader-chain step 14: streaming needs a plaintext file whose per-layer tensors
    split."""
    nl = int(arch.get("n_layers") or 0)
    if flags & VQFFlag.ENC:
        return Finding("streaming", False, "layer streaming is refused for ENC files")
    for e in entries:
        if e.name in PER_LAYER and (nl == 0 or e.rows % nl or e.bytes % nl):
            return Finding(
                "streaming", False, f"{e.name}: rows {e.rows} or bytes {e.bytes} not a multiple "
                f"of n_layers {nl}"
            )  # fmt: skip
    return Finding("streaming", True, "every per-layer tensor splits into n_layers parts")


def evaluate(
    flags: int, arch: Mapping[str, Any], entries: Sequence[EntryLike], s: EngineSettings
) -> tuple[Finding, ...]:
    """Every condition of spec/vqf/loader.py CONDITIONS in settings `s`, in table order."""
    by_name = {
        "key": key_finding(flags, s),
        "signature": signature_finding(flags, s),
        "x8": x8_finding(flags),
        "layout": layout_finding(flags, s),
        "qtype": qtype_finding(flags, entries),
        "core": core_finding(flags, arch, entries),
        "streaming": streaming_finding(flags, arch, entries),
    }
    return tuple(by_name[c.name] for c in CONDITIONS)


def loads(findings: Sequence[Finding]) -> bool:
    return all(f.met for f in findings if f.condition in REFUSING)


def candidate_settings(flags: int) -> list[EngineSettings]:
    """Every combination of the load-time variables, fewest variables first."""
    out = []
    for q8, q4, wmode in itertools.product((False, True), (False, True), LOAD_WMODES):
        out.append(
            EngineSettings(
                disable_q8_repack=q8,
                disable_q4_repack=q4,
                wmode=wmode,
                key=bool(flags & VQFFlag.ENC),
                sign_pub=bool(flags & VQFFlag.SIGNED and flags & VQFFlag.ENC),
            )
        )
    return sorted(out, key=lambda s: len(s.environment()))


def engine_load(
    flags: int, arch: Mapping[str, Any], entries: Sequence[EntryLike]
) -> EngineLoadReport:
    """The spec/vqf.md §engine-defaults report: default settings first, then the smallest set that
    loads."""
    default = evaluate(flags, arch, entries, DEFAULT_SETTINGS)
    stream = next(f.met for f in default if f.condition == "streaming")
    if loads(default):
        return EngineLoadReport(True, default, (), stream)
    for s in candidate_settings(flags):
        if loads(evaluate(flags, arch, entries, s)):
            return EngineLoadReport(False, default, tuple(s.environment()), stream)
    return EngineLoadReport(False, default, None, stream)


def engine_load_file(vqf: Any) -> EngineLoadReport:
    """`engine_load` of an open VQFFile (ref/vqf/read.py); needs no passphrase."""
    return engine_load(vqf.header.flags, vqf.header.arch, vqf.entries)
