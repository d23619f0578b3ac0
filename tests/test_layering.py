"""Imports point one way, by an allowlist: spec/ <- ref/ <- fast/ <- the API side of weightfile/.

Every Python module of the tree belongs to one layer (`LAYER_OF`, longest prefix wins), and each
layer may import only the layers `ALLOWED` names for it (and itself); any other edge fails. An edge
is every import the module can make: module-level and function-level `import` / `from` (relative
ones resolved), and every string constant naming a module of the tree — an `import_module(...)`
target or a "module:attribute" reference such as the family registry's — so no edge hides in a
string. A module name built at run time (an f-string starting "weightfile.") fails outright: the
test could not see where it leads. The choice between the reference and the fast codecs is a
`Backend` value a caller passes (ref/backend.py), not an edge, so ref/ never imports fast/.

Adding a layer (a new `weightfile/<package>` or top-level module): one row in `LAYER_OF`, one in
`ALLOWED`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The folders of the tree and the package each imports as (setup.py's PACKAGE_ROOTS).
FOLDERS = {
    "spec": "weightfile.spec",
    "ref": "weightfile.ref",
    "fast": "weightfile.fast",
    "conformance": "weightfile.conformance",
    "weightfile": "weightfile",
}
#: Module (or package) prefix -> its layer; the longest matching prefix wins, and every folder
#: below `weightfile.families` but its registry is the layer "families" (`layer_of`).
LAYER_OF = {
    "weightfile.spec": "spec",  # declarative: records, registries, rules
    "weightfile.ref": "ref",  # the readable oracle
    "weightfile.fast": "fast",  # vectorised twins of ref, bit for bit
    "weightfile.backends": "backends",  # the engine names -> REFERENCE / FAST
    "weightfile.formats": "support",  # small API-side helpers any layer above fast may use
    "weightfile.progress": "support",
    "weightfile._table": "support",
    "weightfile.cpus": "support",
    "weightfile.dumps": "support",  # reading and comparing array dumps (weightfile diff)
    "weightfile.frontend": "frontend",  # tokenizers, chat templates, images, resources
    "weightfile.frontend.session": "sessions",  # run sessions: family x profile x backend
    "weightfile.frontend.dispatch": "sessions",
    "weightfile.frontend.ninfer_session": "sessions",
    "weightfile.frontend.board_session": "sessions",
    "weightfile.frontend.speculative": "sessions",  # run --spec mtp on a session
    "weightfile.frontend.image": "sessions",  # pixels in, an image prompt attached to a session
    "weightfile.convert": "convert",  # what converters share: checkpoints, plans, options
    "weightfile.convert.dispatch": "conversion",  # convert SRC DST: the rows' importers
    "weightfile.convert.vqf_gguf": "conversion",  # VQF -> GGUF, dense and MoE
    "weightfile.conformance": "conformance",  # the corpus generator and the protocol adapter
    "weightfile.conformance.case_types": "case_types",  # what a family's builders produce
    "weightfile.conformance.seeded": "case_types",
    "weightfile.conformance.sections": "case_types",
    "weightfile.bench": "bench",
    "weightfile.bench.synthetic_spec": "bench_presets",  # the preset type a family's row names
    "weightfile.families": "registry",  # the family registry; its folders: "families"
    "weightfile.profiles": "registry",  # the numerics-profile registry (models per family)
    "weightfile.examples": "examples",  # bundled and demo models, built through the families
    "weightfile.demo": "examples",
    "weightfile": "api",  # weightfile.open, validate, write_vqf, ... (weightfile/__init__.py)
    "weightfile.model_file": "api",
    "weightfile.commands": "commands",  # one module per CLI command
    "weightfile.cli": "cli",
    "weightfile.__main__": "cli",
}
#: The registry module of `weightfile.families`; its sibling packages are the family folders.
FAMILY_REGISTRY = ("weightfile.families", "weightfile.families.registry")
BELOW_API = {"spec", "ref", "fast"}
BASE = BELOW_API | {"backends", "support"}
#: Layer -> the other layers it may import.
ALLOWED: dict[str, set[str]] = {
    "spec": set(),
    "ref": {"spec"},
    "fast": {"spec", "ref"},
    "backends": BELOW_API,
    "support": BELOW_API,
    "frontend": BASE,
    "convert": BASE | {"frontend"},
    "case_types": BASE,
    "bench_presets": BASE,
    # a family folder: its converters, name maps, presets and conformance builders
    "families": BASE | {"frontend", "convert", "case_types", "bench_presets"},
    # the registries name each family's code by "module:attribute" strings, resolved when a
    # row is used; the conformance builders among them load their files through the registry
    # as any caller does, so registry <-> family_cases is the one two-way pair (by a string
    # one way; tests/test_import_cycles.py still forbids an import cycle)
    "registry": BASE | {"families", "family_cases"},
    # a family's conformance builders (its conformance*.py modules)
    "family_cases": BASE
    | {"frontend", "convert", "case_types", "families", "registry", "sessions"},
    "sessions": BASE | {"frontend", "registry"},
    "conversion": BASE | {"frontend", "convert", "families", "registry"},
    "examples": BASE | {"frontend", "convert", "families", "registry", "conversion"},
    "api": BASE,
    "bench": BASE | {"frontend", "families", "registry", "sessions", "examples", "bench_presets"},
    "conformance": BASE
    | {"frontend", "convert", "case_types", "families", "registry", "sessions", "conversion"}
    | {"examples", "family_cases"},
    "commands": BASE
    | {"frontend", "convert", "case_types", "families", "registry", "sessions", "conversion"}
    | {"examples", "api", "bench", "bench_presets", "conformance", "family_cases"},
    "cli": {"spec", "support", "commands"},
}
#: A string constant that is a module of the tree, optionally ":attribute".
MODULE_STRING = re.compile(r"(weightfile(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_][\w.]*)?")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT)
    parts = [FOLDERS[rel.parts[0]], *rel.parts[1:]]
    parts[-1] = parts[-1].removesuffix(".py")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_file(name: str) -> Path | None:
    """The file of a module or package of the tree, or None."""
    for folder, package in sorted(FOLDERS.items(), key=lambda kv: -len(kv[1])):
        if name == package or name.startswith(package + "."):
            rest = name[len(package) :].lstrip(".").split(".") if name != package else []
            base = ROOT / folder / Path(*rest) if rest else ROOT / folder
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate
            return None
    return None


def layer_of(name: str) -> str | None:
    if name.startswith("weightfile.families.") and not name.startswith(FAMILY_REGISTRY[1]):
        leaf = name.rsplit(".", 1)[-1]
        return "family_cases" if "conformance" in leaf else "families"
    best = max(
        (p for p in LAYER_OF if name == p or name.startswith(p + ".")), key=len, default=None
    )
    return None if best is None else LAYER_OF[best]


def edges(source: str, name: str, is_package: bool) -> Iterator[str]:
    """Every module `source` (the module `name`) may import, and "?<text>" for a module name
    computed at run time."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = [node.module or ""]
            else:
                base = [
                    *here[: len(here) - node.level + 1],
                    *([node.module] if node.module else []),
                ]
            module = ".".join(base)
            # `from pkg import submodule` reaches the submodule; pkg itself only for its names
            subs = [f"{module}.{a.name}" for a in node.names]
            found = [sub for sub in subs if module_file(sub) is not None]
            yield from found
            if len(found) < len(subs):
                yield module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = MODULE_STRING.fullmatch(node.value)
            if match and module_file(match.group(1)) is not None:
                yield match.group(1)
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and str(head.value).startswith("weightfile."):
                yield f"?{head.value}"


