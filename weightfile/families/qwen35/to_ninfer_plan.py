"""The tensor objects of an imported Qwen3.5 file, its bindings and uses (spec/ninfer3.md §binding,
§use, §qwen35-names).

Every canonical parameter of `text_parameters(config)` goes into exactly one *parent* object:

* a matrix that belongs to one of the default converter groupings (`fusion_groups`,
  spec/ninfer3.md §qwen35-names: attention {Q, K, gate, V}, GDN {q, k, v, z} and {a, b}, dense
  {gate, up}) shares a parent with the rest of its group, stacked by rows in group order, and is
  bound as one Part: whole rows `[r0·K, r1·K)` of the parent (spec/ninfer3.md §binding), as in the
  spec's examples;
* every other parameter is a parent of its own, bound whole (`{"object": id}`);
* with `tie_word_embeddings` the output head is bound to the embedding's object.

Matrices (parameters with Use inputs) take the chosen format: bf16 `contiguous_le_v1`, or a grouped
format in `row_split_k128_v1`, which quantises rows independently, so a part of a parent decodes
exactly as the parameter quantised alone. Direct parameters keep their spec/ninfer3.md §qwen35-names
format (bf16, fp32 for `a_log` and `dt_bias`). Every Use is `A16Only`: the reference computes in
float32 and this importer makes no claim that quantised activations would be accurate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.ninfer3.recipes import RECIPES, Recipe, recipe_parents_of
from weightfile.spec.ninfer3.text_names import (
    TEXT_PREFIX,
    TextParameter,
    fusion_groups,
    text_parameters,
)

BF16 = "bf16"
CONTIGUOUS = "contiguous_le_v1"
ROW_SPLIT = "row_split_k128_v1"
#: --format -> the layout of its matrices (spec/ninfer3.md §layout-registry)
MATRIX_FORMATS = {
    "bf16": CONTIGUOUS,
    "q4_g64_fp16": ROW_SPLIT,
    "q5_g64_fp16": ROW_SPLIT,
    "q6_g64_fp16": ROW_SPLIT,
    "q8_g32_fp16": ROW_SPLIT,
}
ACTIVATION_POLICY = "A16Only"
EMBEDDING = TEXT_PREFIX + "token_embedding"
OUTPUT_HEAD = TEXT_PREFIX + "output_head"


@dataclass(frozen=True, slots=True)
class Parent:
    """One tensor object: its members stacked by rows (a single member: the member itself)."""

    id: str
    members: tuple[TextParameter, ...]
    format: str
    layout: str

    @property
    def shape(self) -> tuple[int, ...]:
        if len(self.members) == 1:
            return self.members[0].shape
        # stacked by rows; vectors (the vision q/k/v biases) simply end to end
        return (sum(m.shape[0] for m in self.members), *self.members[0].shape[1:])


def object_id(names: tuple[str, ...]) -> str:
    """`w.layers/0/mlp/gate+up` style ids: readable in `inspect`, opaque to readers (Q4)."""
    first = names[0].removeprefix(TEXT_PREFIX)
    rest = [n.rsplit("/", 1)[1] for n in names[1:]]
    return "w." + "+".join([first, *rest])


def chosen_groups(config: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """parameter name -> its group, taking each layer's groupings greedily, largest first."""
    member_of: dict[str, tuple[str, ...]] = {}
    for layer in range(config["num_hidden_layers"]):
        for group in fusion_groups(config, layer):
            if not any(name in member_of for name in group):
                member_of |= dict.fromkeys(group, group)
    return member_of


def recipe_named(name: str | None) -> Recipe | None:
    """The spec/ninfer3.md §recipes recipe called `name` (None: none); another name is
    `qwen35.import.recipe`."""
    if name is None:
        return None
    if name not in RECIPES:
        raise InvalidError(
            "qwen35.import.recipe", f"no recipe {name!r} (known: {sorted(RECIPES)})", path="recipe"
        )
    return RECIPES[name]


