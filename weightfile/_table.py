"""The one table printer of the CLI: `inspect` (VQF and .ninfer) and `bench` format with it.

Three shapes, all of cells that are already text:

* `aligned`: columns padded to their widest cell and joined by two spaces, each line indented
  and stripped on the right; numbers right-aligned by column index; optionally a rule of dashes
  under the header (the terminal tables of `inspect`);
* `markdown`: a GitHub table with numbers right-aligned and `:` in the rule, as llama-bench
  prints it (`bench -o md`);
* `two_columns`: label and value, the labels padded (the summaries of `bench`).

Formatting is the API layer's job: the describers in ref/ return plain data, never text.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

Row = Sequence[str]


def widths(header: Row | None, rows: Sequence[Row]) -> list[int]:
    """The widest cell of every column (the header counts when given)."""
    every = [*([header] if header is not None else []), *rows]
    return [max(len(r[i]) for r in every) for i in range(len(every[0]))] if every else []


def pad(cells: Row, width: Sequence[int], right: Collection[int]) -> list[str]:
    return [
        c.rjust(w) if i in right else c.ljust(w)
        for i, (c, w) in enumerate(zip(cells, width, strict=True))
    ]


def aligned(
    header: Row | None,
    rows: Sequence[Row],
    *,
    right: Collection[int] = (),
    rule: bool = False,
    indent: str = "  ",
) -> list[str]:
    """Lines of a padded text table; `rule` puts a line of dashes under the header."""
    width = widths(header, rows)
    lines: list[Row] = [header] if header is not None else []
    if rule and header is not None:
        lines.append(["-" * w for w in width])
    lines += rows
    return [(indent + "  ".join(pad(r, width, right))).rstrip() for r in lines]


def markdown(header: Row, rows: Sequence[Row], *, right: Collection[int] = ()) -> list[str]:
    """Lines of a GitHub markdown table, padded like llama-bench's (numbers right-aligned)."""
    width = widths(header, rows)

    def line(cells: Row) -> str:
        return "| " + " | ".join(pad(cells, width, right)) + " |"

    cells = ["-" * (w + 1) + ":" if i in right else "-" * (w + 2) for i, w in enumerate(width)]
    return [line(header), f"|{'|'.join(cells)}|", *(line(r) for r in rows)]


def two_columns(rows: Sequence[tuple[str, str]], *, indent: str = "") -> list[str]:
    """`label  value` lines, the labels padded to the longest."""
    return aligned(None, [list(r) for r in rows], indent=indent)
