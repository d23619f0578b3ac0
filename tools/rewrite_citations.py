"""Rewrite the tree's numeric spec citations into stable anchors (issue 27, item 8).

The code and the documents cited `spec/<doc>.md §N.M`, so reordering a document meant rewriting
every citation of it. Every numbered heading of the four in-tree documents (spec/vqf.md,
spec/ninfer3.md, spec/numerics.md, spec/models.md) now carries a stable id, written on the line
above the heading as `<a id="q8-activation"></a>`, and a citation names that id:
`spec/numerics.md §q8-activation`. One form everywhere: the document, a space, `§` and the id;
a continuation of the same group may leave the document out (`spec/vqf.md §q8-tiled, §q4-0`) and
inside spec/<doc>.md a bare `§id` means that document. `§id step K` / `§id item K` cite one
numbered step of a procedure. Heading numbers stay for reading and may change freely.

`NUMBERED` freezes the numbering the documents had when the ids came (the fact sheets' numbering
for VQF and `.ninfer`; spec/numerics.md's before it was reordered, whose forward passes moved to
spec/models.md), so this script rewrites any numeric citation written against that numbering,
including ones added after the documents changed. A range (`§5.6-§5.8`, `§2–§3.5`) becomes the
list of the sections it covers, each whole section by its own id. A citation in quotes is data
(a rule table's section field, a published case.json string) and stays as it is.

Only prose is read and rewritten, the same prose tests/docs/test_citations.py checks: Python
comments and docstrings, C comments, comment lines of TOML and .gitattributes, and markdown
outside fenced code, inline code spans (except a span holding just a citation) and spliced
tables. A Python or C line the rewrite makes longer than 100 characters is cut at a space and the
rest of its paragraph reflowed; a line comment (`#`, `//`) or C comment line is never cut inside a
citation group, since the test reads such lines one by one.

Run it after merging work that may still write numeric citations: it is idempotent, and
`--check` (exit 0) says the tree holds none.

Usage:
    python tools/rewrite_citations.py            rewrite the tree, printing every change
    python tools/rewrite_citations.py --check    print what would change; exit 1 if anything would
    python tools/rewrite_citations.py PATH ...   only these files
Exit 1 also when a numeric citation has no entry in `NUMBERED` (it is printed, left unchanged).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("vqf", "ninfer3", "numerics", "models")
LIMIT = 100  # ruff's line-length

#: Per document, in its document order: (old number, id[, the document the section moved to]).
NUMBERED: dict[str, tuple[tuple[str, ...], ...]] = {
    "vqf": (
        ("0", "decisions"),
        ("1", "file-layout"),
        ("2", "header"),
        ("2.1", "constants"),
        ("2.2", "header-layout"),
        ("2.3", "signature-block"),
        ("2.4", "legacy-header"),
        ("2.5", "flags"),
        ("3", "directory"),
        ("3.1", "entry"),
        ("3.2", "qtype-codes"),
        ("3.3", "placement"),
        ("3.4", "directory-order"),
        ("3.5", "fnv-trailer"),
        ("4", "protected"),
        ("4.1", "key-derivation"),
        ("4.2", "sm4-hmac"),
        ("4.3", "sm2-signature"),
        ("5", "encodings"),
        ("5.1", "f32"),
        ("5.2", "f16"),
        ("5.3", "q8-0"),
        ("5.4", "q4i8"),
        ("5.5", "g256"),
        ("5.6", "q8-tiled"),
        ("5.7", "q4-0"),
        ("5.8", "q4-8x8l"),
        ("5.9", "size-function"),
        ("6", "quantisation"),
        ("6.1", "quant-q8-0"),
        ("6.2", "quant-q4-0"),
        ("6.3", "quant-q4i8-g256"),
        ("6.4", "f16-rne"),
        ("6.5", "vs-ggml"),
        ("6.6", "test-vectors"),
        ("7", "inventory"),
        ("7.1", "text-tensors"),
        ("7.2", "weight-modes"),
        ("7.3", "geometry"),
        ("7.4", "vision-tensors"),
        ("7.5", "repack-gates"),
        ("7.6", "worked-example"),
        ("7.7", "converter"),
        ("8", "arch-semantics"),
        ("9", "loader-chain"),
        ("9.1", "strict-checks"),
        ("9.2", "engine-defaults"),
        ("9.3", "safe-open"),
        ("10", "environment"),
    ),
    "ninfer3": (
        ("0", "decisions"),
        ("0.1", "q1-formats"),
        ("0.2", "q2-json-bytes"),
        ("0.3", "q3-parameter-names"),
        ("0.4", "q4-object-ids"),
        ("0.5", "q5-row-split"),
        ("0.6", "q6-bom-reals"),
        ("0.7", "q7-t2"),
        ("0.8", "q8-fp8-tiny-rows"),
        ("0.9", "q9-architectures"),
        ("1", "framing"),
        ("1.1", "entry-header"),
        ("1.2", "volume-header"),
        ("1.3", "header-checks"),
        ("1.4", "files-table"),
        ("1.5", "logical-payload"),
        ("1.6", "range-reads"),
        ("1.7", "writer"),
        ("1.8", "json-serialisation"),
        ("1.9", "framing-numbers"),
        ("2", "directory"),
        ("2.1", "general"),
        ("2.2", "root"),
        ("2.3", "component"),
        ("2.4", "objects"),
        ("2.5", "binding"),
        ("2.6", "use"),
        ("2.7", "metadata"),
        ("2.8", "closed-sets"),
        ("2.9", "validation"),
        ("3", "formats"),
        ("3.1", "format-registry"),
        ("3.2", "direct-formats"),
        ("3.3", "grouped-formats"),
        ("3.4", "nvfp4"),
        ("3.5", "fp8-row"),
        ("3.6", "grouped-absmax"),
        ("3.7", "fp8-row-maxabs"),
        ("3.8", "e4m3fn-table"),
        ("4", "layouts"),
        ("4.1", "layout-registry"),
        ("4.2", "contiguous"),
        ("4.3", "row-split"),
        ("4.4", "block-scale"),
        ("4.5", "row-scale"),
        ("4.6", "raw-bytes"),
        ("4.7", "worked-sizes"),
        ("5", "examples"),
        ("6", "qwen35-text"),
        ("6.1", "qwen35-config"),
        ("6.2", "qwen35-names"),
        ("8", "legacy"),
        ("9", "this-tree"),
        ("9.1", "safe-files"),
    ),
    "numerics": (
        ("1", "profiles"),
        ("2", "arithmetic"),
        ("2.1", "binary32"),
        ("2.2", "no-fma"),
        ("2.3", "no-reassociation"),
        ("2.4", "special-values"),
        ("3", "lanes8-tree"),
        ("3.1", "lanes"),
        ("3.2", "combining-tree"),
        ("3.3", "dot"),
        ("3.4", "matmul"),
        ("3.5", "why-this-order"),
        ("4", "quantized-matmul"),
        ("4.1", "q8-activation"),
        ("4.2", "f32-weights"),
        ("5", "norms"),
        ("5.1", "rmsnorm"),
        ("5.2", "softmax"),
        ("5.3", "residual"),
        ("6", "exp"),
        ("7", "silu"),
        ("8", "rope"),
        ("8.1", "inv-freq"),
        ("8.2", "cos-sin"),
        ("8.3", "mrope-positions"),
        ("8.4", "rotation"),
        ("9", "attention"),
        ("10", "qwen3-forward", "models"),
        ("10.1", "qwen3-moe-forward", "models"),
        ("11", "next-token"),
        ("12", "batch-invariance"),
        ("13", "how-far"),
        ("14", "notes"),
        ("15", "in-c"),
        ("15.1", "kernel-paths"),
        ("15.2", "threads"),
        ("16", "log"),
        ("16.1", "log-f32"),
        ("16.2", "log1p"),
        ("16.3", "softplus"),
        ("17", "gdn"),
        ("17.1", "gdn-conv"),
        ("17.2", "gdn-l2norm"),
        ("17.3", "gdn-gates"),
        ("17.4", "delta-rule"),
        ("17.5", "gated-rmsnorm"),
        ("18", "qwen35-forward", "models"),
        ("18.1", "qwen35-rmsnorm", "models"),
        ("18.2", "qwen35-attention", "models"),
        ("18.3", "qwen35-ffn", "models"),
        ("18.4", "qwen35-activations", "models"),
        ("18.5", "qwen35-cache", "models"),
        ("18.6", "qwen35-how-far", "models"),
        ("19", "qwen35-trace", "models"),
        ("20", "board"),
        ("20.1", "board-arithmetic"),
        ("20.2", "board-c-library"),
        ("20.3", "board-quantizers"),
        ("20.3.1", "board-activations"),
        ("20.3.2", "board-query"),
        ("20.3.3", "board-kv-cache"),
        ("20.4", "board-products"),
        ("20.4.1", "board-q4-decode"),
        ("20.4.2", "board-one-chain"),
        ("20.4.3", "board-q4-prefill"),
        ("20.4.4", "board-q8-prefill"),
        ("20.4.5", "board-epilogues"),
        ("20.5", "board-rmsnorm"),
        ("20.6", "board-exp"),
        ("20.6.1", "board-exp-neon4"),
        ("20.6.2", "board-reciprocal"),
        ("20.6.3", "board-silu"),
        ("20.7", "board-rope"),
        ("20.8", "board-attention"),
        ("20.8.1", "board-decode-attention"),
        ("20.8.2", "board-prefill-attention"),
        ("20.9", "board-forward"),
        ("20.9.1", "board-decode-step"),
        ("20.9.2", "board-prefill"),
        ("20.9.3", "board-prompts"),
        ("20.10", "board-c-matters"),
        ("20.11", "board-notes"),
        ("21", "vision"),
        ("21.1", "vision-layernorm"),
        ("21.2", "vision-gelu"),
        ("21.3", "vision-linear"),
        ("21.4", "vision-pos-embed"),
        ("21.5", "vision-rotary"),
        ("21.6", "vision-attention"),
        ("21.7", "vision-merge"),
    ),
    "models": (
        ("1", "model-math"),
        ("1.1", "qwen3"),
        ("1.2", "qwen3-vl"),
        ("1.3", "qwen3-moe"),
        ("1.3.1", "qwen3-moe-vqf-v3"),
        ("1.4", "qwen35"),
        ("1.5", "activations"),
        ("2", "tiny-checkpoints"),
        ("3", "gguf-oracle"),
        ("4", "fp16-oracle"),
        ("5", "llamacpp-repack"),
        ("6", "machine-anchors"),
    ),
}

#: (old document, old number) -> (document, id).
TARGET: dict[tuple[str, str], tuple[str, str]] = {
    (doc, row[0]): (row[2] if len(row) > 2 else doc, row[1])
    for doc, rows in NUMBERED.items()
    for row in rows
}
ORDER: dict[str, list[str]] = {doc: [row[0] for row in rows] for doc, rows in NUMBERED.items()}


# --- the ids the documents carry ------------------------------------------------------------------
HEADING_ID = re.compile(r'^<a id="([a-z][a-z0-9-]*)"></a>\n(#{2,6}) ', re.M)


def anchors(doc: str, root: Path = ROOT) -> set[str]:
    """The ids of spec/<doc>.md's headings (an `<a id>` line right above a heading)."""
    text = (root / "spec" / f"{doc}.md").read_text("utf-8")
    return {m.group(1) for m in HEADING_ID.finditer(text)}


