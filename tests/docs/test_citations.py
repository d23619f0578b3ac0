"""Every `§` citation names a heading id of an in-tree document (issue 27 item 8; issue 12).

The code, the tests and the documents cite four documents: spec/vqf.md, spec/ninfer3.md,
spec/numerics.md and spec/models.md. Every numbered heading there carries a stable id (an
`<a id="...">` line above it) and a citation names the id: `spec/numerics.md §q8-activation`,
so a document can be reordered without touching its citations. Only a continuation of the same
group may leave the document out (`spec/vqf.md §q8-tiled, §q4-0`), and inside spec/<doc>.md a
bare `§id` means that document. A numeric `§N.M` is the retired form: tools/rewrite_citations.py
rewrites it, and none may be left.

Prose is scanned (tools/rewrite_citations.py `prose`): Python comments and docstrings, C comments,
TOML comments and markdown outside fenced code, inline code spans and spliced tables. Strings the
code uses (messages, check ids, case descriptions the corpus stores) and quoted citations are
data, not citations. The rule table's section fields are data too: they keep the fact-sheet
numbers the conformance corpus publishes (conformance/sections.py), and are checked against the
numbers of the headings.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from weightfile.spec.rules import RULES, Rule, lookup

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "rewrite_citations", ROOT / "tools/rewrite_citations.py"
)
assert _spec is not None and _spec.loader is not None
rc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = rc  # dataclasses look their module up
_spec.loader.exec_module(rc)

DOCS = rc.DOCS
# The fact sheets the in-tree documents restate; the tree must not send a reader to them.
OUT_OF_TREE = re.compile(r"ninfer-v3|qwen-math|kestrel-numerics|shared/spec|\bfs §")
# VQF sections whose numbered steps the rule table once wrote as a last number.
LEGACY_STEPS = {"9", "2.4"}


@dataclass(frozen=True)
class Found:
    path: Path
    line: int
    cite: rc.Cite

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}: {self.cite.text!r}"


def citations() -> Iterator[Found]:
    for path in rc.scanned_files():
        text = path.read_text(encoding="utf-8")
        me = rc.self_doc(path)
        for p in rc.prose(path, text):
            for c in rc.parse(p.text, me):
                if not c.quoted:
                    yield Found(path, text.count("\n", 0, p.start + c.start) + 1, c)


ALL = list(citations())
IDS = {doc: rc.anchors(doc) for doc in DOCS}


def test_the_scan_sees_the_citations() -> None:
    assert len(ALL) > 1000  # the tree cites its documents about 3,000 times


def test_no_numeric_citation_is_left() -> None:
    numeric = [f.where() for f in ALL if f.cite.num is not None]
    assert not numeric, (
        f"{len(numeric)} numeric citations; run python tools/rewrite_citations.py:\n"
        + "\n".join(numeric)
    )


def test_every_citation_names_its_document() -> None:
    bare = [f.where() for f in ALL if f.cite.doc is None]
    assert not bare, f"{len(bare)} citations without spec/<doc>.md:\n" + "\n".join(bare)


def test_every_citation_names_a_heading_id() -> None:
    bad = [
        f"{f.where()}: spec/{f.cite.doc}.md has no heading id {f.cite.id!r}"
        for f in ALL
        if f.cite.id is not None
        and f.cite.doc is not None
        and f.cite.id not in IDS.get(f.cite.doc, ())
    ]
    assert not bad, f"{len(bad)} citations do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", DOCS)
def test_every_numbered_heading_has_one_id_of_its_own(doc: str) -> None:
    text = (ROOT / "spec" / f"{doc}.md").read_text("utf-8")
    numbered = re.findall(r"^(.*)\n#{2,6} \d+(?:\.\d+)*\.? ", text, re.M)
    assert numbered and all(re.fullmatch(r'<a id="[a-z][a-z0-9-]*"></a>', p) for p in numbered)
    ids = rc.HEADING_ID.findall(text)
    assert len(ids) == len({i for i, _ in ids}), "an id used twice"


def test_the_rewrite_map_points_at_existing_ids() -> None:
    assert rc.map_problems() == []


def test_no_file_sends_the_reader_outside_the_tree() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{m.group(0)!r}"
        for path in rc.scanned_files()
        for p in rc.prose(path, path.read_text(encoding="utf-8"))
        for m in OUT_OF_TREE.finditer(p.text)
    ]
    assert not found, "cite spec/<doc>.md instead of the fact sheets:\n" + "\n".join(found)


# --- rule ids in prose ----------------------------------------------------------------------------
FILE_SUFFIXES = {"vqf", "ninfer", "json", "md", "py", "npz", "npy", "jinja", "bin", "txt"}
RULE_ID = re.compile(r"`((?:vqf|ninfer3|qwen35)\.[a-z0-9_]+\.[a-z0-9_.*]+)`")


def documents() -> list[Path]:
    return [p for p in rc.scanned_files() if p.suffix == ".md"]


def paragraphs(text: str) -> Iterator[str]:
    """The markdown paragraphs outside fenced code, spliced tables and rule-table rows."""
    para: list[str] = []
    end = 0
    for offset, line in rc.markdown_lines(text):
        if para and (offset != end or not line.strip()):
            yield "\n".join(para)
            para = []
        if line.strip():
            para.append(line)
            end = offset + len(line) + 1
    if para:
        yield "\n".join(para)


def rule_problem(rule_id: str, retirement_told: bool) -> str | None:
    """Why a document must not name `rule_id` (None when it may)."""
    if rule_id.endswith(".*"):  # a group of rules: `ninfer3.binder.*`
        live = [r for r in RULES.values() if r.id.startswith(rule_id[:-1]) and not r.retired]
        return None if live else "names no live rule"
    row = lookup(rule_id)
    if row is None:
        return "is not a rule of spec/rules.py"
    if row.retired and not retirement_told:
        return f"is retired (now {row.retired})"
    return None


def test_documents_name_only_live_rules() -> None:
    """A rule id a document names is a row of spec/rules.py and not a retired one, unless the
    paragraph is about the retirement."""
    bad = []
    for path in documents():
        for para in paragraphs(path.read_text(encoding="utf-8")):
            told = re.search(r"\bretire", para, re.I) is not None
            for rule_id in RULE_ID.findall(para):
                if rule_id.rsplit(".", 1)[1] in FILE_SUFFIXES:
                    continue  # a file name, not a rule id
                if why := rule_problem(rule_id, told):
                    bad.append(f"{path.relative_to(ROOT)}: {rule_id} {why}")
    assert not bad, "\n".join(bad)


def test_a_retired_rule_named_in_passing_is_found() -> None:
    assert rule_problem("vqf.enc.not_implemented", retirement_told=False) is not None
    assert rule_problem("vqf.enc.not_implemented", retirement_told=True) is None
    assert rule_problem("vqf.no.such_rule", retirement_told=False) is not None
    assert rule_problem("vqf.header.magic", retirement_told=False) is None


# --- rule-table sections --------------------------------------------------------------------------
def numbered_headings(doc: str) -> set[str]:
    text = (ROOT / "spec" / f"{doc}.md").read_text("utf-8")
    return set(re.findall(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", text, re.M))


@pytest.mark.parametrize("rule", [r for r in RULES.values() if r.section], ids=lambda r: r.id)
def test_every_rule_section_is_a_heading(rule: Rule) -> None:
    """A rule's section is a heading id, or a fact-sheet number (the corpus publishes those for
    the VQF and .ninfer rules) of a numbered heading."""
    if re.fullmatch(r"§" + rc.ID, rule.section):
        assert rule.section[1:] in IDS[rule.doc], f"{rule.id}: spec/{rule.doc}.md has no id"
        return
    assert rule.doc in ("vqf", "ninfer3"), f"{rule.id}: cite spec/{rule.doc}.md by a heading id"
    heads = numbered_headings(rule.doc)
    for n in re.findall(r"\d+(?:\.\d+)*", rule.section):
        parent = n.rsplit(".", 1)[0]
        if rule.doc == "vqf" and parent in LEGACY_STEPS and n not in heads:
            n = parent  # "9.12" is step 12 of section 9
        assert n in heads, f"{rule.id}: {rule.section}: spec/{rule.doc}.md has no heading {n}"


# --- the rewrite ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "me, before, after",
    [
        (None, "(spec/vqf.md §5.6-§5.8)", "(spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l)"),
        (None, "spec/vqf.md §2-§3.5 and", "spec/vqf.md §header, §directory and"),
        (
            None,
            "spec/ninfer3.md §2.5, §2.6 and §2.9 step 4",
            "spec/ninfer3.md §binding, §use and §validation step 4",
        ),
        (
            None,
            "spec/numerics.md\n§4.1 / §10",
            "spec/numerics.md\n§q8-activation / spec/models.md §qwen3-forward",
        ),
        (
            None,
            "spec/numerics.md §16-§18",
            "spec/numerics.md §log, §gdn, spec/models.md §qwen35-forward",
        ),
        (
            "numerics",
            "by §18.4 and §5.1",
            "by spec/models.md §qwen35-activations and spec/numerics.md §rmsnorm",
        ),
        ("vqf", "the §9 step 12 check", "the §loader-chain step 12 check"),
        (None, 'section "spec/vqf.md §9 step 12" stays', 'section "spec/vqf.md §9 step 12" stays'),
        (None, "issue 5 §6 stays", "issue 5 §6 stays"),
        (None, '"""spec/vqf.md §9.1: a docstring', '"""spec/vqf.md §strict-checks: a docstring'),
        (None, "spec/vqf.md §q8-tiled stays", "spec/vqf.md §q8-tiled stays"),
    ],
)
def test_the_rewrite(me: str | None, before: str, after: str) -> None:
    changes, unmapped = rc.rewrite_chunk(rc.Prose(0, before), me)
    assert not unmapped
    assert rc.apply(before, changes, ".md") == after


def test_the_rewrite_wraps_a_comment_it_makes_too_long() -> None:
    line = "    # " + "word " * 14 + "and spec/numerics.md §20.4.3-§20.4.4 say so."
    text = f"x = 1\n{line}\n"
    new, changes, unmapped = rc.rewrite(ROOT / "ref" / "x.py", text)
    assert changes and not unmapped
    lines = new.splitlines()
    assert len(lines) == 3 and all(len(ln) <= rc.LIMIT for ln in lines)
    assert (
        lines[2].startswith("    # ")
        and "spec/numerics.md §board-q4-prefill, §board-q8-prefill" in new
    )
    assert rc.rewrite(ROOT / "ref" / "x.py", new)[1] == []  # idempotent


def test_a_line_comment_is_never_cut_inside_a_citation_group() -> None:
    # The cut would fall before "and §this-tree", which on the next comment line has no document.
    line = "# section -> number of subsections, as in the fact sheet "
    line += "(plus our spec/ninfer3.md §0 and §9)"
    new, _, _ = rc.rewrite(ROOT / "tests" / "x.py", line + "\n")
    assert all(len(ln) <= rc.LIMIT for ln in new.splitlines())
    chunks = [p.text for p in rc.prose(ROOT / "tests" / "x.py", new)]
    assert all(c.doc == "ninfer3" for chunk in chunks for c in rc.parse(chunk, None))


def test_a_bare_section_after_prose_is_not_a_continuation() -> None:
    [first, second] = rc.parse("spec/vqf.md §strict-checks and the trailer (§fnv-trailer)", None)
    assert first.doc == "vqf" and not second.cont and second.doc is None


#: The documents whose numbering the reorder changed: a number there is never a stable citation,
#: not even inside a string (the rewrite leaves quoted text alone, as data).
RENUMBERED = re.compile(r"spec/(numerics|models)\.md §\d")


def test_no_string_cites_a_renumbered_document_by_number() -> None:
    """Help texts and messages are strings the prose scan does not read; a reader still follows
    them, so spec/numerics.md and spec/models.md are cited by id there too."""
    own = {Path(__file__).resolve(), (ROOT / "tools/rewrite_citations.py").resolve()}
    bad = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
        for path in rc.scanned_files()
        if path.resolve() not in own
        for text in [path.read_text(encoding="utf-8")]
        for m in RENUMBERED.finditer(text)
    ]
    assert not bad, "cite these by heading id:\n" + "\n".join(bad)
