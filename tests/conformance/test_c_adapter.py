"""The C adapter (conformance/adapters/c/conform.c), written from the README and the specs
alone, passes every case of the kinds and levels it declares when run through
`weightfile conformance run --impl`."""

from __future__ import annotations

import copy
import json
import random
import shutil
import subprocess

import pytest

from weightfile.cli import main
from weightfile.conformance.adapter import answer
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.ninfer3_files import (
    sharded_doc,
    sharded_set,
    tiny_doc,
    tiny_set,
    write_set,
)
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
    assert json.loads(out) == {
        "kinds": KINDS,
        "unsupported": {"vqf-protected": "no SM4, SM3 or SM2 in this adapter"},
    }


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
    protected = [r for r in doc["results"] if r["case"].startswith("vqf/v2/")]
    assert len(protected) == 10 and all(r["skipped"] for r in protected)
    assert all("no SM4, SM3 or SM2" in r["reason"] for r in protected)


#: Values a directory mutation may write anywhere: every JSON type and the domain edges.
EDGE_VALUES = [None, True, 0, 1, -1, 2**64, 2**64 - 1, 1.5, 256.0, "", "x", "w.bf16", "r.hello",
               "text", [], [0], [1, 2], {}, {"object": "w.bf16"}, "A16Only", "\u0000", [0, 4],
               [2**63, 1]]  # fmt: skip


def _mutate(doc: dict, rng) -> None:
    """Replace, drop or add one member somewhere in the directory."""

    def places(node, prefix=()):
        yield prefix
        children = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else ()
        )
        for k, v in children:
            yield from places(v, (*prefix, k))

    where = rng.choice(list(places(doc))[1:])
    parent = doc
    for k in where[:-1]:
        parent = parent[k]
    roll = rng.random()
    if roll < 0.6:
        parent[where[-1]] = copy.deepcopy(rng.choice(EDGE_VALUES))
    elif isinstance(parent, dict) and roll < 0.8:
        parent.pop(where[-1])
    elif isinstance(parent, dict):
        key = rng.choice(["extra", "id", "kind", "target", "proposal", "rows"])
        parent[key] = copy.deepcopy(rng.choice(EDGE_VALUES))
    else:
        parent.append(copy.deepcopy(parent[where[-1]]))


def test_the_c_adapter_agrees_with_the_reference_on_mutated_directories(adapter, tmp_path):
    """Beyond the corpus: seeded one- and two-fault directory edits of the spec/ninfer3.md
    §framing-numbers files give the same rule (or the same description) from C as from the
    reference."""

    def outcome(status: int, out: str, err: str) -> object:
        return (
            tuple(err.split(": ")[:2]) if status == 1 else json.loads(out) if status == 0 else err
        )

    rng = random.Random(11)
    seen = set()
    for i in range(150):
        folder = tmp_path / str(i)
        folder.mkdir()
        sharded = rng.random() < 0.3
        doc = sharded_doc() if sharded else tiny_doc()
        for _ in range(rng.randint(1, 2)):
            _mutate(doc, rng)
        if sharded:
            names = ("weights-second.bin", "optional.bin")
            write_set(folder, sharded_set(doc, sizes=(500, 780, 64), names=names))
        else:
            write_set(folder, tiny_set(doc, sizes=(265,), names=()))
        entry = str(folder / "model.ninfer")
        ref = answer("ninfer3-container", entry, "ref")
        c = subprocess.run([adapter, "ninfer3-container", entry], capture_output=True, text=True)
        want = outcome(ref.status, ref.stdout, ref.stderr)
        assert outcome(c.returncode, c.stdout, c.stderr) == want, json.dumps(doc)[:400]
        seen.add(want if isinstance(want, tuple) else "accept")
    assert len(seen) >= 15  # the edits reach many different rules
