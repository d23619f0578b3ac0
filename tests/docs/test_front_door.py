"""The README is a short front door and docs/ holds the rest (issue 27 item 7).

The README keeps the two set-up commands (CI runs the second verbatim: .ci/run), names every
command and sends the reader to docs/commands.md, where every command has its row. Every relative
link of the README and of docs/ leads to a file that exists, and an anchor to a heading in it.
The README's layout map names the renovated tree: each entry exists where the map puts it.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from weightfile.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 200  # the "at most about 200 lines"

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def section(text: str, title: str) -> str:
    """The body of the `## title` section (up to the next `## `)."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"no section '## {title}'"
    return m.group(1)


def commands() -> list[str]:
    """Every command the parser accepts, groups left out: 'run', 'conformance generate', ..."""
    found: list[str] = []

    def walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    before = len(found)
                    walk(sub, (*prefix, name))
                    if len(found) == before:  # no subcommands below: a command
                        found.append(" ".join((*prefix, name)))

    walk(build_parser(), ())
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_at_most_about_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_the_readme_shows_the_two_set_up_commands_and_ci_runs_the_second_verbatim() -> None:
    blocks = [body for _, body in FENCE.findall(section(README.read_text("utf-8"), "Set up"))]
    assert len(blocks) == 2, blocks
    first, second = (b.strip() for b in blocks)
    assert first == "python3 -m pip install . && weightfile demo"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == second, f".ci/run runs {ci[-1]!r}, the README says {second!r}"


def test_every_command_has_its_row_in_docs_commands() -> None:
    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `weightfile ")]
    missing = [
        c for c in commands() if not any(re.match(rf"\| `weightfile {c}[ `]", r) for r in rows)
    ]
    assert missing == []


def test_the_readme_names_every_command() -> None:
    body = section(README.read_text(encoding="utf-8"), "Command line")
    names = {c.split()[0] for c in commands()}
    missing = [n for n in names if not re.search(rf"`{n}[`| ]", body)]
    assert missing == [] and "docs/commands.md" in body


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}: {target}"
            if not dest.exists():
                broken.append(f"{where}: no such file")
            elif anchor and dest.suffix == ".md":
                heads = re.findall(r"^#+ (.+)$", FENCE.sub("", dest.read_text("utf-8")), re.M)
                if anchor not in {slug(h) for h in heads}:
                    broken.append(f"{where}: no such heading")
    assert broken == []


def test_docs_has_the_pages_the_readme_sends_readers_to() -> None:
    linked = set(LINK.findall(README.read_text(encoding="utf-8")))
    for page in ("commands", "api", "design", "performance", "fuzzing", "mutations", "layout"):
        assert f"docs/{page}.md" in linked, page


def test_every_path_of_the_readme_layout_map_exists() -> None:
    """Each entry of the map (a folder/ or a file.ext) exists under the folder it is indented in."""
    block = FENCE.findall(section(README.read_text(encoding="utf-8"), "Layout"))[0][1]
    missing, parents = [], [(-1, "")]  # (indent, folder) of the enclosing entries
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        column = re.split(r"\s{2,}", line.strip())[0].split()  # the names, before the description
        names = [n for n in column if re.fullmatch(r"[\w<>]+(?:/[\w<>]+)*/|[\w.]+\.\w+", n)]
        if not names or len(names) != len(column):
            continue  # a description's continuation line
        while parents[-1][0] >= indent:
            parents.pop()
        base = parents[-1][1]
        missing += [base + n for n in names if "<" not in n and not (ROOT / base / n).exists()]
        parents.append((indent, base + names[0]))
    assert missing == [], missing
