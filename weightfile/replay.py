"""Op-level replay of an engine dump (spec/numerics.md §replay): recompute every operation the
dump records (one of its outputs there) from the dump's own inputs, and compare each of its
outputs with the dump's.

An engine team learns which operation is wrong whatever drift came before it: the inputs are
the engine's, not ours. The vocabulary is a table of replayable operations (`ROWS`): a row names
its input arrays, its output arrays, the profiles and families it replays under and the function
("module:attribute", imported on first use) that computes the outputs from the model and the
inputs. Adding an operation is one row and one function; nothing else changes. What the dump
holds that no row can replay is listed, never silently skipped.

Names are templates (spec/numerics.md §replay):
* `{l}` in the row's own name (`vit.layer{l}.ln1`) is a number read from the dump's names: the
  row is one operation per value found (per block, per DeepStack merger);
* `{t}` in an input or output but not in the row's name is an index: the names `…tok0`,
  `…tok1`, … are the rows of one array (stacked as an input, split from the function's result);
* a name that is a placeholder alone (`{x}`) is a dump name the row's `derive` function gives
  from the model (a block's input, the block a merger reads).
"""

from __future__ import annotations

import importlib
import itertools
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.dumps.compare import ArrayDiff, Tolerance, compare_arrays
from weightfile.dumps.read import Dump
from weightfile.spec.errors import InvalidError, WeightfileError

SCHEMA = "weightfile.replay/1"
EXACT = Tolerance()
BOARD = ("kestrel-board",)
OPS = "weightfile.replay_ops:"


@dataclass(frozen=True)
class ReplayOp:
    """One replayable operation: run(model, at, *input arrays) -> its output arrays in order
    (`at`: the row's numbers, {"l": 2}). Templates are expanded by `expand`."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    run: str  # "module:attribute"
    profiles: tuple[str, ...]
    families: tuple[str, ...]
    what: str
    derive: str = ""  # "module:attribute": (model, at) -> {placeholder: dump name}


def _vl(name: str, inputs: str, outputs: str, run: str, what: str, derive: str = "") -> ReplayOp:
    """A board vision-tower row (spec/numerics.md §board-vision): names space-separated."""
    derived = OPS + derive if derive else ""
    ins, outs = tuple(inputs.split()), tuple(outputs.split())
    return ReplayOp(name, ins, outs, OPS + run, BOARD, ("qwen3_vl",), what, derived)


L = "vit.layer{l}."
GEO = "vision.geometry_hw_grid_ntok"
#: The replay table: the board's Q8 MoE FFN (spec/numerics.md §board-moe), then the board
#: vision tower step by step in the vision packs' names (spec/numerics.md §board-vision): each
#: step from the dump's own input, so a wrong step is named even when the steps before it
#: drifted.
ROWS: tuple[ReplayOp, ...] = (
    ReplayOp(
        name="moe.ffn",
        inputs=("moe.x_in",),
        outputs=(
            "moe.router_logits",
            "moe.experts",
            "moe.weights",
            "moe.gate",
            "moe.up",
            "moe.act",
            "moe.partial_sum",
            "moe.out",
            "moe.info_simd_mode8_rejected_ef",
        ),
        run=OPS + "board_moe_ffn",
        profiles=BOARD,
        families=("qwen3_moe",),
        what="the Q8 MoE FFN of every (layer, token) row of moe.x_in [L, N, d]",
    ),
    _vl("vision.geometry", "vision.pixels_hwc", GEO, "geometry", "the pixels' grid and tokens"),
    _vl("vision.patch_embed", "vision.pixels_hwc", "vision.patch_embed", "patch_embed",
        "the patch convolution"),
    _vl("vision.patch_plus_pos", f"vision.patch_embed {GEO}", "vision.patch_plus_pos",
        "positions", "+ the bilinear position rows of the grid"),
    _vl("vision.rotary", GEO, "vision.rot_cos vision.rot_sin", "rotary",
        "the 2-D rotary table of the grid"),
    _vl(L + "ln1", "{x}", L + "ln1", "ln1", "LayerNorm 1 of the block's input", "block_input"),
    _vl(L + "qkv_headmajor", L + "ln1", L + "qkv_headmajor", "qkv", "the Q8 qkv linear"),
    _vl(L + "qkv_rope_headmajor", f"{L}qkv_headmajor vision.rot_cos vision.rot_sin",
        L + "qkv_rope_headmajor", "rope", "the rotary on q and k (the dump's table)"),
    _vl(L + "scores", L + "qkv_rope_headmajor", L + "scores.h{h}", "scores",
        "each head's scaled scores, first query block"),
    _vl(L + "attn", L + "qkv_rope_headmajor", L + "attn", "attention", "attention, all heads"),
    _vl(L + "proj", L + "attn", L + "proj", "proj", "the Q8 output projection"),
    _vl(L + "resid1", f"{{x}} {L}proj", L + "resid1", "residual", "input + proj", "block_input"),
    _vl(L + "ln2", L + "resid1", L + "ln2", "ln2", "LayerNorm 2"),
    _vl(L + "fc1", L + "ln2", L + "fc1", "fc1", "the Q8 fc1"),
    _vl(L + "gelu_padded", L + "fc1", L + "gelu_padded", "gelu_padded",
        "GELU through the padded-stride buffer"),
    _vl(L + "fc2", L + "gelu_padded", L + "fc2", "fc2", "the Q8 fc2"),
    _vl(L + "out", f"{L}resid1 {L}fc2", L + "out", "residual", "resid1 + fc2"),
    _vl("ds{d}.merged_in", f"{{x}} {GEO}", "ds{d}.merged_in", "merge",
        "the 2×2 merge of the block DeepStack merger d reads", "merged_block"),
    _vl("ds{d}.norm", "ds{d}.merged_in", "ds{d}.norm.tok{t}", "merger_norm", "its LayerNorm"),
    _vl("ds{d}.fc1", "ds{d}.norm.tok{t}", "ds{d}.fc1.tok{t}", "merger_fc1", "its F32 fc1"),
    _vl("vision.deepstack{d}", "ds{d}.fc1.tok{t}", "vision.deepstack{d}", "merger_out",
        "GELU and its F32 fc2"),
    _vl("merger.merged_in", f"{{x}} {GEO}", "merger.merged_in", "merge",
        "the 2×2 merge of the last block's output", "merged_block"),
    _vl("merger.norm", "merger.merged_in", "merger.norm.tok{t}", "merger_norm",
        "its LayerNorm per vh chunk"),
    _vl("merger.fc1", "merger.norm.tok{t}", "merger.fc1.tok{t}", "merger_fc1", "its F32 fc1"),
    _vl("vision.merger_out", "merger.fc1.tok{t}", "vision.merger_out", "merger_out",
        "GELU and its F32 fc2"),
)  # fmt: skip


@dataclass
class OpResult:
    """One operation's verdict: replayed (arrays compared), or why not."""

    op: ReplayOp  # expanded: concrete names (an index placeholder stays in its template)
    arrays: list[ArrayDiff] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # outputs we computed, absent in the dump
    skipped: str = ""  # why the operation was not replayed ("" when it was)

    @property
    def equal(self) -> bool:
        return not self.skipped and bool(self.arrays) and all(d.ok for d in self.arrays)


