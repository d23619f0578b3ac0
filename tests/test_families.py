"""The family registry (weightfile/families/registry.py): every row resolves (its reading code,
its importers, presets and conformance builders), the convert dispatch, the bench presets and the
corpus generator are derived from the rows, each container's architecture picks the right row, an
unknown architecture is a typed error, and the callers that load models ask the registry instead
of importing a family themselves."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

import pytest

from weightfile import families, profiles
from weightfile.bench import synthetic
from weightfile.bench.synthetic_spec import NinferSyntheticSpec
from weightfile.conformance import adapter, generate
from weightfile.convert import dispatch
from weightfile.convert.dispatch import CONVERTERS
from weightfile.families import (
    NINFER,
    QWEN3,
    QWEN3_MOE,
    QWEN3_VL,
    ROWS,
    VQF,
    lookup,
    text_architecture,
    vqf_architecture,
)
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.config import validate_text_config
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.ninfer3.text_config import DENSE_ARCHITECTURE, MODEL_TYPES, MOE_ARCHITECTURE
from weightfile.spec.numerics.profile import CANONICAL
from weightfile.spec.vqf.flags import VQFFlag

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "conformance" / "corpus"
VQF_MODELS = sorted((CORPUS / "vqf" / "v1" / "model" / "qwen3").glob("*/model.vqf"))
NINFER_MODELS = [
    CORPUS / "ninfer3" / "v1" / "model" / "qwen35" / name / "model.ninfer"
    for name in ("dense-bf16", "dense-q4-q8-fused", "moe-q8-fused")
]
CODE_FIELDS = ("binder", "reference", "fast", "trace")


def test_the_family_folders_are_the_rows():
    """One folder per row under weightfile/families/, and a row's code outside the oracle lives in
    its own folder (or is format-level code the row names on purpose)."""
    folders = {p.parent.name for p in (ROOT / "weightfile" / "families").glob("*/__init__.py")}
    assert folders == {row.name for row in ROWS}
    for row in ROWS:
        refs = [i.converter for i in row.importers] + [b.source for b in row.builders]
        refs += [row.presets] if row.presets is not None else []
        assert refs, f"{row.name} names no importer, preset or builder"
        for ref in refs:
            assert ref.startswith(f"weightfile.families.{row.name}."), ref


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_importer_resolves_and_the_convert_dispatch_runs_it(row):
    """Each (source kind, target kind) a row names is the dispatch's entry for that pair, and a
    source of that kind is routed to it (`hf/*`: a folder of a model_type no row names)."""
    for imp in row.importers:
        assert callable(families.resolve(imp.converter)), imp.converter
        assert CONVERTERS[(imp.source, imp.target)] == imp.converter
        kind = "hf/unnamed_model_type" if imp.source == "hf/*" else imp.source
        with patch.object(dispatch, "source_kind", lambda _src, kind=kind: kind):
            dst = Path("dst" if imp.target == "hf" else f"dst.{imp.target}")  # hf: a folder
            s, t, run = dispatch.converter_for(Path("src"), dst)
        assert (s, t) == (kind, imp.target)
        assert run is families.resolve(imp.converter)


def test_the_convert_dispatch_is_the_rows_plus_the_format_level_converters():
    assert {**families.importers(), **dispatch.FORMAT_CONVERTERS} == CONVERTERS
    assert not set(families.importers()) & set(dispatch.FORMAT_CONVERTERS)
    for ref in dispatch.FORMAT_CONVERTERS.values():
        assert callable(families.resolve(ref))


@pytest.mark.parametrize("row", [r for r in ROWS if r.presets], ids=lambda r: r.name)
def test_every_preset_builds(row):
    """A row's presets are the bench's synthetic models by that name, their configs build and
    their files plan (the layout, not the GB of weights), with the header's family the row's."""
    presets = row.code("presets")
    assert presets
    for s in presets:
        assert synthetic.SPECS[s.name] is s and synthetic.spec_named(s.name) is s
        rows, size = synthetic.planned_layout(s)
        assert rows and size > 0
        if isinstance(s, NinferSyntheticSpec):  # a `.ninfer` model: its closed text config
            config = validate_text_config(s.config_json)
            assert config.num_hidden_layers == s.layers
            assert text_architecture(s.config_json) in row.architectures
            continue
        assert s.config.num_hidden_layers == s.layers
        assert vqf_architecture(2, s.flags) in row.architectures


def test_the_bench_presets_are_the_rows_presets():
    names = [s.name for s in families.presets()]
    assert len(names) == len(set(names))
    assert list(synthetic.SPECS) == names


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_conformance_builder_is_in_the_generator(row):
    """Each builder is one of the corpus generator's sources, under a published corpus version,
    and its case kind is one the built-in adapter answers."""
    sources = generate.sources()
    for b in row.builders:
        source = families.resolve(b.source)
        assert callable(source)
        assert (b.format, b.version, b.kind, source) in sources
        assert (b.format, b.version) in generate.VERSIONS
        assert f"{b.format}-{b.kind}" in adapter.KINDS


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_conformance_builder_says_how_the_adapter_answers_it(row):
    """Each builder's answer resolves to a function of (Backend, case folder), its numerics is a
    profile's, its note (when given) resolves to text, and a canonical kind of a row without a
    fast model has a note (the adapter's `kinds` reply says fast answers it with the reference)."""
    for b in row.builders:
        answer = families.resolve(b.answer)
        assert callable(answer)
        assert list(inspect.signature(answer).parameters) == ["backend", "folder"]
        assert b.numerics in profiles.names()
        if b.note is not None:
            assert isinstance(families.resolve(b.note), str)
        if b.numerics == CANONICAL.name and not row.has_fast:
            assert b.note is not None, f"{b.format}-{b.kind} needs a note for engine fast"
        answered_by, first = adapter.model_kinds()[f"{b.format}-{b.kind}"]
        assert answered_by is row and first.answer == b.answer


def test_every_model_kind_the_adapter_answers_comes_from_a_row():
    """The adapter's kinds are its format-level ones plus the rows' builders' kinds, nothing
    else, in the order conformance/README.md's "Case kinds" table documents them."""
    row_kinds = {f"{b.format}-{b.kind}" for b in families.builders()}
    format_kinds = {kind for kind, _ in adapter.FORMAT_KINDS}
    assert not row_kinds & format_kinds
    assert set(adapter.model_kinds()) == row_kinds
    assert sorted(adapter.KINDS) == sorted(row_kinds | format_kinds)
    readme = (ROOT / "conformance" / "README.md").read_text()
    table = readme.split("## Case kinds", 1)[1].split("\n\n", 3)[2]
    documented = [
        kind
        for line in table.splitlines()[2:]
        for kind in re.findall(r"`([a-z0-9]+-[a-z-]+)`", line.split("|")[1])
    ]
    assert list(adapter.KINDS) == documented


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_a_text_family_is_another_row_of_the_same_container(row):
    """A row's `text_family` (whose models run its text-only workloads, weightfile/bench/engines.py)
    names a row of the same container that runs its own."""
    text = families.text_family_of(row)
    if row.text_family is None:
        assert text is row
    else:
        assert text is not row and text.container == row.container and text.text_family is None


def test_the_generator_sources_are_the_format_level_ones_then_the_rows_builders():
    got = [(f, v, k) for f, v, k, _ in generate.sources()]
    want = [(f, v, k) for f, v, k, _ in generate.FORMAT_SOURCES]
    want += [(b.format, b.version, b.kind) for b in families.builders()]
    assert got == want


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_row_resolves_to_code_or_refuses(row):
    """An implemented row names an importable binder, reference model and trace table (a fast
    model when it has one); a refused row names no code and raises an UnsupportedError."""
    assert row.container in (VQF, NINFER) and row.architectures
    if row.refusal is not None:
        assert all(getattr(row, f) is None for f in CODE_FIELDS) and not row.has_fast
        with pytest.raises(UnsupportedError) as exc:
            row.require_supported()
        assert exc.value.rule == row.refusal.rule
        return
    for field in CODE_FIELDS:
        if field == "fast" and row.fast is None:
            continue
        assert callable(row.code(field)), f"{row.name}.{field} = {getattr(row, field)}"


def test_each_architecture_is_claimed_by_exactly_one_row():
    keys = [(r.container, a) for r in ROWS for a in r.architectures]
    assert len(keys) == len(set(keys))
    for row in ROWS:
        for arch in row.architectures:
            assert lookup(row.container, arch) is row


@pytest.mark.parametrize(
    ("version", "flags", "want"),
    [
        (2, 0, QWEN3),
        (2, int(VQFFlag.VISION), QWEN3_VL),  # a Qwen3-VL file: the tower and its text decoder
        (2, int(VQFFlag.VISION | VQFFlag.MOE), QWEN3_MOE),
        (2, 0x23, QWEN3),
        (2, int(VQFFlag.MOE), QWEN3_MOE),
        (3, 0, QWEN3_MOE),
        (3, 0x223, QWEN3_MOE),
    ],
)
def test_vqf_version_and_flags_pick_the_architecture(version, flags, want):
    assert vqf_architecture(version, flags) == want
    assert (
        lookup(VQF, want).name
        == {QWEN3: "qwen3", QWEN3_MOE: "qwen3_moe", QWEN3_VL: "qwen3_vl"}[want]
    )


def test_qwen3_moe_row_names_its_binder_model_and_trace_table():
    row = lookup(VQF, QWEN3_MOE)
    assert row.refusal is None
    assert row.code("reference").__name__ == "Qwen3MoeModel"
    assert row.code("trace").__module__.endswith("qwen3_moe.trace")


@pytest.mark.parametrize("path", VQF_MODELS, ids=lambda p: p.parent.name)
def test_a_dense_vqf_file_is_the_qwen3_family(path):
    with open_vqf(path) as vqf:
        family = families.vqf_family(vqf)
        assert family.name == "qwen3" and family.has_fast
        model = family.reference_model(vqf)
    assert type(model).__name__ == "Qwen3Model"


def test_every_closed_set_ninfer_architecture_has_a_row():
    """spec/ninfer3.md §qwen35-config closes the architecture set: each one is served."""
    assert set(MODEL_TYPES) == {DENSE_ARCHITECTURE, MOE_ARCHITECTURE}
    for arch in MODEL_TYPES:
        assert lookup(NINFER, arch).name == "qwen35"


@pytest.mark.parametrize("path", NINFER_MODELS, ids=lambda p: p.parent.name)
def test_a_ninfer_text_config_picks_qwen35(path):
    with open_artifact(path) as nf:
        family = families.ninfer_family(nf)
        assert family.name == "qwen35" and family.has_fast
        model = family.reference_model(nf)
    names = family.trace_names(model.config)
    assert names[0] == "embed" and names[-2:] == ["final_norm", "logits"]


def test_an_unknown_architecture_is_a_typed_error_for_each_container():
    with pytest.raises(UnsupportedError) as exc:
        lookup(VQF, "llama")
    assert exc.value.rule == "vqf.bind.unsupported"
    with pytest.raises(InvalidError) as exc:
        lookup(NINFER, "LlamaForCausalLM")
    assert exc.value.rule == "ninfer3.text.architecture"
    with pytest.raises(ValueError, match="unknown container"):
        lookup("gguf", "llama")


def test_an_unknown_ninfer_architecture_reports_what_the_binder_would():
    """The corpus file naming LlamaForCausalLM: the registry rejects it with the rule the case
    expects, before any binding."""
    path = CORPUS / "ninfer3" / "v1" / "model" / "qwen35" / "reject-text-architecture"
    with open_artifact(path / "model.ninfer") as nf, pytest.raises(InvalidError) as exc:
        families.ninfer_family(nf)
    assert exc.value.rule == "ninfer3.text.architecture"
    assert exc.value.path == "components.text.config.architectures"


@pytest.mark.parametrize("config", [None, [], {}, {"architectures": "Qwen3_5ForCausalLM"}])
def test_a_config_without_a_readable_architecture_is_validated_not_guessed(config):
    nf = SimpleNamespace(component=lambda _: SimpleNamespace(config=config))
    with pytest.raises(InvalidError) as exc:
        families.ninfer_family(nf)
    assert exc.value.rule.startswith("ninfer3.text.")


#: Modules that load models: they must get them from the registry, never import a family.
CALLERS = (
    "weightfile/frontend/dispatch.py",
    "weightfile/frontend/session.py",
    "weightfile/frontend/ninfer_session.py",
    "weightfile/bench/engines.py",
    "weightfile/families/qwen3/conformance.py",
    "weightfile/families/qwen35/conformance.py",
    "conformance/adapter.py",
)
#: Where a family's models and binders live.
FAMILY_CODE = (
    "weightfile.ref.qwen3.decoder",
    "weightfile.ref.qwen35.model",
    "weightfile.ref.qwen35.bind",
    "weightfile.fast.qwen3",
)


@pytest.mark.parametrize("path", CALLERS)
def test_model_loaders_ask_the_registry(path):
    tree = ast.parse((ROOT / path).read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module
            names = {a.name for a in node.names}
            if module in FAMILY_CODE or module.startswith("weightfile.fast.qwen3."):
                bad.append(module)
            elif module == "weightfile.ref.qwen3.bind_vqf" and "bind_vqf" in names:
                bad.append(f"{module}.bind_vqf")
    assert not bad, f"{path} imports {bad}; use weightfile.families"
