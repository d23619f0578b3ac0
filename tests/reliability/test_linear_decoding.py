"""Decoding cost is linear in the parts of a binding (spec/ninfer3.md §binding).

Issue 14: one binding of 50,000 one-element parts took 217 s, because every part decoded the whole
parent again. tests/ref/ninfer3/test_ninfer3_binding_decode.py counts decodes on 8 parts; this
extends it to thousands of parts and to the deferred object checks, counting work, not time
(benchmarks/bench_scale.py has the times).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import weightfile
from weightfile.model_file import NInferModelFile
from weightfile.ref.ninfer3 import read as ninfer_read
from weightfile.ref.ninfer3.plan import TensorSpec
from weightfile.ref.ninfer3.write import write_artifact

PARTS = 3000


@pytest.fixture(scope="module")
def many_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    values = np.arange(PARTS, dtype=np.float32)
    words = (values.view("<u4") >> 16).astype("<u2")  # bf16 truncation of the values
    parts = [{"object": "w", "range": [i, i + 1]} for i in reversed(range(PARTS))]
    path = tmp_path_factory.mktemp("scale") / "parts.ninfer"
    write_artifact(
        path,
        {"w": words.tobytes()},
        objects=[TensorSpec("w", (PARTS,), "bf16", "contiguous_le_v1")],
        components={"text": {"config": {}}},
        bindings={"p": {"parts": parts}},
    )
    return path


@pytest.mark.parametrize("engine", ["fast", "ref"])
def test_a_binding_of_thousands_of_parts_decodes_its_parent_once(
    many_parts: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    decodes: list[str] = []
    checks: list[str] = []
    original_object = NInferModelFile._object
    original_check = ninfer_read.check_object

    def counting_object(self: NInferModelFile, object_id: str, engine: str, words: bool) -> Any:
        decodes.append(object_id)
        return original_object(self, object_id, engine, words)

    def counting_check(entry: Any) -> None:
        checks.append(entry.id)
        original_check(entry)

    monkeypatch.setattr(NInferModelFile, "_object", counting_object)
    monkeypatch.setattr(ninfer_read, "check_object", counting_check)
    with weightfile.open(many_parts) as f:
        got = f.decode("p", engine=engine)
        whole = f.decode("w", engine=engine)
    assert decodes == ["w", "w"]  # once for the binding's 3,000 parts, once asked for itself
    assert len(checks) <= 6  # a few per decode, none per part
    assert np.array_equal(got, whole[::-1])
