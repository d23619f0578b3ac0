"""Every value of a checkpoint's config, checked by type and range before an importer uses it
(spec/vqf.md §arch-semantics, spec/ninfer3.md §qwen35-config; issue 35 item 6).

A config.json (or a GGUF file's metadata) is untrusted input. Python converts too much too
quietly: `int(float("inf"))` is an OverflowError, `int([1])` a TypeError, `hidden // 0` a
ZeroDivisionError, and `float("nan")` goes into a file unremarked. So before any importer reads
a value, `check_config_values` walks the config (its nested `text_config`, `vision_config`,
`rope_parameters`, ... too) and checks each key it knows, wherever it appears:

* a count (`COUNTS`: layers, heads, experts, patch sides) is an integer in [1, 65536];
* a size (`SIZES`: vocabulary, widths, head size, context) is an integer in [1, 2^31 − 1], which
  every integer field of both formats holds;
* an id or an optional amount (`IDS`: token ids, `decoder_sparse_step`, shared experts) is an
  integer in [0, 2^31 − 1], or for a token id a list of such (the first is taken);
* a list of small integers (`INT_LISTS`: `mrope_section`, DeepStack indexes) has at most 16
  integers in [0, 65536];
* a positive real (`POSITIVE_REALS`: RoPE base, norm epsilon) is a JSON number, finite, > 0, and
  still finite and > 0 once rounded to binary32 (the VQF arch field's type);
* a fraction (`FRACTIONS`: `partial_rotary_factor`) is a finite number in (0, 1].

`null` reads as absent (the importers take their defaults). Booleans are never numbers here.
Each refusal is an `InvalidError` of the importer's own rule (`vqf.import.config`,
`qwen35.import.config`) naming the key's path. `strict_json` is the JSON parser the importers
read with: `NaN`, `Infinity`, a number that overflows binary64 (`1e400`) and an integer of more
than `MAX_INT_DIGITS` digits are refused while parsing, before Python's own digit limit raises a
bare ValueError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError

MAX_COUNT = 1 << 16
MAX_SIZE = (1 << 31) - 1
#: Digits of the longest integer a config may write (2^64 has 20).
MAX_INT_DIGITS = 40
MAX_LIST = 16

COUNTS = frozenset(
    {
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "num_experts",
        "num_local_experts", "num_experts_per_tok", "depth", "num_heads",
        "linear_num_key_heads", "linear_num_value_heads", "linear_conv_kernel_dim",
        "full_attention_interval", "patch_size", "temporal_patch_size", "spatial_merge_size",
        "in_channels",
    }
)  # fmt: skip
SIZES = frozenset(
    {
        "vocab_size", "hidden_size", "intermediate_size", "head_dim", "max_position_embeddings",
        "moe_intermediate_size", "out_hidden_size", "num_position_embeddings",
        "linear_key_head_dim", "linear_value_head_dim",
    }
)  # fmt: skip
IDS = frozenset(
    {
        "bos_token_id", "eos_token_id", "pad_token_id", "vision_start_token_id",
        "vision_end_token_id", "image_token_id", "video_token_id", "decoder_sparse_step",
        "n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size",
    }
)  # fmt: skip
INT_LISTS = frozenset({"mrope_section", "deepstack_visual_indexes"})
POSITIVE_REALS = frozenset({"rope_theta", "rms_norm_eps", "layer_norm_eps"})
FRACTIONS = frozenset({"partial_rotary_factor"})
#: Keys whose list value may be a token id list.
ID_LISTS = frozenset({"bos_token_id", "eos_token_id", "pad_token_id"})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _int_problem(value: Any, low: int, high: int) -> str | None:
    if not _is_int(value):
        return f"is {_shown(value)}, not an integer"
    if not low <= value <= high:
        return f"is {_shown(value)}, outside [{low}, {high}]"
    return None


def _real_problem(value: Any, key: str) -> str | None:
    if not _is_real(value):
        return f"is {_shown(value)}, not a number"
    if not math.isfinite(value):
        return f"is {value}, not finite"
    if key in FRACTIONS:
        return None if 0 < value <= 1 else f"is {value}, outside (0, 1]"
    if value <= 0:
        return f"is {value}, not positive"
    with np.errstate(over="ignore", under="ignore"):
        single = np.float32(value)
    if not np.isfinite(single) or single <= 0:
        return f"is {value}, which binary32 rounds to {float(single)}"
    return None


def _problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be the config's `key`, or None when it can (module docstring)."""
    if key in COUNTS:
        return _int_problem(value, 1, MAX_COUNT)
    if key in SIZES:
        return _int_problem(value, 1, MAX_SIZE)
    if key in IDS:
        if key in ID_LISTS and isinstance(value, list):
            if len(value) > MAX_LIST:
                return f"lists {len(value)} ids, more than {MAX_LIST}"
            found = (_int_problem(v, 0, MAX_SIZE) for v in value)
            return next((f"has an id that {p}" for p in found if p), None)
        return _int_problem(value, 0, MAX_SIZE)
    if key in INT_LISTS:
        if not isinstance(value, list) or len(value) > MAX_LIST:
            return f"is {_shown(value)}, not a list of at most {MAX_LIST} integers"
        found = (_int_problem(v, 0, MAX_COUNT) for v in value)
        return next((f"has an item that {p}" for p in found if p), None)
    if key in POSITIVE_REALS or key in FRACTIONS:
        return _real_problem(value, key)
    return None


def _shown(value: Any) -> str:
    """A value for a message, cut short (it may be a 100,000-item list)."""
    text = json.dumps(value) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def check_config_values(
    cfg: Mapping[str, Any],
    rule: str,
    source: str = "config.json",
    names: Mapping[str, str] | None = None,
    prefix: str = "",
) -> None:
    """Refuse the first value of `cfg` (nested mappings too) its key's check refuses (module
    docstring); `names` maps a key to the name to report (a GGUF metadata key)."""
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            check_config_values(value, rule, source, names, f"{path}.")
            continue
        if value is None or not isinstance(key, str):
            continue
        why = _problem(key, value)
        if why is not None:
            shown = (names or {}).get(path, path)
            raise InvalidError(rule, f"{source}: {shown} {why}", path=shown)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} overflows binary64")
    return value


def _short_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def strict_json(text: str) -> Any:
    """`json.loads`, refusing NaN, Infinity, overflowing numbers and huge integers with a
    ValueError (module docstring)."""
    return json.loads(
        text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_short_int
    )