@dataclass
class ReplayReport:
    """Every operation's result and the dump arrays no row replays."""

    ops: list[OpResult]
    unreplayable: list[str]  # dump arrays no row takes or makes

    @property
    def replayed(self) -> list[OpResult]:
        return [r for r in self.ops if not r.skipped]

    @property
    def equal(self) -> bool:
        """Every replayed op equal, and at least one replayed (replaying nothing proves
        nothing)."""
        return bool(self.replayed) and all(r.equal for r in self.replayed)


def resolve(ref: str) -> Callable[..., Any]:
    """The function a row's "module:attribute" names."""
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


class _Keep(dict):
    """format_map values that leave an unknown placeholder as it was."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def fill(template: str, at: dict[str, Any]) -> str:
    """The template with the placeholders `at` gives filled, the others kept."""
    return template.format_map(_Keep(at))


def placeholders(template: str) -> list[str]:
    """The placeholders of a name template, in order."""
    return [f for _, f, _, _ in string.Formatter().parse(template) if f]


def is_whole(template: str) -> bool:
    """A name that is a placeholder alone: a dump name the row's `derive` gives."""
    return bool(re.fullmatch(r"\{\w+\}", template))


def pattern(template: str, keys: tuple[str, ...]) -> re.Pattern[str]:
    """The dump names a template matches: `keys` captured, other placeholders any number."""
    parts = re.split(r"\{(\w+)\}", template)  # literal, placeholder, literal, ...
    rx = [
        re.escape(p) if i % 2 == 0 else (rf"(?P<{p}>\d+)" if p in keys else r"\d+")
        for i, p in enumerate(parts)
    ]
    return re.compile("".join(rx))


def identity(op: ReplayOp) -> tuple[str, ...]:
    """The placeholders of a row's own name: one operation per value."""
    return tuple(placeholders(op.name))


def bindings(op: ReplayOp, names: list[str]) -> set[tuple[int, ...]]:
    """The values of the row's numbers for which the dump holds one of the row's outputs (the
    operations the dump recorded)."""
    keys, found = identity(op), set()
    for template in op.outputs:
        rx = pattern(template, keys)
        for n in names:
            m = rx.fullmatch(n)
            if m and all(m.groupdict().get(k) is not None for k in keys):
                found.add(tuple(int(m[k]) for k in keys))
    return found


def expand(names: list[str]) -> list[tuple[ReplayOp, dict[str, int]]]:
    """Every operation the dump recorded (one of its outputs there), with its numbers, in the
    tower's order: rows with the same numbers are grouped (a block's steps together, block by
    block)."""
    out = []
    for keys, group in itertools.groupby(ROWS, key=identity):
        rows = list(group)
        found = {row.name: bindings(row, names) for row in rows}
        for values in sorted(set().union(*found.values())):
            at = dict(zip(keys, values, strict=True))
            out += [(concrete(row, at), at) for row in rows if values in found[row.name]]
    return out


