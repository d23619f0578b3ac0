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