def map_problems(root: Path = ROOT) -> list[str]:
    """Every id `NUMBERED` sends a citation to is a heading id of its document."""
    have = {doc: anchors(doc, root) for doc in DOCS}
    return [
        f"NUMBERED: spec/{doc}.md has no heading id {anchor!r}"
        for doc, anchor in TARGET.values()
        if anchor not in have[doc]
    ]


# --- the prose of a file --------------------------------------------------------------------------
SCANNED = (
    "spec",
    "ref",
    "fast",
    "conformance",
    "weightfile",
    "tests",
    "tools",
    "benchmarks",
    "docs",
)
TOP_FILES = ("README.md", "pyproject.toml", ".gitattributes")
# kestrel-board: the board-engine oracle's data, its README kept as its producers wrote it.
SKIPPED_PARTS = {"corpus", "__pycache__", ".venv", "kestrel-board"}
SUFFIXES = (".py", ".c", ".h", ".md", ".toml")
# The rewrite and its test write numeric citations as examples of what they rewrite.
SKIPPED_FILES = ("tools/rewrite_citations.py", "tests/docs/test_citations.py")


def scanned_files(root: Path = ROOT) -> list[Path]:
    files = [root / name for name in TOP_FILES if (root / name).is_file()]
    for top in SCANNED:
        for p in sorted((root / top).rglob("*")):
            rel = p.relative_to(root)
            skipped = SKIPPED_PARTS & set(rel.parts) or rel.as_posix() in SKIPPED_FILES
            if p.is_file() and p.suffix in SUFFIXES and not skipped:
                files.append(p)
    return files


