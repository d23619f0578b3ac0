"""What the board engine's loader asks of a file beyond its bytes (spec/vqf.md §engine-defaults).

Declarative: the engine's load-time settings (environment variables, spec/vqf.md §environment), the
layout flags an engine in those settings holds (spec/vqf.md §loader-chain step 10), and one row per
loader condition that depends on the settings. `weightfile.ref.vqf.engine_load` evaluates the rows
for a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .flags import LAYOUT_MASK, VQFFlag


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The load-time settings that change what the loader accepts (spec/vqf.md §engine-defaults).

    The defaults are an engine started with none of the variables set."""

    disable_q8_repack: bool = False  # VLLM_DISABLE_Q8_REPACK=1
    disable_q4_repack: bool = False  # VLLM_DISABLE_Q4_REPACK=1
    wmode: str = "default"  # VLLM_WMODE: default | q4i | g256 (the two that set layout bits)
    key: bool = False  # VLLM_VQF_KEY holds the passphrase
    sign_pub: bool = False  # VLLM_VQF_SIGN_PUB holds the signer's public key
    preallocated: bool = False  # the weights were preallocated (no q4i auto-switch)

    def environment(self) -> list[str]:
        """The variables, as a shell would set them, that give these settings."""
        env = []
        if self.disable_q8_repack:
            env.append("VLLM_DISABLE_Q8_REPACK=1")
        if self.disable_q4_repack:
            env.append("VLLM_DISABLE_Q4_REPACK=1")
        if self.wmode != "default":
            env.append(f"VLLM_WMODE={self.wmode}")
        if self.key:
            env.append("VLLM_VQF_KEY=<passphrase>")
        if self.sign_pub:
            env.append("VLLM_VQF_SIGN_PUB=<signer's public key>")
        return env


DEFAULT_SETTINGS: Final = EngineSettings()

#: The weight modes the loader distinguishes (spec/vqf.md §loader-chain step 10).
LOAD_WMODES: Final = ("default", "q4i", "g256")


def engine_flags(s: EngineSettings, file_flags: int) -> int:
    """The engine's own flags & 0x1F in settings `s` (spec/vqf.md §loader-chain step 10): never X8;
    a file with Q8BUF_Q4 switches an engine whose weights were not preallocated to q4i first."""
    switched = bool(file_flags & VQFFlag.Q8BUF_Q4) and not s.preallocated
    wmode = "q4i" if switched else s.wmode  # the switch replaces the weight mode
    q4i = wmode == "q4i"
    flags = 0
    if not s.disable_q8_repack and not q4i:  # q4i turns the q8 repack off
        # VLLM_Q8_8X8=0 is never proposed: it misreads (spec/vqf.md §decisions item 13)
        flags |= VQFFlag.Q8_8X8
    if not s.disable_q4_repack:
        flags |= VQFFlag.Q4_4X4
    if q4i:
        flags |= VQFFlag.Q8BUF_Q4
    if wmode == "g256":
        flags |= VQFFlag.G256
    return int(flags) & LAYOUT_MASK


@dataclass(frozen=True, slots=True)
class LoadCondition:
    """One condition of the loader that the settings decide (spec/vqf.md §engine-defaults table)."""

    name: str  # stable, lowercase; not a rule id: breaking it is not a file error
    step: str  # where in spec/vqf.md it is stated
    meaning: str
    settings: str  # what settings can satisfy it


#: The loader's setting-dependent conditions, in the order of spec/vqf.md §loader-chain.
CONDITIONS: Final = (
    LoadCondition(
        "key",
        "§9 step 7",
        "an ENC file needs the passphrase",
        "VLLM_VQF_KEY",
    ),
    LoadCondition(
        "signature",
        "§9 step 6",
        "a SIGNED file that is also ENC is verified against a trusted public key",
        "VLLM_VQF_SIGN_PUB (or the build's VLLM_SM2_PUB_HEX)",
    ),
    LoadCondition(
        "x8",
        "§9 step 10",
        "X8 is never in the engine's flags, so an X8 file is always refused",
        "none",
    ),
    LoadCondition(
        "layout",
        "§9 step 10",
        "flags & 0x1F equal the engine's flags & 0x1F (after the q4i auto-switch)",
        "VLLM_DISABLE_Q8_REPACK, VLLM_DISABLE_Q4_REPACK, VLLM_WMODE",
    ),
    LoadCondition(
        "qtype",
        "§9 step 12",
        "every mounted matrix has the qtype its name's family is read as (the loader does not "
        "check it, so another qtype loads and is misread)",
        "none",
    ),
    LoadCondition(
        "core",
        "§9 step 13",
        "token_embed and q8_q or q4_q are present (MoE: moe_router, a gate, n_experts)",
        "none",
    ),
    LoadCondition(
        "streaming",
        "§9 step 14",
        "layer streaming and the expert window need rows % nl = 0 and bytes % nl = 0 for every "
        "tensor of a plaintext file; without them the file loads, unstreamed",
        "none (optional feature)",
    ),
)

#: The conditions that refuse the file; `streaming` only limits it.
REFUSING: Final = frozenset(c.name for c in CONDITIONS if c.name != "streaming")
