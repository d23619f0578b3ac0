"""Imports point one way: ref/ and fast/ import spec/, fast/ may import ref/, never the reverse;
conversion from Hugging Face checkpoints (weightfile/convert/) and the model families' folders
(weightfile/families/: converters, presets, conformance builders) are API-side, so neither the
oracle nor the fast path may import them."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API_SIDE = ("weightfile.conformance", "weightfile.cli", "weightfile.convert", "weightfile.families")
FORBIDDEN = {
    "spec": ("weightfile.ref", "weightfile.fast", *API_SIDE),
    "ref": ("weightfile.fast", *API_SIDE),
    "fast": API_SIDE,
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_one_way(layer):
    bad = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        for name in imported_modules(path):
            if name.startswith(FORBIDDEN[layer]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, bad


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
