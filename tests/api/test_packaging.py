"""Packaging metadata (issue 15 item 7), read from pyproject.toml with the standard library:
the SPDX licence, the classifiers, the spec documents shipped as package data, and no global
warning filter (numpy RuntimeWarnings are silenced only where a test expects them)."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_expression_and_the_classifiers_say_typed():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639
    assert {"Typing :: Typed", "Programming Language :: Python :: 3 :: Only"} <= set(
        project["classifiers"]
    )


def test_every_spec_document_ships_in_the_wheel():
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    docs = sorted(p.name for p in (ROOT / "spec").glob("*.md"))
    assert {"vqf.md", "ninfer3.md", "models.md", "numerics.md"} <= set(docs)
    for doc in docs:
        assert any(fnmatch.fnmatch(doc, pattern) for pattern in data["weightfile.spec"]), doc
    assert "py.typed" in data["weightfile"]


def test_no_warning_filter_is_global():
    options = PYPROJECT["tool"]["pytest"]["ini_options"]
    assert not options.get("filterwarnings"), "filter warnings in the test that expects them"


def test_the_public_api_is_fully_annotated():
    """py.typed promises hints: every parameter and return of every public function and method
    of `weightfile` (and of the slice `get_slice` returns) is annotated."""
    import inspect

    import weightfile
    from weightfile.model_file import TensorSlice

    dunders = {"__init__", "__getitem__", "__contains__", "__iter__", "__len__", "__enter__"}
    missing = []

    def check(qual: str, fn: object) -> None:
        sig = inspect.signature(fn)  # type: ignore[arg-type]
        missing.extend(
            f"{qual}({p.name})"
            for p in sig.parameters.values()
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty
        )
        if sig.return_annotation is inspect.Signature.empty and not qual.endswith("__init__"):
            missing.append(f"{qual} -> ?")

    objects = {n: getattr(weightfile, n) for n in weightfile.__all__} | {"TensorSlice": TensorSlice}
    for name, obj in objects.items():
        if inspect.isfunction(obj):
            check(name, obj)
        elif inspect.isclass(obj) and obj.__module__.startswith("weightfile"):
            for attr, fn in vars(obj).items():
                if inspect.isfunction(fn) and (not attr.startswith("_") or attr in dunders):
                    check(f"{name}.{attr}", fn)
    assert missing == []
