"""Every `§` citation has the one form `spec/<doc>.md §N[.M]` and resolves to a heading (issue 12).

The code, the tests and the documents cite four in-tree documents: spec/vqf.md, spec/ninfer3.md,
spec/numerics.md and spec/models.md. A citation names its document (`spec/ninfer3.md §2.9`);
only a continuation of the same citation group may leave it out (`spec/vqf.md §5.6-§5.8`,
`spec/ninfer3.md §2.5, §2.6`), and inside spec/<doc>.md a bare `§N` means that document. A
section resolves when the document has a heading `## N.` / `### N.M` / `#### N.M.K`;
`§N step K` and `§N item K` resolve `§N`.

Prose is scanned: Python comments and docstrings (every bare string statement), C comments and
markdown outside fenced code, inline code spans and spliced tables (between `<!-- ... -->`
markers). Strings the code uses (messages, check ids, case descriptions the corpus stores) are
data, not citations. The rule table's section fields are checked through the rule registry.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("vqf", "ninfer3", "numerics", "models")
SCANNED = ("spec", "ref", "fast", "conformance", "weightfile", "tests", "tools", "benchmarks")
SCANNED += ("docs",)  # the README's reference pages and measurement logs (issue 27 item 7)
# kestrel-board: the board-engine oracle, its README kept as its producers wrote it.
SKIPPED_PARTS = {"corpus", "__pycache__", ".venv", "kestrel-board"}
# The fact sheets the in-tree documents restate; the tree must not send a reader to them.
OUT_OF_TREE = re.compile(r"ninfer-v3|qwen-math|kestrel-numerics|shared/spec|\bfs §")

NUM = r"\d+(?:\.\d+)*"
CITATION = re.compile(
    r"(?P<doc>spec/(?P<name>[a-z0-9]+)\.md\s+)?"
    r"§(?P<num>" + NUM + r")(?:[-–](?P<end>" + NUM + r"))?"
    r"(?P<tail>,?\s+(?:step|item)s?\s+\d+(?:[-–]\d+)?)?"
)
# What may stand between two citations of one group: a range dash, a slash, a comma, "and" ...
CONTINUATION = re.compile(r"\s*(?:[-–/&]|,|,?\s+(?:and|or|to|through|then))\s*")
# "issue 5 §6" is a section of an issue, not of a document.
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+\s+$")
# VQF sections whose numbered steps today's rule table writes as a last number.
LEGACY_STEPS = {"9", "2.4"}
RULE_ROW = re.compile(r"^\|\s*`[a-z0-9_]+(?:\.[a-z0-9_]+)+`\s*\|")


@dataclass(frozen=True)
class Cite:
    path: Path
    line: int
    text: str
    doc: str | None  # None: a bare § that is neither a continuation nor a self-reference
    section: str
    end: str | None  # the other end of a range ("spec/vqf.md §5.6-5.8")

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.text!r}"


# --- the prose of a file --------------------------------------------------------------------------
def scanned_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*")):
            rel = p.relative_to(ROOT)
            if not p.is_file() or SKIPPED_PARTS & set(rel.parts):
                continue
            if p.suffix in (".py", ".c", ".h", ".md"):
                files.append(p)
    return files


def python_prose(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of every comment and every bare string statement (docstrings)."""
    strings = {
        (node.lineno, node.col_offset)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start in strings):
            yield tok.start[0], tok.string


# A C string or character literal (skipped), a line comment or a block comment.
C_TOKENS = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.S)


