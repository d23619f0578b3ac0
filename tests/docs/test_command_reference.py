"""docs/commands.md's command table matches every command's argparse options (issue 34, "Done
when": the command reference matches --help).

Each command's row (its first cell: `weightfile CMD ...`, one or more forms) must name exactly the
long options the command's parser accepts: one missing from the row, or one the parser no longer
has, fails, naming the command. `--help` is everyone's, and `-q`/`--quiet`, which cli.py adds to
the long commands, is stated once in the "Progress" section, which must name those commands.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from weightfile.cli import LONG_COMMANDS, build_parser

from .test_front_door import commands, section

DOCS = Path(__file__).resolve().parents[2] / "docs" / "commands.md"
OPTION = re.compile(r"(?<![\w-])(?:--[a-z0-9][a-z0-9-]*|-[a-zA-Z](?![\w-]))")


def parser_of(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in command.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def parser_options(command: str) -> list[tuple[str, ...]]:
    """Each option of `command`'s parser as its spellings (`("-t", "--threads")`), less --help
    (and --quiet where cli.py adds it)."""
    skip = {"--help"} | ({"--quiet"} if command in LONG_COMMANDS and command != "bench" else set())
    return [
        tuple(a.option_strings)
        for a in parser_of(command)._actions
        if a.option_strings and not skip & set(a.option_strings)
    ]


def documented_options(command: str) -> set[str]:
    """The options (`--long`, `-s`) in the first cell of every row of the Commands table for
    `command`."""
    table = section(DOCS.read_text(encoding="utf-8"), "Commands")
    cells = []
    for line in table.splitlines():
        if not line.startswith("| `weightfile "):
            continue
        first = line.split(" | ")[0]
        forms = re.findall(r"`weightfile ([^`]*)`", first)
        if any(f == command or f.startswith(command + " ") for f in forms):
            cells.append(first)
    assert cells, f"docs/commands.md has no row for `weightfile {command}`"
    return {o for cell in cells for o in OPTION.findall(cell.replace("\\|", "|"))}


@pytest.mark.parametrize("command", commands())
def test_the_reference_row_names_exactly_the_parsers_options(command: str) -> None:
    documented, actual = documented_options(command), parser_options(command)
    missing = [" ".join(spellings) for spellings in actual if not documented & set(spellings)]
    stale = sorted(documented - {o for spellings in actual for o in spellings})
    assert not missing and not stale, (
        f"weightfile {command}: docs/commands.md lacks {missing}, names options the parser "
        f"does not have {stale}"
    )


def test_quiet_is_stated_once_for_the_long_commands() -> None:
    progress = section(DOCS.read_text(encoding="utf-8"), "Progress")
    assert "-q`/`--quiet`" in progress
    for command in LONG_COMMANDS:
        assert f"`{command}`" in progress or f"`{command.split()[0]}" in progress, command
