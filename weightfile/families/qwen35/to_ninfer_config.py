"""`components.text.config` from a Hugging Face Qwen3.5 config.json (spec/ninfer3.md
§qwen35-config).

The normalisation into the closed key set is `hf.text_config_from_hf` and the
spec/ninfer3.md §qwen35-config rules are `weightfile.ref.qwen35.config.validate_text_config`; the
importer adds three things around them:

* typed errors: what the normaliser fails on untyped is an InvalidError naming config.json;
* refusals: what the reference forward pass does not compute is refused rather than dropped
  (another activation, attention biases, non-interleaved MRoPE, MoE keys on a dense
  model_type, which would be dropped);
* the two values a text-only or multimodal checkpoint may leave implicit. A text-only checkpoint may
  omit `mrope_section`: every position axis then carries the same position, so the section cannot
  change a result, and the interleaved section spec/ninfer3.md §qwen35-config accepts for the actual
  rotary width is filled in (transformers' fallback [11, 11, 10] fits only 32 rotary pairs). A
  multimodal checkpoint keeps `tie_word_embeddings` at the top level, beside `text_config`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weightfile.families.qwen35.hf import text_config_from_hf
from weightfile.ref.qwen35.config import validate_text_config
from weightfile.spec.errors import InvalidError, UnsupportedError, WeightfileError
from weightfile.spec.ninfer3.text_config import MODEL_TYPES, MOE_ARCHITECTURE, rotary_dim

CONFIG_RULE = "qwen35.import.config"
UNSUPPORTED_RULE = "qwen35.import.unsupported"
#: HF keys whose only value the reference implements, and that value.
FIXED_HF_VALUES = {"hidden_act": "silu", "attention_bias": False}


def text_part(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the text config: `text_config` of a multimodal checkpoint, else the config."""
    inner = cfg.get("text_config", cfg)
    if not isinstance(inner, Mapping):
        raise InvalidError(CONFIG_RULE, "text_config is not an object", path="text_config")
    return dict(inner)


def require_supported(text: Mapping[str, Any]) -> None:
    """Refuse the variants the reference forward pass does not compute (module docstring)."""
    for key, want in FIXED_HF_VALUES.items():
        if text.get(key) not in (None, want):
            raise UnsupportedError(UNSUPPORTED_RULE, f"{key} {text[key]!r}", path=key)
    rope = text.get("rope_parameters")
    if isinstance(rope, Mapping) and rope.get("mrope_interleaved") is False:
        raise UnsupportedError(UNSUPPORTED_RULE, "non-interleaved MRoPE", path="rope_parameters")
    if text.get("num_experts") and text.get("model_type") != MODEL_TYPES[MOE_ARCHITECTURE]:
        # a dense model_type would drop the experts silently (the closed key set has no place)
        raise UnsupportedError(
            UNSUPPORTED_RULE,
            f"num_experts on model_type {text.get('model_type')!r}: MoE needs "
            f"{MODEL_TYPES[MOE_ARCHITECTURE]!r}",
            path="num_experts",
        )


def derived_mrope_section(pairs: int) -> list[int]:
    """The interleaved section with every pair r%3==1 on axis 1 and r%3==2 on axis 2.

    For `pairs` rotary pairs this is a fixed point of `interleaved_counts`, so spec/ninfer3.md
    §qwen35-config accepts it (for 32 pairs it is [11, 11, 10], the Qwen3.5 value).
    """
    s1 = len(range(1, pairs, 3))
    s2 = len(range(2, pairs, 3))
    return [pairs - s1 - s2, s1, s2]


def with_implicit_values(cfg: Mapping[str, Any], text: dict[str, Any]) -> dict[str, Any]:
    """`text` with the tie flag and the MRoPE section made explicit (module docstring)."""
    if "tie_word_embeddings" not in text and "tie_word_embeddings" in cfg:
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    rope = text.get("rope_parameters")
    if isinstance(rope, Mapping) and "mrope_section" not in rope and "head_dim" in text:
        rope = dict(rope)
        try:
            rotary = rotary_dim(int(text["head_dim"]), float(rope["partial_rotary_factor"]))
        except (KeyError, TypeError, ValueError):
            return text  # the spec/ninfer3.md §qwen35-config validator names what is wrong
        rope["mrope_section"] = derived_mrope_section(rotary // 2)
        text["rope_parameters"] = rope
    return text


def text_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The closed, validated `components.text.config` of a dense or MoE Qwen3.5 config.json
    (spec/ninfer3.md §qwen35-config)."""
    text = text_part(cfg)
    require_supported(text)
    try:
        out = text_config_from_hf(with_implicit_values(cfg, text))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, WeightfileError):  # already typed: the normaliser's own checks
            raise
        raise InvalidError(
            CONFIG_RULE, f"not a Qwen3.5 config: {exc}", path="config.json"
        ) from None
    validate_text_config(out)
    return out