def c_prose(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of every C comment, string literals skipped."""
    for m in C_TOKENS.finditer(text):
        if m.group(0).startswith("/"):
            yield text.count("\n", 0, m.start()) + 1, m.group(0)


def markdown_prose(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of every paragraph, without code, spliced tables or rule-table rows."""
    fenced = spliced = False
    para: list[str] = []
    start = 0
    for k, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        elif stripped.startswith("<!--"):
            if re.match(r"<!--\s*(/|end\b|[\w-]+:end)", stripped, re.I):
                spliced = False
            elif re.match(r"<!--\s*(table:|begin\b|[\w-]+:begin)", stripped, re.I):
                spliced = True
        elif not (fenced or spliced or RULE_ROW.match(line)) and stripped:
            if not para:
                start = k
            para.append(re.sub(r"`[^`\n]*`", " ", line))
            if not line.startswith("#"):
                continue
        if para:
            yield start, "\n".join(para)
            para = []
    if para:
        yield start, "\n".join(para)


def prose(path: Path) -> Iterator[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        return python_prose(text)
    if path.suffix in (".c", ".h"):
        return c_prose(text)
    return markdown_prose(text)


def self_doc(path: Path) -> str | None:
    """spec/<doc>.md: its bare § cite itself."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "spec" and len(rel.parts) == 2 and rel.stem in DOCS:
        return rel.stem
    return None


def citations() -> Iterator[Cite]:
    for path in scanned_files():
        me = self_doc(path)
        for first, chunk in prose(path):
            prev_doc, prev_end = None, None
            for m in CITATION.finditer(chunk):
                if ISSUE.search(chunk[: m.start()]):
                    continue
                gap = chunk[prev_end : m.start()] if prev_end is not None else None
                if m.group("doc"):
                    doc = m.group("name")
                elif gap is not None and CONTINUATION.fullmatch(gap):
                    doc = prev_doc
                else:
                    doc = me
                line = first + chunk.count("\n", 0, m.start())
                yield Cite(path, line, m.group(0), doc, m.group("num"), m.group("end"))
                prev_doc, prev_end = doc, m.end()


# --- headings of the in-tree documents ------------------------------------------------------------
def headings(doc: str) -> set[str] | None:
    path = ROOT / "spec" / f"{doc}.md"
    if not path.exists():
        return None
    found = re.findall(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", path.read_text("utf-8"), re.M)
    return set(found)


def unresolved(doc: str | None, *sections: str | None) -> str | None:
    """Why `doc §section` does not resolve (None when it does)."""
    if doc not in DOCS:
        return f"spec/{doc}.md is not one of the documents {DOCS}"
    heads = headings(doc)
    if heads is None:
        return f"spec/{doc}.md does not exist"
    missing = [s for s in sections if s is not None and s not in heads]
    return f"spec/{doc}.md has no heading {', '.join(missing)}" if missing else None


# --- rule-table sections --------------------------------------------------------------------------
def rule_sections() -> Iterator[tuple[str, str, str, str | None]]:
    """(rule id, doc, section, range end) of every rule in the registry.

    The unified table (`weightfile.spec.rules`, fields `section` and `step`) is read when it
    exists; until then the two per-format tables, whose legacy VQF sections spell a numbered step
    of the loader chains as a last number ("9.12" is step 12 of section 9, "2.4.3" step 3 of 2.4).
    """
    try:
        from weightfile.spec import rules as unified  # type: ignore[attr-defined]
    except ImportError:
        unified = None
    if unified is not None:
        table = unified.RULES.values() if isinstance(unified.RULES, dict) else unified.RULES
        for r in table:
            if not r.section:
                continue  # a rule no document section states (a CLI usage error, say)
            named = re.match(r"spec/([a-z0-9]+)\.md\b", str(r.section))
            doc = named.group(1) if named else getattr(r, "doc", None) or rule_doc(r.id)
            yield r.id, doc, *parse_section(doc, str(r.section))
        return
    from weightfile.spec.ninfer3.rules import RULES as NINFER3
    from weightfile.spec.vqf.rules import RULES as VQF

    for table in (VQF, NINFER3):
        for r in table.values():
            doc = rule_doc(r.id)
            yield r.id, doc, *parse_section(doc, r.section)


def rule_doc(rule_id: str) -> str:
    """The document a rule id's format is specified in (`vqf.*`, `ninfer3.*`, `qwen35.*`).

    Used when the section field does not name its document.
    """
    return {"vqf": "vqf", "ninfer3": "ninfer3", "qwen35": "ninfer3"}.get(rule_id.split(".")[0], "")


def parse_section(doc: str, section: str) -> tuple[str, str | None]:
    """(section, range end) of a rule's section field, legacy step numbers folded into §N."""
    m = re.fullmatch(
        r"(?:spec/[a-z0-9]+\.md\s+)?§?(" + NUM + r")(?:[-–]§?(" + NUM + r"))?(?:\s+step\s+\d+)?",
        section.strip(),
    )
    assert m, f"unparsable rule section {section!r}"
    num, end = m.group(1), m.group(2)
    parent = num.rsplit(".", 1)[0]
    if doc == "vqf" and parent in LEGACY_STEPS and num not in (headings(doc) or set()):
        num = parent  # a legacy step number: "9.12" is step 12 of section 9
    return num, end


# --- the tests ------------------------------------------------------------------------------------
ALL = list(citations())


def test_the_scan_sees_the_citations() -> None:
    assert len(ALL) > 1000  # the tree cites its documents about 1,600 times


def test_every_citation_names_its_document() -> None:
    bare = [c.where() for c in ALL if c.doc is None]
    assert not bare, f"{len(bare)} citations without spec/<doc>.md:\n" + "\n".join(bare)


def test_every_citation_resolves_to_a_heading() -> None:
    bad = [
        f"{c.where()}: {why}"
        for c in ALL
        if c.doc is not None and (why := unresolved(c.doc, c.section, c.end))
    ]
    assert not bad, f"{len(bad)} citations do not resolve:\n" + "\n".join(bad)


def test_no_file_sends_the_reader_outside_the_tree() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{first + chunk.count(chr(10), 0, m.start())}: {m.group(0)!r}"
        for path in scanned_files()
        for first, chunk in prose(path)
        for m in OUT_OF_TREE.finditer(chunk)
    ]
    assert not found, "cite spec/<doc>.md instead of the fact sheets:\n" + "\n".join(found)


@pytest.mark.parametrize("rule_id, doc, section, end", list(rule_sections()))
def test_every_rule_section_resolves(rule_id: str, doc: str, section: str, end: str | None) -> None:
    why = unresolved(doc, section, end)
    assert why is None, f"{rule_id}: §{section}: {why}"


@pytest.mark.parametrize(
    "text, doc",
    [
        ("(spec/vqf.md §5.6-§5.8)", "vqf"),
        ("spec/ninfer3.md §2.5, §2.6 and §2.9 step 4", "ninfer3"),
        ("spec/numerics.md\n§4.1 / §4.2", "numerics"),
    ],
)
def test_a_group_shares_its_document(text: str, doc: str) -> None:
    prev_end, docs = None, []
    for m in CITATION.finditer(text):
        gap = text[prev_end : m.start()] if prev_end is not None else None
        docs.append(m.group("name") or (docs[-1] if gap and CONTINUATION.fullmatch(gap) else None))
        prev_end = m.end()
    assert docs and all(d == doc for d in docs)


def test_a_bare_section_after_prose_is_not_a_continuation() -> None:
    text = "spec/vqf.md §9.1 and the trailer (§3.5)"
    [first, second] = list(CITATION.finditer(text))
    assert not CONTINUATION.fullmatch(text[first.end() : second.start()])