def member_format(p: TextParameter, recipe: Recipe, fmt: str | None) -> tuple[str, str]:
    """(format, layout) of one parameter under a recipe: a direct one's own format, a matrix
    `fmt` when given, else the recipe's (a matrix no glob names is `qwen35.import.recipe`)."""
    if p.is_direct:
        return p.direct_format or BF16, CONTIGUOUS
    chosen = fmt or recipe.format_of(p.name)
    if chosen is None:
        raise InvalidError(
            "qwen35.import.recipe", f"recipe {recipe.name} gives {p.name} no format", path=p.name
        )
    if chosen not in MATRIX_FORMATS:
        raise UnsupportedError("qwen35.import.format", f"format {chosen!r}", path=p.name)
    return chosen, MATRIX_FORMATS[chosen]


def recipe_parents(
    params: list[TextParameter],
    recipe: Recipe,
    fmt: str | None,
    ident: Callable[[tuple[str, ...]], str] | None = None,
) -> list[Parent]:
    """The parents of a component's parameters under a recipe's packing and formats
    (spec/ninfer3.md §recipes); every member of one parent has one (format, layout), else
    `qwen35.import.recipe`."""
    by_name = {p.name: p for p in params}
    out = []
    for names in recipe_parents_of(recipe, list(by_name)):
        members = tuple(by_name[n] for n in names)
        chosen = {member_format(m, recipe, fmt) for m in members}
        if len(chosen) != 1:
            raise InvalidError(
                "qwen35.import.recipe",
                f"recipe {recipe.name} packs {list(names)} with formats {sorted(chosen)}",
                path=names[0],
            )
        ((pfmt, layout),) = chosen
        out.append(Parent((ident or object_id)(names), members, pfmt, layout))
    return out


def plan_parents(
    config: Mapping[str, Any], fmt: str | None, recipe: Recipe | None = None
) -> list[Parent]:
    """The parents in model order (the order of `text_parameters`); with a recipe, its packing
    and formats (`fmt`, when given, still names every matrix's format)."""
    if recipe is not None:
        params = text_parameters(config)
        if config["tie_word_embeddings"]:
            params = [p for p in params if p.name != OUTPUT_HEAD]
        return recipe_parents(params, recipe, fmt)
    fmt = fmt or BF16
    if fmt not in MATRIX_FORMATS:
        raise UnsupportedError("qwen35.import.format", f"format {fmt!r}", path="format")
    params = {p.name: p for p in text_parameters(config)}
    member_of = chosen_groups(config)
    tied = bool(config["tie_word_embeddings"])
    parents: list[Parent] = []
    placed: set[str] = set()
    for p in params.values():
        if p.name in placed or (tied and p.name == OUTPUT_HEAD):
            continue
        names = member_of.get(p.name, (p.name,))
        members = tuple(params[n] for n in names)
        if p.is_direct:
            layout, pfmt = CONTIGUOUS, p.direct_format or BF16
        else:
            layout, pfmt = MATRIX_FORMATS[fmt], fmt
        parents.append(Parent(object_id(names), members, pfmt, layout))
        placed.update(names)
    return parents


def bindings(parents: list[Parent], tied: bool) -> dict[str, dict[str, Any]]:
    """Whole bindings for single parents, one row-range Part per member of a fused one
    (spec/ninfer3.md §binding)."""
    out: dict[str, dict[str, Any]] = {}
    for parent in parents:
        if len(parent.members) == 1:
            out[parent.members[0].name] = {"object": parent.id}
            continue
        row = 0
        k = parent.shape[1] if len(parent.shape) > 1 else 1
        for m in parent.members:
            rows = m.shape[0]
            out[m.name] = {"parts": [{"object": parent.id, "range": [row * k, (row + rows) * k]}]}
            row += rows
    if tied:
        out[OUTPUT_HEAD] = dict(out[EMBEDDING])
    return out


def uses(config: Mapping[str, Any]) -> list[dict[str, str]]:
    """One `A16Only` Use per (parameter, input) the architecture consumes (spec/ninfer3.md §use,
    §qwen35-names)."""
    return [
        {"parameter": p.name, "input": i, "activation_policy": ACTIVATION_POLICY}
        for p in text_parameters(config)
        for i in p.inputs
    ]
