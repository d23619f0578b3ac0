"""The profile registry (weightfile/profiles.py): every row resolves, the CLI's --profile choices
are its names, and a profile refuses the families and containers it does not run with the typed
errors the board profile raised before the registry (spec/numerics.md §profiles, §board)."""

from __future__ import annotations

import argparse

import pytest

from weightfile import families, profiles
from weightfile.cli import build_parser, main
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.numerics.profile import CANONICAL, KESTREL_BOARD, NumericsProfile

FAMILY_NAMES = {r.name for r in families.ROWS}


@pytest.mark.parametrize("row", profiles.ROWS, ids=lambda r: r.name)
def test_every_profile_row_resolves(row):
    """The row's numerics carry its name; each family it names is a family registry row, and
    each model factory it names imports to a callable."""
    assert isinstance(row.numerics, NumericsProfile) and row.numerics.name == row.name
    assert row.summary and row.runs
    if row.canonical:
        return
    assert row.models and set(row.models) <= FAMILY_NAMES
    for family, models in row.models.items():
        for ref in (models.reference, models.fast, models.generate):
            if ref is not None:
                assert callable(families.resolve(ref)), f"{row.name}/{family}: {ref}"


def test_the_registry_names_the_two_profiles_in_order():
    assert profiles.names() == (CANONICAL.name, KESTREL_BOARD.name)
    assert profiles.profile_named("canonical").numerics is CANONICAL
    assert profiles.profile_named("kestrel-board").numerics is KESTREL_BOARD
    assert profiles.DEFAULT == "canonical"
    with pytest.raises(KeyError, match="known"):
        profiles.profile_named("board")


def profile_options(parser: argparse.ArgumentParser, key: str = "") -> dict[str, argparse.Action]:
    """Every --profile option of the CLI, by command path."""
    found = {}
    for action in parser._actions:
        if "--profile" in action.option_strings:
            found[key] = action
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found |= profile_options(sub, f"{key} {name}".strip())
    return found


def test_the_cli_profile_choices_are_the_registry_names():
    options = profile_options(build_parser())
    assert {"run", "trace"} <= set(options)
    for command, action in options.items():
        assert tuple(action.choices) == profiles.names(), command
        assert action.default == profiles.DEFAULT, command


@pytest.mark.parametrize("family", families.ROWS, ids=lambda r: r.name)
def test_canonical_runs_every_family_with_the_family_rows_models(family):
    canonical = profiles.profile_named("canonical")
    if family.refusal is not None:
        with pytest.raises(UnsupportedError):
            canonical.family_models(family)
        return
    assert canonical.family_models(family) is None
    assert canonical.has_fast(family) == family.has_fast
    canonical.require_container(family.container)  # no refusal


def test_the_board_profile_runs_the_qwen3_moe_and_vl_board_models_only():
    board = profiles.profile_named("kestrel-board")
    qwen3 = families.lookup(families.VQF, families.QWEN3)
    assert board.family_models(qwen3).reference.endswith("ref.qwen3.board.model:bind_board")
    moe = families.lookup(families.VQF, families.QWEN3_MOE)
    own = board.family_models(moe)
    assert own.reference.endswith("ref.qwen3_moe.board.model:bind_board_moe")
    assert own.fast.endswith("fast.qwen3_moe.board.model:bind_board_moe_fast")
    assert board.has_fast(qwen3) and board.has_fast(moe)
    assert board.generator("qwen3") is families.resolve(board.models["qwen3"].generate)
    vl = board.models["qwen3_vl"]
    assert vl.reference.endswith("ref.qwen3_vl.board.model:bind_board_vl")
    assert vl.fast.endswith("fast.qwen3_vl.board.model:bind_board_vl_fast")
    assert board.generator("qwen3_vl") is families.resolve(vl.generate)
    for other in families.ROWS:
        if other.name in ("qwen3", "qwen3_moe", "qwen3_vl") or other.refusal is not None:
            continue
        with pytest.raises(UnsupportedError) as exc:
            board.reference_model(other, None)
        assert exc.value.rule == "vqf.bind.unsupported"
        runs = "kestrel-board profile runs dense Qwen3, Qwen3-MoE and Qwen3-VL VQF files"
        assert f"{runs}, not the {other.name}" in str(exc.value)


def test_the_board_profile_refuses_a_ninfer_file_by_its_container():
    board = profiles.profile_named("kestrel-board")
    board.require_container(families.VQF)
    with pytest.raises(UnsupportedError) as exc:
        board.require_container(families.NINFER)
    assert (exc.value.rule, exc.value.path) == ("frontend.profile.unsupported", "--profile")
    runs = "the kestrel-board profile runs dense Qwen3, Qwen3-MoE and Qwen3-VL VQF files"
    assert f"{runs}, not .ninfer" in str(exc.value)


@pytest.mark.parametrize(("name", "why"), [("tiny-moe-q4_0", "needs Q8_0 projections and experts")])
def test_run_refuses_a_file_the_board_profile_does_not_run(name, why, tmp_path, capsys):
    """`run --profile kestrel-board` on a Q4_0 Qwen3-MoE file (a MoE limit, named in the
    message): the typed refusal (exit 3) with the binder's rule id, before any weight is bound."""
    from weightfile.bench.synthetic import synthetic_model

    path, _ = synthetic_model(name, tmp_path)
    argv = ["run", str(path), "--token-ids", "1", "--profile", "kestrel-board"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "vqf.bind.unsupported" in err and why in err
