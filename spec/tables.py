"""Markdown tables generated from the schemas and rule tables, for splicing into spec/*.md.

The prose documents never retype a field table: `tools/splice_tables.py` writes these between
`<!-- table:NAME -->` and `<!-- /table:NAME -->` markers, and a test fails when they drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from construct import (
    Array,
    Bytes,
    Const,
    Construct,
    Default,
    FormatField,
    Renamed,
    Struct,
)

from weightfile.spec.rule import Rule

_FORMATS = {
    "<I": "u32",
    "<L": "u32",
    "<i": "i32",
    "<l": "i32",
    "<f": "f32",
    "<Q": "u64",
    "<H": "u16",
    "<B": "u8",
}


def type_name(con: Construct) -> str:
    """u32, f32, u8[16], i32[4], or the name of a nested record."""
    while isinstance(con, Renamed | Const | Default):
        con = con.subcon
    if isinstance(con, FormatField):
        return _FORMATS.get(con.fmtstr, con.fmtstr)
    if isinstance(con, Bytes):
        return f"u8[{con.sizeof()}]"
    if isinstance(con, Array):
        return f"{type_name(con.subcon)}[{con.count}]"
    if isinstance(con, Struct):
        return f"record ({con.sizeof()} B)"
    return type(con).__name__


def field_table(schema: Struct, *, base: int = 0) -> str:
    """| offset | size | type | field | meaning | for every top-level field, in file order."""
    rows = ["| offset | size | type | field | meaning |", "|---:|---:|---|---|---|"]
    offset = base
    for sc in schema.subcons:
        size = sc.sizeof()
        rows.append(f"| {offset} | {size} | {type_name(sc)} | `{sc.name}` | {sc.docs or ''} |")
        offset += size
    return "\n".join(rows)


def rule_table(rules: Iterable[Rule]) -> str:
    """| rule id | error class | origin | section | meaning |; a step shows as "spec/vqf.md §9 step
    12"."""
    rows = []
    for r in rules:
        where = r.section if r.step is None else f"{r.section} step {r.step}"
        rows.append([f"`{r.id}`", r.error_class, r.origin, where, r.meaning])
    return markdown_table(["rule id", "error class", "origin", "section", "meaning"], rows)


def markdown_table(head: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain Markdown table: left-aligned columns, one row per item, `|` in a cell escaped."""

    def cell(value: object) -> str:
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
