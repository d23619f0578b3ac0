"""Named conversion recipes for Qwen3.5 / 3.6 `.ninfer` files: a per-parameter format table and a
packing (which parameters share one parent object), as data (spec/ninfer3.md §recipes).

A recipe never changes meaning (spec/ninfer3.md §binding): it only chooses each matrix's format
and which parameters are stacked by rows into one parent. `formats` is an ordered list of
(shell glob over canonical names, format); the first glob matching a matrix parameter gives its
format. `packing` lists groups of name templates, `{i}` standing for a layer number and `{e}` for
an expert number; each group whose members all exist becomes one parent (members in the group's
order), every other parameter is a parent of its own. Direct parameters always keep the format
spec/ninfer3.md §qwen35-names gives them. `recipe_parents_of` applies a packing to a parameter
list and `inventory` derives a file's object / binding / use counts from a recipe and a
geometry, so the counts spec/ninfer3.md §recipes prints are computed, never typed in.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weightfile.spec.ninfer3.mtp_names import mtp_parameters, proposal_parameters
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION, LINEAR_ATTENTION
from weightfile.spec.ninfer3.text_names import TextParameter, text_parameters
from weightfile.spec.ninfer3.vision_names import vision_parameters

Q4, Q5, Q6, Q8, BF16 = "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16", "bf16"


@dataclass(frozen=True, slots=True)
class Recipe:
    """One named recipe: matrix formats by glob (first match wins) and the packing groups."""

    name: str
    formats: tuple[tuple[str, str], ...]
    packing: tuple[tuple[str, ...], ...]

    def format_of(self, name: str) -> str | None:
        """The format of matrix parameter `name`, or None when no glob matches it."""
        return next((f for g, f in self.formats if fnmatch.fnmatchcase(name, g)), None)


#: The official Qwen3.6-27B recipe (text, MTP, vision and the proposal head). Where the official
#: converter is silent (attention/GDN output, a/b, MLP) the q4/q5 split is ours **[weightfile]**;
#: the embedding stays bf16 because this binder requires it (spec/ninfer3.md §recipes).
QWEN3_6_27B = Recipe(
    "qwen3_6_27b",
    formats=(
        ("text/output_head", Q6),
        ("text/layers/*/attention/query", Q4), ("text/layers/*/attention/key", Q4),
        ("text/layers/*/attention/gate", Q5), ("text/layers/*/attention/value", Q5),
        ("text/layers/*/attention/output", Q5),
        ("text/layers/*/gdn/query", Q4), ("text/layers/*/gdn/key", Q4),
        ("text/layers/*/gdn/value", Q5), ("text/layers/*/gdn/z", Q5),
        ("text/layers/*/gdn/*", Q5),
        ("text/layers/*/mlp/gate", Q4), ("text/layers/*/mlp/up", Q4),
        ("text/layers/*/mlp/down", Q5),
        ("*/moe/router", BF16), ("*/moe/shared_score", BF16),
        ("text/layers/*/moe/experts/*/down", Q5), ("text/layers/*/moe/experts/*", Q4),
        ("text/layers/*/moe/shared/*", Q8),
        ("mtp/*", Q8),
        ("vision/patch_embedding", Q6),
        ("vision/layers/*/attention/output", Q5), ("vision/layers/*/mlp/fc2", Q5),
        ("vision/layers/*", Q4),
        ("vision/merger/*", Q8),
        ("proposal/head", Q4),
    ),
    packing=(
        ("text/layers/{i}/attention/query", "text/layers/{i}/attention/key"),
        ("text/layers/{i}/attention/gate", "text/layers/{i}/attention/value"),
        ("text/layers/{i}/gdn/query", "text/layers/{i}/gdn/key"),
        ("text/layers/{i}/gdn/value", "text/layers/{i}/gdn/z"),
        ("text/layers/{i}/mlp/gate", "text/layers/{i}/mlp/up"),
        ("text/layers/{i}/moe/experts/{e}/gate", "text/layers/{i}/moe/experts/{e}/up"),
        ("text/layers/{i}/moe/shared/gate", "text/layers/{i}/moe/shared/up"),
        tuple(f"mtp/layers/0/attention/{r}" for r in ("query", "key", "gate", "value")),
        ("mtp/layers/0/mlp/gate", "mtp/layers/0/mlp/up"),
        ("mtp/layers/0/moe/experts/{e}/gate", "mtp/layers/0/moe/experts/{e}/up"),
        ("mtp/layers/0/moe/shared/gate", "mtp/layers/0/moe/shared/up"),
        tuple(f"vision/layers/{{i}}/attention/{r}" for r in ("query", "key", "value")),
        tuple(f"vision/layers/{{i}}/attention/{r}_bias" for r in ("query", "key", "value")),
    ),
)  # fmt: skip

RECIPES: dict[str, Recipe] = {r.name: r for r in (QWEN3_6_27B,)}


def _pattern(template: str) -> re.Pattern[str]:
    text = re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{e\}", r"(?P<e>\d+)")
    return re.compile(text + r"\Z")


def recipe_parents_of(recipe: Recipe, names: Sequence[str]) -> list[tuple[str, ...]]:
    """The parents of `names` under the recipe's packing, in the order of each parent's first
    member: a group whose members all exist (and are not yet placed) is one parent, every other
    name is a parent of its own."""
    present = set(names)
    heads = [(_pattern(group[0]), group) for group in recipe.packing]
    member_of: dict[str, tuple[str, ...]] = {}
    for name in names:
        if name in member_of:
            continue
        for pattern, group in heads:
            m = pattern.match(name)
            if m is None:
                continue
            filled = tuple(t.format(**m.groupdict()) for t in group)
            if all(n in present and n not in member_of for n in filled):
                member_of |= dict.fromkeys(filled, filled)
                break
    out, seen = [], set()
    for name in names:
        group = member_of.get(name, (name,))
        if group[0] not in seen:
            seen.add(group[0])
            out.append(group)
    return out


@dataclass(frozen=True, slots=True)
class Counts:
    """One component's objects, bindings and uses in a file."""

    objects: int
    bindings: int
    uses: int