@dataclass(frozen=True)
class Prose:
    """A stretch of prose: `text` is the file's characters from `start`, code spans blanked."""

    start: int
    text: str


def python_prose(text: str) -> Iterator[Prose]:
    """Every comment and every bare string statement (docstrings)."""
    strings = {
        (node.lineno, node.col_offset)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start in strings):
            yield Prose(starts[tok.start[0] - 1] + tok.start[1], tok.string)


# A C string or character literal (skipped), a line comment or a block comment.
C_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def c_prose(text: str) -> Iterator[Prose]:
    """Every C comment, string literals skipped."""
    for m in C_TOKENS.finditer(text):
        if m.group(0).startswith("/"):
            yield Prose(m.start(), m.group(0))


def hash_comment_prose(text: str) -> Iterator[Prose]:
    """The comments of a TOML or .gitattributes file."""
    for m in re.finditer(r"#[^\n]*", text):
        yield Prose(m.start(), m.group(0))


RULE_ROW = re.compile(r"^\|\s*`[a-z0-9_]+(?:\.[a-z0-9_]+)+`\s*\|")
CODE_SPAN = re.compile(r"`[^`\n]*`")


def markdown_lines(text: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of every line outside fenced code, spliced tables and rule-table rows."""
    fenced = spliced = False
    offset = 0
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        elif stripped.startswith("<!--"):
            if re.match(r"<!--\s*(/|end\b|[\w-]+:end)", stripped, re.I):
                spliced = False
            elif re.match(r"<!--\s*(table:|begin\b|[\w-]+:begin)", stripped, re.I):
                spliced = True
        elif not (fenced or spliced or RULE_ROW.match(line)):
            yield offset, line
        offset += len(line) + 1


def blank_code(span: re.Match[str]) -> str:
    """An inline code span as spaces, unless it holds nothing but a citation (`spec/x.md §y`)."""
    return span.group(0) if WHOLE_CITATION.fullmatch(span.group(0)[1:-1]) else " " * len(span[0])


def markdown_prose(text: str) -> Iterator[Prose]:
    """Every paragraph (a heading ends one), inline code blanked."""
    para: list[str] = []
    start = end = 0
    for offset, line in markdown_lines(text):
        if para and (offset != end or not line.strip()):
            yield Prose(start, "\n".join(para))
            para = []
        if not line.strip():
            continue
        if not para:
            start = offset
        para.append(CODE_SPAN.sub(blank_code, line))
        end = offset + len(line) + 1
        if line.startswith("#"):
            yield Prose(start, "\n".join(para))
            para = []
    if para:
        yield Prose(start, "\n".join(para))


def prose(path: Path, text: str) -> Iterator[Prose]:
    if path.suffix == ".py":
        return python_prose(text)
    if path.suffix in (".c", ".h"):
        return c_prose(text)
    if path.suffix == ".md":
        return markdown_prose(text)
    return hash_comment_prose(text)


def self_doc(path: Path, root: Path = ROOT) -> str | None:
    """spec/<doc>.md: its bare § cite itself."""
    rel = path.resolve().relative_to(root)
    if rel.parts[0] == "spec" and len(rel.parts) == 2 and rel.suffix == ".md" and rel.stem in DOCS:
        return rel.stem
    return None


# --- citations ------------------------------------------------------------------------------------
NUM = r"\d+(?:\.\d+)*"
ID = r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
CITATION = re.compile(
    r"(?:spec/(?P<name>[a-z0-9]+)\.md(?P<sep>\s+))?"
    r"§(?:(?P<num>" + NUM + r")(?:[-–](?P<end>" + NUM + r"))?|(?P<id>" + ID + r"))"
    r"(?P<tail>,?\s+(?:step|item)s?\s+\d+(?:[-–]\d+)?)?"
)
WHOLE_CITATION = re.compile(r"spec/[a-z0-9]+\.md\s+§(?:" + NUM + r"|" + ID + r")")
# What may stand between two citations of one group: a range dash, a slash, a comma, "and" ...
CONTINUATION = re.compile(r"\s*(?:[-–/&]|,|,?\s+(?:and|or|to|through|then))\s*")
RANGE = re.compile(r"\s*[-–]\s*")
# "issue 5 §6" is a section of an issue, not of a document.
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+\s+$")


@dataclass(frozen=True)
class Cite:
    """One citation of a prose chunk; a numeric range (`§5.6-§5.8`) is one citation."""

    start: int  # in the chunk
    end: int
    doc: str | None  # the document it means; None: a bare § outside any group or document
    explicit: bool  # names its document
    cont: bool  # continues the previous citation's group
    quoted: bool  # inside quotes: data, not a citation
    num: str | None  # a numeric citation: its (first) number
    last: str | None  # a numeric range: its last number
    id: str | None  # an anchor citation: its id
    sep: str  # the whitespace between the document and the §
    tail: str  # ", step 4" and the like, kept as written
    text: str


def quote_before(chunk: str, k: int) -> bool:
    """A quote (not a docstring's triple quote) right before position k: the citation is data."""
    return chunk[k - 1 : k] in ('"', "'") and chunk[max(0, k - 3) : k] not in ('"""', "'''")


def parse(chunk: str, me: str | None) -> list[Cite]:
    """The citations of one prose chunk; `me` is the document a bare § means (or None)."""
    found: list[Cite] = []
    for m in CITATION.finditer(chunk):
        if ISSUE.search(chunk[max(0, m.start() - 40) : m.start()]):
            continue
        prev = found[-1] if found else None
        gap = chunk[prev.end : m.start()] if prev else None
        cont = prev is not None and CONTINUATION.fullmatch(gap or "") is not None
        explicit = m.group("name") is not None
        doc = m.group("name") if explicit else (prev.doc if prev and cont else me)
        quoted = quote_before(chunk, m.start()) or (
            cont and not explicit and prev is not None and prev.quoted
        )
        tail = m.group("tail") or ""
        if (
            prev is not None
            and cont
            and not explicit
            and RANGE.fullmatch(gap or "")
            and prev.num is not None
            and prev.last is None
            and not prev.tail
            and m.group("num") is not None
            and m.group("end") is None
        ):
            found[-1] = replace(
                prev, end=m.end(), last=m.group("num"), tail=tail, text=chunk[prev.start : m.end()]
            )
            continue
        found.append(
            Cite(
                m.start(),
                m.end(),
                doc,
                explicit,
                cont,
                quoted,
                m.group("num"),
                m.group("end"),
                m.group("id"),
                m.group("sep") or " ",
                tail,
                m.group(0),
            )
        )
    return found


def covered(doc: str, first: str, last: str) -> list[str] | None:
    """The whole sections a range covers, in document order: `§2-§3.5` is §2 and §3."""
    order = ORDER[doc]
    if first not in order or last not in order or order.index(first) > order.index(last):
        return None
    j = order.index(last)
    while j + 1 < len(order) and order[j + 1].startswith(last + "."):
        j += 1
    inside = order[order.index(first) : j + 1]
    chosen: list[str] = []
    for n in inside:
        if any(n.startswith(c + ".") for c in chosen):
            continue
        if all(d in inside for d in order if d.startswith(n + ".")):
            chosen.append(n)
    return chosen


def render(c: Cite, context: str | None) -> tuple[str, str] | None:
    """(the citation with ids, the document its last id is in); None when it cannot be mapped."""
    if c.doc not in ORDER or c.num is None:
        return None
    nums = [c.num] if c.last is None else covered(c.doc, c.num, c.last)
    if not nums or any((c.doc, n) not in TARGET for n in nums):
        return None
    pieces, current = [], context
    for i, n in enumerate(nums):
        doc, anchor = TARGET[(c.doc, n)]
        if (i == 0 and c.explicit) or doc != current:
            pieces.append(f"spec/{doc}.md{c.sep if i == 0 and c.explicit else ' '}§{anchor}")
        else:
            pieces.append(f"§{anchor}")
        current = doc
    return ", ".join(pieces) + c.tail, current


@dataclass(frozen=True)
class Change:
    start: int  # in the file
    end: int
    old: str
    new: str


def rewrite_chunk(p: Prose, me: str | None) -> tuple[list[Change], list[Cite]]:
    """The changes of one chunk, and its numeric citations that could not be mapped."""
    changes: list[Change] = []
    unmapped: list[Cite] = []
    written: str | None = None  # the document the previous citation, as rewritten, is in
    for c in parse(p.text, me):
        context = written if c.cont else me
        if c.num is None or c.quoted:
            written = c.doc if c.explicit or c.num is not None else context
            continue
        rendered = render(c, context)
        if rendered is None:
            unmapped.append(c)
            written = c.doc
            continue
        new, written = rendered
        changes.append(Change(p.start + c.start, p.start + c.end, c.text, new))
    return changes, unmapped


# --- wrapping a Python or C line the rewrite made too long ----------------------------------------
@dataclass(frozen=True)
class Continued:
    """How a prose line continues: where its prose starts and how its next line starts."""

    body: int  # where the prose of the line starts
    follow: str  # how its next line starts
    line_comment: bool  # `#`, `//` or a C block comment: a citation group ends with the line
    inline: bool  # a comment after code: it ends on this line


def continuation(line: str, suffix: str, next_indent: str) -> Continued:
    indent = indent_of(line)
    text = line[len(indent) :]
    if suffix == ".py":
        if m := re.match(r"#+:? ", text):
            return Continued(len(indent) + m.end(), indent + m.group(0), True, False)
        if m := re.search(r"  #:? ", line):  # after code: the comment continues on its own line
            opens = line[: m.start()].rstrip().endswith(":") and len(next_indent) > len(indent)
            return Continued(m.end(), (next_indent if opens else indent) + "# ", True, True)
        quote = 3 if text.startswith(('"""', "'''")) else 0  # a docstring line
        bullet = re.match(r"(?:[*-]|\d+\.) ", text[quote:])
        hanging = " " * (bullet.end() if bullet else 0)
        return Continued(len(indent) + quote, indent + hanging, False, False)
    # C: a citation group does not go on past a line's "*" or "//", so every line stands alone.
    if m := re.match(r"//+ ", text):
        return Continued(len(indent) + m.end(), indent + m.group(0), True, False)
    if m := re.match(r"/\*+ |\* ", text):
        follow = indent + ("* " if m.group(0) == "* " else " * ")
        return Continued(len(indent) + m.end(), follow, True, False)
    if m := re.search(r"//+ ", line):
        return Continued(m.end(), indent + m.group(0), True, True)
    if m := re.search(r"/\*+ ", line):
        return Continued(m.end(), indent + "   ", True, True)
    return Continued(len(indent), indent, True, False)  # a line inside a block comment


# A line that starts so would continue a citation group (or lose its document) on a line that
# is read apart from the one before it.
GROUP_GOES_ON = re.compile(r"(?:(?:and|or|to|through|then|[-–/&,])\s+)?§")


def shorten_rule(line: str) -> str:
    """A banner comment (`# --- title -----`) too long: its run of dashes shortened to fit."""
    excess = len(line) - LIMIT
    run = max(re.findall(r"-{4,}", line), key=len, default="")
    if excess <= 0 or len(run) - excess < 3:
        return line
    return line.replace(run, run[: len(run) - excess], 1)


def split(line: str, suffix: str, next_indent: str) -> tuple[str, str, bool] | None:
    """(`line` up to a space at most LIMIT characters in, the rest as the next line, whether the
    comment ends on `line`); None when `line` is short enough or cannot be cut.

    Never before "step"/"item" (it belongs to the id before it), and in a line comment, whose
    lines are read one by one, never before a `§` (it would lose its document)."""
    if len(line) <= LIMIT:
        return None
    c = continuation(line, suffix, next_indent)
    cut = next(
        (
            k
            for k in range(min(LIMIT, len(line) - 1), c.body, -1)
            if line[k] == " "
            and line[c.body : k].strip()
            and not re.match(r"(?:steps?|items?)\b", line[k + 1 :])
            and not (c.line_comment and GROUP_GOES_ON.match(line, k + 1))
            and line[k + 1 :].strip() not in ("*/", "*/ */")
        ),
        None,
    )
    if cut is None:
        return None
    closing = ('"""', "'''", "*/")
    ends = c.inline or any(q in line[c.body :] for q in closing)
    return line[:cut].rstrip(), c.follow + line[cut + 1 :].lstrip(" "), ends


def joins(line: str, follow: str) -> bool:
    """Whether `line` continues the paragraph whose lines start with `follow`."""
    text = line[len(follow) :]
    return (
        line.startswith(follow)
        and text.strip() != ""
        and not text.startswith(" ")
        and not re.match(r"(?:[*-]|\d+\.) |\"\"\"|'''|\*/", text)
    )


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" "))]


