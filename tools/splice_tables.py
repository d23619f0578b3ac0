"""Regenerate the tables spliced into spec/*.md from the schemas and rule tables.

python tools/splice_tables.py          # rewrite the documents in place
python tools/splice_tables.py --check  # exit 1 if any table drifted (the test suite does this)
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from weightfile.spec.codecs.ninfer3.formats import (
    FORMATS,
    BlockFloatFormat,
    DirectFormat,
    Format,
    GroupedFormat,
    RowFloatFormat,
)
from weightfile.spec.codecs.ninfer3.layouts import ROW_SPLIT_GEOMETRY
from weightfile.spec.codecs.ninfer3.registry import CODECS
from weightfile.spec.ninfer3 import directory as ninfer3_directory
from weightfile.spec.ninfer3.framing import ContinuationHeader, EntryHeader
from weightfile.spec.ninfer3.registry import ENCODINGS, LAYOUTS
from weightfile.spec.ninfer3.text_config import (
    CONFIG_KEYS,
    FULL_ATTENTION,
    LINEAR_ATTENTION,
)
from weightfile.spec.ninfer3.text_names import moe_ffn_parameters, text_parameters
from weightfile.spec.rules import RULES
from weightfile.spec.tables import field_table, markdown_table, rule_table
from weightfile.spec.vqf.arch import VQFArch
from weightfile.spec.vqf.header import VQFHeader, VQFHeaderLegacy
from weightfile.spec.vqf.sig import VQFSig
from weightfile.spec.vqf.tensor import VQFTensor
from weightfile.spec.vqf.trailer import VQFTrailerFNV, VQFTrailerTag

ROOT = Path(__file__).resolve().parents[1]


# --- spec/ninfer3.md: the registries and the Qwen3.5 text tables, rendered from spec/ ----------

#: Bits of the word formats the spec/ninfer3.md §format-registry records name by spelling (their
#: definitions, spec/ninfer3.md §direct-formats, §grouped-formats, §nvfp4, §fp8-row).
_WORD_BITS = {"e2m1": 4, "e4m3fn": 8, "binary16": 16, "bf16": 16, "fp32": 32}


def _format_cells(f: Format) -> tuple[object, ...]:
    """kind, code word, group, legal codes, scale and bits per weight of one spec/ninfer3.md
    §format-registry format."""
    if isinstance(f, DirectFormat):
        bits = 8 * f.word_bytes
        word = f"{bits}-bit " + ("IEEE bits" if f.kind == "float" else "two's complement")
        return "direct", word, "–", "every word", "–", bits
    if isinstance(f, GroupedFormat):
        legal = f"[{f.qmin}, {f.qmax}]" + "".join(f", not {c}" for c in f.illegal_codes)
        bits = f.code_bits + _WORD_BITS[f.scale_format] / f.group_size
        word, scale = f"{f.code_bits}-bit two's complement", f"1 {f.scale_format} multiplier"
        return "grouped int", word, f.group_size, legal, scale, bits
    if isinstance(f, BlockFloatFormat):
        bits = _WORD_BITS[f.code_format] + _WORD_BITS[f.scale_format] / f.block_size
        scale = f"1 {f.scale_format} per block, 1 {f.divisor_format} divisor per matrix"
        group = f"{f.block_size} along K"
        return "block float", f.code_format, group, "every word", scale, f"{bits} + 32/(N·K)"
    assert isinstance(f, RowFloatFormat)
    legal = "every word but " + ", ".join(f"0x{w:02X}" for w in f.illegal_codes)
    scale, bits = f"1 {f.scale_format} multiplier per row", f"{_WORD_BITS[f.code_format]} + 16/K"
    return "row float", f.code_format, "a row", legal, scale, bits


def _format_row(f: Format) -> list[object]:
    """One spec/ninfer3.md §format-registry registry row, with the layout and encoder the codec
    registry pairs it with."""
    codecs = [c for c in CODECS.values() if c.format == f.name]
    layout = ", ".join(f"`{c.layout}`" for c in codecs)
    encoder = ", ".join(c.encoder or "none (import only)" for c in codecs)
    return [f"`{f.name}`", *_format_cells(f), layout, encoder]


def ninfer3_format_table() -> str:
    """The closed format registry (spec/ninfer3.md §format-registry), from
    spec/codecs/ninfer3/formats.py."""
    head = ["format", "kind", "code word", "group", "legal codes", "scale", "bits/weight"]
    return markdown_table([*head, "layout", "encoder"], map(_format_row, FORMATS.values()))


def ninfer3_layout_table() -> str:
    """Layouts and the resource encoding (spec/ninfer3.md §layout-registry), from
    spec/ninfer3/registry.py."""
    rows = [
        [f"`{x.name}`", "tensor layout", ", ".join(f"`{a}`" for a in x.accepts), x.alignment]
        for x in LAYOUTS.values()
    ]
    rows += [
        [f"`{e.name}`", "resource encoding", "(resources)", e.alignment] for e in ENCODINGS.values()
    ]
    return markdown_table(["name", "kind", "accepts", "object alignment"], rows)


def _members(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{m}`" for m in names) or "–"


def ninfer3_record_table() -> str:
    """The closed JSON records and their members (spec/ninfer3.md §closed-sets), from
    directory.py."""
    d = ninfer3_directory
    records = (d.ROOT, d.COMPONENT, d.PROPOSAL, d.TENSOR, d.RESOURCE, d.FILE)
    records += (d.WHOLE_BINDING, d.PARTS_BINDING, d.PART, d.USE)
    rows = [[r.name, _members(r.required), _members(r.optional)] for r in records]
    return markdown_table(["record", "required members", "optional members"], rows)


def ninfer3_policy_table() -> str:
    """The activation policies and what each admits (spec/ninfer3.md §use), from directory.py."""
    rows = [[f"`{p}`", ", ".join(a)] for p, a in ninfer3_directory.ACTIVATION_POLICIES.items()]
    return markdown_table(["activation_policy", "activation precisions it admits"], rows)


def ninfer3_row_split_table() -> str:
    """The per-format constants of row_split_k128_v1 (spec/ninfer3.md §row-split)."""
    rows = [
        [f"`{n}`", g.code_bits, g.group_size, g.base_bytes_per_group, g.high_bytes_per_group]
        for n, g in ROW_SPLIT_GEOMETRY.items()
    ]
    return markdown_table(
        ["format", "b (code bits)", "G (group)", "B (base bytes/group)", "H (high bytes/group)"],
        rows,
    )


def ninfer3_text_config_table() -> str:
    """The closed key set of components.text.config (spec/ninfer3.md §qwen35-config)."""
    rows = [[f"`{k.name}`", k.group.value, k.domain.value] for k in CONFIG_KEYS.values()]
    return markdown_table(["key", "presence group", "value domain"], rows)


class _Sym(int):
    """A config value that prints as its symbol, so text_names' shape formulas print as formulas.

    It is the integer 1 underneath (one layer of each kind, one expert), so the generators run
    unchanged; products and sums build the symbolic expression.
    """

    def __new__(cls, text: str) -> _Sym:
        self = super().__new__(cls, 1)
        self.text = text
        return self

    def __str__(self) -> str:
        return self.text

    def __mul__(self, other: object) -> _Sym:
        return _Sym(f"{self}·{other}")

    def __rmul__(self, other: object) -> _Sym:
        return _Sym(f"{other}·{self}")

    def __add__(self, other: object) -> _Sym:
        return _Sym(f"{self}+{other}")

    __radd__ = __add__


_SYMBOLS = {
    "hidden_size": "H",
    "vocab_size": "V",
    "head_dim": "D",
    "num_attention_heads": "heads",
    "num_key_value_heads": "kv_heads",
    "intermediate_size": "I",
    "linear_num_key_heads": "Nk",
    "linear_key_head_dim": "Dk",
    "linear_num_value_heads": "Nv",
    "linear_value_head_dim": "Dv",
    "linear_conv_kernel_dim": "conv_kernel",
    "num_experts": "E",
    "moe_intermediate_size": "Ir",
    "shared_expert_intermediate_size": "Is",
}


def ninfer3_vision_names_table() -> str:
    """The vision parameters (spec/ninfer3.md §qwen35-vision-names), shapes as formulas, from
    vision_names."""
    from weightfile.spec.ninfer3.vision_names import vision_parameters

    config = {
        "hidden_size": _Sym("W"), "intermediate_size": _Sym("I"), "depth": 1,
        "num_position_embeddings": _Sym("S²"), "patch_size": 1, "temporal_patch_size": 1,
        "spatial_merge_size": 1,
    }  # fmt: skip
    rows = []
    for p in vision_parameters(config, _Sym("H")):  # type: ignore[arg-type]
        name = p.name.replace("layers/0/", "layers/{i}/")
        shape = "[" + ", ".join(map(str, p.shape)) + "]"
        shape = shape.replace("[W, 3]", "[W, Pd]").replace("W·1", "M")
        inputs = ", ".join(f"`{i.replace('layers/0/', 'layers/{i}/')}`" for i in p.inputs) or "–"
        fmt = f"`{p.direct_format}`" if p.direct_format else "any registered format"
        rows.append([f"`{name}`", shape, inputs, fmt])
    return markdown_table(["parameter", "shape", "Use inputs", "format"], rows)


def ninfer3_text_names_table() -> str:
    """The canonical text parameters, shapes as formulas (spec/ninfer3.md §qwen35-names), from
    text_names."""
    config: dict[str, object] = {key: _Sym(sym) for key, sym in _SYMBOLS.items()}
    # one layer of each type: layer 0 full attention, layer 1 Gated DeltaNet; then the MoE FFN
    config |= {"num_hidden_layers": 2, "layer_types": [FULL_ATTENTION, LINEAR_ATTENTION]}
    dense = {
        k: v for k, v in config.items() if not k.startswith(("num_experts", "moe_", "shared_"))
    }
    params = text_parameters(dense) + moe_ffn_parameters(config, 0)
    # the table's order: embedding, norms, each mixer, each FFN, then the final norm and head
    order = ("embedding", "input_norm", "post_attention_norm", "attention/", "gdn/", "mlp/", "moe/")
    params.sort(key=lambda p: next((i for i, s in enumerate(order) if s in p.name), len(order)))

    def general(name: str) -> str:
        for layer in ("0", "1"):
            name = name.replace(f"layers/{layer}/", "layers/{i}/")
        return name.replace("experts/0/", "experts/{e}/")

    rows, seen = [], set()
    for p in params:
        name = general(p.name)
        if name not in seen:
            seen.add(name)
            shape = "[" + ", ".join(map(str, p.shape)) + "]"
            inputs = ", ".join(f"`{general(i)}`" for i in p.inputs) or "–"
            fmt = f"`{p.direct_format}`" if p.direct_format else "any registered format"
            rows.append([f"`{name}`", shape, inputs, fmt])
    return markdown_table(["parameter", "shape", "Use inputs", "format"], rows)


def ninfer3_mtp_names_table() -> str:
    """The dense MTP component's parameters and the proposal head (spec/ninfer3.md
    §qwen35-mtp-names), shapes as formulas, from mtp_names."""
    from weightfile.spec.ninfer3.mtp_names import mtp_parameters, proposal_parameters

    config: dict[str, object] = {key: _Sym(sym) for key, sym in _SYMBOLS.items()}
    dense = {
        k: v for k, v in config.items() if not k.startswith(("num_experts", "moe_", "shared_"))
    }
    rows = []
    params = mtp_parameters(dense) + proposal_parameters(_Sym("R"), _Sym("H"), indexed=True)  # type: ignore[arg-type]
    for p in params:
        shape = "[" + ", ".join(map(str, p.shape)) + "]"
        inputs = ", ".join(f"`{i}`" for i in p.inputs) or "–"
        fmt = f"`{p.direct_format}`" if p.direct_format else "any registered format"
        rows.append([f"`{p.name}`", shape.replace("2·H", "2H"), inputs, fmt])
    return markdown_table(["parameter", "shape", "Use inputs", "format"], rows)


def ninfer3_recipe_table() -> str:
    """Every recipe's format globs (first match wins) and packing groups (spec/ninfer3.md
    §recipes), from recipes.RECIPES."""
    from weightfile.spec.ninfer3.recipes import RECIPES

    rows = []
    for r in RECIPES.values():
        rows += [[f"`{r.name}`", "format", f"`{g}`", f"`{f}`"] for g, f in r.formats]
        rows += [[f"`{r.name}`", "one parent", " + ".join(f"`{n}`" for n in group), ""]
                 for group in r.packing]  # fmt: skip
    return markdown_table(["recipe", "rule", "parameters", "format"], rows)


def ninfer3_inventory_table() -> str:
    """The Qwen3.6-27B counts derived from the `qwen3_6_27b` recipe and the official geometry
    (spec/ninfer3.md §recipes), from recipes.official_inventory."""
    from weightfile.spec.ninfer3.recipes import official_inventory

    inv = official_inventory()
    cols = list(inv)
    rows = [
        [kind, *(f"{getattr(inv[c], kind):,}" for c in cols),
         f"{sum(getattr(n, kind) for n in inv.values()):,}"]
        for kind in ("objects", "bindings", "uses")
    ]  # fmt: skip
    return markdown_table(["", *cols, "total"], rows)


TABLES: dict[str, dict[str, Callable[[], str]]] = {
    "spec/vqf.md": {
        "vqf-header": lambda: field_table(VQFHeader),
        "vqf-header-legacy": lambda: field_table(VQFHeaderLegacy),
        "vqf-arch": lambda: field_table(VQFArch, base=16),
        "vqf-sig": lambda: field_table(VQFSig),
        "vqf-tensor": lambda: field_table(VQFTensor),
        "vqf-trailer": lambda: field_table(VQFTrailerFNV) + "\n\n" + field_table(VQFTrailerTag),
        "vqf-rules": lambda: rule_table(r for r in RULES.values() if r.id.startswith("vqf.")),
    },
    "spec/ninfer3.md": {
        "ninfer3-entry-header": lambda: field_table(EntryHeader),
        "ninfer3-continuation-header": lambda: field_table(ContinuationHeader),
        "ninfer3-rules": lambda: rule_table(
            r for r in RULES.values() if r.id.startswith(("ninfer3.", "qwen35."))
        ),
        "ninfer3-records": ninfer3_record_table,
        "ninfer3-policies": ninfer3_policy_table,
        "ninfer3-formats": ninfer3_format_table,
        "ninfer3-layouts": ninfer3_layout_table,
        "ninfer3-row-split-geometry": ninfer3_row_split_table,
        "ninfer3-text-config": ninfer3_text_config_table,
        "ninfer3-text-names": ninfer3_text_names_table,
        "ninfer3-vision-names": ninfer3_vision_names_table,
        "ninfer3-mtp-names": ninfer3_mtp_names_table,
        "ninfer3-recipes": ninfer3_recipe_table,
        "ninfer3-official-inventory": ninfer3_inventory_table,
    },
}

MARKER = re.compile(
    r"(<!-- table:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table:(?P=name) -->)", re.S
)


def splice(text: str, tables: dict[str, Callable[[], str]]) -> str:
    seen = set()

    def fill(m: re.Match[str]) -> str:
        seen.add(m["name"])
        return f"{m[1]}{tables[m['name']]()}\n{m[4]}"

    out = MARKER.sub(fill, text)
    missing = set(tables) - seen
    if missing:
        raise SystemExit(f"markers missing for tables: {sorted(missing)}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    drifted = []
    for doc, tables in TABLES.items():
        path = ROOT / doc
        text = path.read_text()
        new = splice(text, tables)
        if new != text:
            drifted.append(doc)
            if not args.check:
                path.write_text(new)
    if args.check and drifted:
        print(f"tables drifted in {drifted}; run python tools/splice_tables.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