def _counts(
    recipe: Recipe, params: list[TextParameter], extra_uses: int = 0, shared: int = 0
) -> Counts:
    """`shared` parameters are bound to another parameter's object (a tied output head)."""
    names = [p.name for p in params]
    n = len(recipe_parents_of(recipe, names)) - shared
    return Counts(n, len(params), sum(len(p.inputs) for p in params) + extra_uses)


def inventory(
    recipe: Recipe,
    config: Mapping[str, Any],
    vision: Mapping[str, Any] | None = None,
    mtp: bool = False,
    proposal_rows: int | None = None,
    resources: int = 4,
) -> dict[str, Counts]:
    """The counts per component (`resources`: objects only) of a file written with `recipe`
    from a text config, an optional vision config, an MTP component and a proposal head."""
    tied = int(bool(config.get("tie_word_embeddings")))
    out = {"text": _counts(recipe, text_parameters(config), int(mtp), tied)}
    if mtp:
        out["mtp"] = _counts(recipe, mtp_parameters(config))
    if vision is not None:
        out["vision"] = _counts(recipe, vision_parameters(vision, config["hidden_size"]))
    if proposal_rows is not None:
        out["proposal"] = _counts(
            recipe, proposal_parameters(proposal_rows, config["hidden_size"], indexed=True)
        )
    out["resources"] = Counts(resources, 0, 0)
    return out


def official_geometry() -> tuple[dict[str, Any], dict[str, Any]]:
    """Qwen3.6-27B's text and vision configs as far as the counts depend on them (64 layers,
    full attention every 4th, dense FFN, untied head; vision depth 27), with the published
    widths (spec/ninfer3.md §recipes)."""
    types = [FULL_ATTENTION if (i + 1) % 4 == 0 else LINEAR_ATTENTION for i in range(64)]
    text = {
        "hidden_size": 5120, "num_hidden_layers": 64, "layer_types": types,
        "vocab_size": 248320, "intermediate_size": 17408, "num_attention_heads": 24,
        "num_key_value_heads": 4, "head_dim": 256, "linear_num_key_heads": 16,
        "linear_num_value_heads": 48, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4, "tie_word_embeddings": False,
    }  # fmt: skip
    vision = {
        "depth": 27, "hidden_size": 1152, "intermediate_size": 4304, "num_heads": 16,
        "patch_size": 16, "temporal_patch_size": 2, "spatial_merge_size": 2,
        "num_position_embeddings": 2304,
    }  # fmt: skip
    return text, vision


def official_inventory() -> dict[str, Counts]:
    """The Qwen3.6-27B file's counts under `qwen3_6_27b`: text, MTP, vision, the proposal head
    (131,072 rows) and six resources."""
    text, vision = official_geometry()
    return inventory(QWEN3_6_27B, text, vision, mtp=True, proposal_rows=131072, resources=6)