def concrete(op: ReplayOp, at: dict[str, Any]) -> ReplayOp:
    """The row with the placeholders `at` gives filled in every name."""
    ins, outs = tuple(fill(n, at) for n in op.inputs), tuple(fill(n, at) for n in op.outputs)
    return ReplayOp(fill(op.name, at), ins, outs, op.run, op.profiles, op.families, op.what,
                    op.derive)  # fmt: skip


def indexed(template: str, names: set[str]) -> list[str]:
    """The names `…0`, `…1`, … of an index template, as many as the dump holds from 0 on."""
    keys, out = placeholders(template), []
    while (name := fill(template, dict.fromkeys(keys, len(out)))) in names:
        out.append(name)
    return out


def _refused(op: ReplayOp, profile: str, family: str | None) -> str:
    """Why the model cannot replay `op` ("" when it can)."""
    if profile not in op.profiles:
        return f"replayed under --profile {' or '.join(op.profiles)} only"
    if family not in op.families:
        return f"replayed on {' or '.join(op.families)} files only, not {family}"
    return ""


def _absent(op: ReplayOp, names: set[str]) -> list[str]:
    """The inputs of `op` (derived names filled) the dump lacks: an index template lacks one
    when the dump holds none of its names, or holds some past a gap (`tok0`, `tok2`)."""
    return [n for n in op.inputs if not _held(n, names)]


def _held(template: str, names: set[str]) -> bool:
    if not placeholders(template):
        return template in names
    rx = pattern(template, ())
    run = indexed(template, names)
    return bool(run) and len(run) == sum(rx.fullmatch(n) is not None for n in names)


def _input(dump: Dump, name: str, names: set[str]) -> np.ndarray:
    """A dump array, or the names of an index template stacked (`…tok0`, `…tok1`, …)."""
    if not placeholders(name):
        return dump.array(name)
    return np.stack([dump.array(n) for n in indexed(name, names)])


def _named(op: ReplayOp, result: Any) -> dict[str, np.ndarray]:
    """A row function's result by output name (an index template: one name per first-axis
    row)."""
    values = (result,) if isinstance(result, np.ndarray) else tuple(result)
    out = {}
    for template, value in zip(op.outputs, values, strict=True):
        if placeholders(template):
            keys = placeholders(template)
            out |= {fill(template, dict.fromkeys(keys, i)): v for i, v in enumerate(value)}
        else:
            out[template] = value
    return out


def _computed(op: ReplayOp, at: dict[str, int], model: Any, dump: Dump, names: set[str]):
    """(`op` with its derived names, its outputs by name; None when an input is absent)."""
    try:
        if op.derive:
            op = concrete(op, resolve(op.derive)(model, at))
        if _absent(op, names):
            return op, None
        arrays = [_input(dump, n, names) for n in op.inputs]
        return op, _named(op, resolve(op.run)(model, at, *arrays))
    except WeightfileError:
        raise
    except IndexError as exc:  # numbers (a block, a merger) the model does not have
        raise InvalidError(
            "frontend.replay.input",
            f"op {op.name}: the dump names {', '.join(f'{k} = {v}' for k, v in at.items())}, "
            "which the model does not have",
            path=op.name,
        ) from exc
    except (ValueError, KeyError) as exc:  # inputs the model's step cannot take
        shapes = ", ".join(f"{h.dtype} {list(h.shape)}" for h in _headers(dump, op))
        raise InvalidError(
            "frontend.replay.input",
            f"op {op.name}: inputs {', '.join(op.inputs)} ({shapes}): {exc}",
            path=op.name if is_whole(op.inputs[0]) else op.inputs[0],
        ) from exc


def _headers(dump: Dump, op: ReplayOp) -> list[Any]:
    return [dump.headers[n] for n in op.inputs if n in dump.headers]


def replay(dump: Dump, model: Any, profile: str, family: str | None) -> ReplayReport:
    """spec/numerics.md §replay every operation of ROWS the dump recorded: replayed when its
    inputs are there and it runs under this profile and family, listed with the reason when not."""
    names = set(dump.names)
    results = []
    for op, at in expand(dump.names):
        why = _refused(op, profile, family)
        if why:
            results.append(OpResult(op, skipped=why))
            continue
        op, ours = _computed(op, at, model, dump, names)
        if ours is None:
            results.append(
                OpResult(op, skipped=f"input {', '.join(_absent(op, names))} not in the dump")
            )
            continue
        r = OpResult(op)
        for name, value in ours.items():
            if name in names:
                r.arrays.append(compare_arrays(name, value, dump.array(name), EXACT))
            else:
                r.missing.append(name)
        results.append(r)
    return ReplayReport(results, [n for n in dump.names if not _touched(n)])


def _touched(name: str) -> bool:
    """Whether a row takes or makes the dump array `name`."""
    return any(
        pattern(t, ()).fullmatch(name)
        for op in ROWS
        for t in (*op.inputs, *op.outputs)
        if not is_whole(t)
    )