def tree_modules() -> Iterator[tuple[Path, str]]:
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path, module_name(path)


def test_every_module_has_a_layer_and_every_layer_a_row():
    unplaced = [name for _, name in tree_modules() if layer_of(name) is None]
    assert not unplaced, f"add these to LAYER_OF: {unplaced}"
    assert set(LAYER_OF.values()) | {"families", "family_cases"} == set(ALLOWED)
    assert all(allowed <= set(ALLOWED) for allowed in ALLOWED.values())


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_what_it_may(layer):
    bad = []
    for path, name in tree_modules():
        if layer_of(name) != layer:
            continue
        for target in edges(path.read_text(), name, path.name == "__init__.py"):
            rel = path.relative_to(ROOT)
            if target.startswith("?"):
                bad.append(f"{rel} computes a module name {target[1:]!r}…: pass the value")
                continue
            to = layer_of(target)
            if to is not None and to != layer and to not in ALLOWED[layer]:
                bad.append(f"{rel} ({layer}) imports {target} ({to})")
    assert not bad, "\n".join(bad)


def test_the_edge_finder_sees_hidden_edges():
    """Function-level and relative imports, import_module targets, "module:attribute" strings
    and computed names are all edges (the allowlist is only as good as what it sees)."""
    source = """
from . import encode
from ..codecs import vqf


def late():
    from weightfile.fast.backend import FAST
    import_module("weightfile.fast.codecs.vqf")
    return "weightfile.fast.qwen3.decoder:FastModel", f"weightfile.{engine}.codecs"
"""
    found = set(edges(source, "weightfile.ref.vqf.write", is_package=False))
    assert {
        "weightfile.ref.vqf.encode",
        "weightfile.ref.codecs.vqf",
        "weightfile.fast.backend",
        "weightfile.fast.codecs.vqf",
        "weightfile.fast.qwen3.decoder",
        "?weightfile.",
    } <= found
    assert "weightfile.fast.qwen3.decoder:FastModel" not in found


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_spec_does_no_io():
    """spec/ is declarative: no open(), no os/pathlib/mmap imports."""
    bad = []
    for path in sorted((ROOT / "spec").rglob("*.py")):
        mods = imported_modules(path)
        if mods & {"os", "pathlib", "mmap", "io", "shutil"}:
            bad.append(f"{path.relative_to(ROOT)} imports {mods & {'os', 'pathlib', 'mmap'}}")
        if "open(" in path.read_text():
            bad.append(f"{path.relative_to(ROOT)} calls open()")
    assert not bad, bad
