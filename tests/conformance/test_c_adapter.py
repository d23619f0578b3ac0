"""The C adapter (conformance/adapters/c/conform.c), written from the README and the specs
alone, passes every case of the kinds and levels it declares when run through
`weightfile conformance run --impl`."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from weightfile.cli import main
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import case_ids

SOURCE = CORPUS_DIR.parent / "adapters" / "c" / "conform.c"
KINDS = ["vqf-container:loader", "ninfer3-container"]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("c") / "conform"
    flags = ["-O2", "-ffp-contract=off", "-std=c11", "-Wall", "-Wextra", "-Werror"]
    subprocess.run([cc, *flags, "-o", str(exe), str(SOURCE)], check=True)
    return str(exe)


def test_the_c_adapter_declares_its_kinds(adapter: str) -> None:
    out = subprocess.run([adapter, "kinds"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"kinds": KINDS}


def in_level(case: dict) -> bool:
    if case["kind"] != "container":
        return False
    if case["format"] == "ninfer3":
        return True
    return case["expect"] == "accept" or case["origin"] == "loader"


def test_the_c_adapter_passes_every_case_it_claims(adapter: str, capsys) -> None:
    status = main(["conformance", "run", "--impl", adapter, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert status == 0, [r for r in doc["results"] if not r["passed"] and not r["skipped"]]
    cases = [json.loads((CORPUS_DIR / c / "case.json").read_text()) for c in case_ids()]
    claimed = sorted(c["id"] for c in cases if in_level(c))
    assert doc["failed"] == 0 and doc["passed"] == len(claimed) >= 78
    assert sorted(r["case"] for r in doc["results"] if r["passed"]) == claimed
