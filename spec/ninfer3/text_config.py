"""The closed key set of `components.text.config` for Qwen3.5 text, as data (spec/ninfer3.md
§qwen35-config).

The C++ binder closes the text config: every key is either required, or belongs to one
conditional group (attention, GDN, dense FFN, MoE FFN) whose presence rules are stated here as
data, and any other key is an error. `rope_parameters` is a closed object of its own. The checks
themselves live in `weightfile.ref.qwen35.config`; this module only says what the keys are, what
domain each value has and which group it belongs to, plus the two pure formulas the rules use
(rotary width and the interleaved MRoPE axis of a rotary pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

U32_MAX = 2**32 - 1


class Domain(Enum):
    """The JSON value domain of one config key (spec/ninfer3.md §qwen35-config "Rule" column)."""

    POSITIVE_U32 = "integer in [1, 2^32-1]"
    BOOLEAN = "boolean"
    POSITIVE_F32 = "number, positive and finite as float32"
    ARCHITECTURES = "1-element array naming a known architecture"
    MODEL_TYPE = "the model_type paired with the architecture"
    LAYER_TYPES = "array of num_hidden_layers layer type names"
    ROPE_PARAMETERS = "closed object {rope_theta, partial_rotary_factor, mrope_section}"


class Group(Enum):
    """Which presence rule governs a key (spec/ninfer3.md §qwen35-config)."""

    REQUIRED = "required"
    ATTENTION = "attention"  # required if any full-attention layer or any attention key
    GDN = "gdn"  # required if any linear-attention layer or any GDN key
    DENSE = "dense"  # required for the dense architecture, forbidden for MoE
    MOE = "moe"  # required for the MoE architecture, forbidden for dense


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One member of the closed text config."""

    name: str
    domain: Domain
    group: Group


FULL_ATTENTION = "full_attention"
LINEAR_ATTENTION = "linear_attention"
#: The two legal `layer_types` entries, spelled exactly.
LAYER_TYPES: tuple[str, ...] = (FULL_ATTENTION, LINEAR_ATTENTION)

DENSE_ARCHITECTURE = "Qwen3_5ForCausalLM"
MOE_ARCHITECTURE = "Qwen3_5MoeForCausalLM"
#: architecture -> the only model_type allowed with it (open question Q9).
MODEL_TYPES: dict[str, str] = {
    DENSE_ARCHITECTURE: "qwen3_5_text",
    MOE_ARCHITECTURE: "qwen3_5_moe_text",
}

_P, _B, _F = Domain.POSITIVE_U32, Domain.BOOLEAN, Domain.POSITIVE_F32

#: Every key of the closed config, in the order the spec/ninfer3.md §qwen35-config tables list them.
CONFIG_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        ConfigKey("architectures", Domain.ARCHITECTURES, Group.REQUIRED),
        ConfigKey("model_type", Domain.MODEL_TYPE, Group.REQUIRED),
        ConfigKey("hidden_size", _P, Group.REQUIRED),
        ConfigKey("vocab_size", _P, Group.REQUIRED),
        ConfigKey("num_hidden_layers", _P, Group.REQUIRED),
        ConfigKey("max_position_embeddings", _P, Group.REQUIRED),
        ConfigKey("tie_word_embeddings", _B, Group.REQUIRED),
        ConfigKey("rms_norm_eps", _F, Group.REQUIRED),
        ConfigKey("layer_types", Domain.LAYER_TYPES, Group.REQUIRED),
        ConfigKey("num_attention_heads", _P, Group.ATTENTION),
        ConfigKey("num_key_value_heads", _P, Group.ATTENTION),
        ConfigKey("head_dim", _P, Group.ATTENTION),
        ConfigKey("rope_parameters", Domain.ROPE_PARAMETERS, Group.ATTENTION),
        ConfigKey("linear_num_key_heads", _P, Group.GDN),
        ConfigKey("linear_key_head_dim", _P, Group.GDN),
        ConfigKey("linear_num_value_heads", _P, Group.GDN),
        ConfigKey("linear_value_head_dim", _P, Group.GDN),
        ConfigKey("linear_conv_kernel_dim", _P, Group.GDN),
        ConfigKey("intermediate_size", _P, Group.DENSE),
        ConfigKey("num_experts", _P, Group.MOE),
        ConfigKey("num_experts_per_tok", _P, Group.MOE),
        ConfigKey("moe_intermediate_size", _P, Group.MOE),
        ConfigKey("shared_expert_intermediate_size", _P, Group.MOE),
    )
}


def keys_of(group: Group) -> tuple[str, ...]:
    """The config keys governed by one presence rule, in table order."""
    return tuple(k.name for k in CONFIG_KEYS.values() if k.group is group)


#: `rope_parameters` is itself closed: exactly these three members (spec/ninfer3.md §qwen35-config
#: RoPE row).
ROPE_PARAMETER_KEYS: tuple[str, ...] = ("rope_theta", "partial_rotary_factor", "mrope_section")
#: mrope_section has one non-negative integer per position axis (temporal, height, width).
MROPE_AXES = 3


def rotary_dim(head_dim: int, partial_rotary_factor: float) -> int:
    """`rotary = floor(head_dim · factor)`, the rotated leading dims of each head
    (spec/ninfer3.md §qwen35-config).

    The product is taken in float64 as Python (and the converter) does; it must come out
    positive and even for the config to be valid.
    """
    return int(head_dim * partial_rotary_factor)


def interleaved_axis(pair: int, mrope_section: tuple[int, int, int]) -> int:
    """The position axis (0 t, 1 h, 2 w) of rotary pair `pair` under interleaved MRoPE
    (spec/ninfer3.md §qwen35-config).

    Pair r belongs to axis 1 if r % 3 == 1 and r < 3·s1, to axis 2 if r % 3 == 2 and
    r < 3·s2, otherwise to axis 0.
    """
    if pair % 3 == 1 and pair < 3 * mrope_section[1]:
        return 1
    if pair % 3 == 2 and pair < 3 * mrope_section[2]:
        return 2
    return 0


def interleaved_counts(pairs: int, mrope_section: tuple[int, int, int]) -> tuple[int, int, int]:
    """How many of the first `pairs` rotary pairs each axis gets; a valid section equals this."""
    counts = [0, 0, 0]
    for r in range(pairs):
        counts[interleaved_axis(r, mrope_section)] += 1
    return counts[0], counts[1], counts[2]