def reflow(lines: list[str], rows: set[int], suffix: str) -> list[str]:
    """The lines, each of `rows` that is too long cut at a space; the words cut off go to the
    start of the paragraph's next line when there is one (which is then cut in turn)."""
    out: list[str] = []
    k = 0
    while k < len(lines):
        current = shorten_rule(lines[k]) if k in rows else lines[k]
        while k in rows or len(current) > LIMIT:
            after = next((ln for ln in lines[k + 1 :] if ln.strip()), "")
            cut = split(current, suffix, indent_of(after))
            if cut is None:
                break
            head, rest, ends = cut
            out.append(head)
            follow = continuation(current, suffix, indent_of(after)).follow
            if not ends and k + 1 < len(lines) and joins(lines[k + 1], follow):
                k += 1
                current = rest.rstrip() + " " + lines[k][len(follow) :]
            else:
                current = rest
        out.append(current)
        k += 1
    return out


def apply(text: str, changes: list[Change], suffix: str) -> str:
    """`text` with the changes made, the lines they lengthened wrapped (Python and C only)."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []  # where the new citations are in the new text
    pos = length = 0
    for ch in sorted(changes, key=lambda ch: ch.start):
        out.append(text[pos : ch.start])
        length += ch.start - pos
        spans.append((length, length + len(ch.new)))
        out.append(ch.new)
        length += len(ch.new)
        pos = ch.end
    out.append(text[pos:])
    new = "".join(out)
    if suffix not in (".py", ".c", ".h"):
        return new
    rows = {r for a, b in spans for r in range(new.count("\n", 0, a), new.count("\n", 0, b) + 1)}
    return "\n".join(reflow(new.split("\n"), rows, suffix))


def rewrite(path: Path, text: str, root: Path = ROOT) -> tuple[str, list[Change], list[Cite]]:
    """(the rewritten text, the changes, the numeric citations left because nothing maps them)."""
    me = self_doc(path, root)
    changes: list[Change] = []
    unmapped: list[Cite] = []
    for p in prose(path, text):
        found, left = rewrite_chunk(p, me)
        changes += found
        unmapped += left
    return (apply(text, changes, path.suffix) if changes else text), changes, unmapped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    parser.add_argument("paths", nargs="*", type=Path, help="files (default: the scanned tree)")
    args = parser.parse_args(argv)
    problems = map_problems()
    paths = [p.resolve() for p in args.paths] or scanned_files()
    files = cites = 0
    for path in paths:
        text = path.read_text("utf-8")
        new, changes, unmapped = rewrite(path, text)
        rel = path.relative_to(ROOT)
        for ch in changes:
            print(f"{rel}:{text.count(chr(10), 0, ch.start) + 1}: {ch.old!r} -> {ch.new!r}")
        for c in unmapped:
            problems.append(f"{rel}: no id for {c.text!r} (spec/{c.doc}.md)")
        if new != text:
            files, cites = files + 1, cites + len(changes)
            if not args.check:
                path.write_text(new, "utf-8")
    verb = "would rewrite" if args.check else "rewrote"
    print(f"{verb} {cites} citations in {files} files", file=sys.stderr)
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    return 1 if problems or (args.check and files) else 0


if __name__ == "__main__":
    sys.exit(main())
