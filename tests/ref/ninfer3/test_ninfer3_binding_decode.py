"""`weightfile.open` on `.ninfer` bindings of parts (spec/ninfer3.md §binding), and on a closed set.

Regression tests of issue 14: parts that mix a cut row with whole rows, or parents of different
row shapes or formats, are valid bindings (verify says so) and their values decode as
spec/ninfer3.md §binding defines them: the parts' elements in C order. Only their stored words do
not exist, and asking for them is our typed error. A binding of many parts decodes each parent
once, and a read after close() is our `ClosedError`, not an assertion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from strategies.ninfer3 import build_file_set, raises_rule, tiny_doc

import weightfile
from weightfile.model_file import NInferModelFile
from weightfile.spec.errors import ClosedError, UnsupportedError

ENGINES = ["ref", "fast"]
A = np.arange(1, 9, dtype=np.float32).reshape(2, 4)  # bf16 [2, 4]: exact in bf16
B = np.arange(10, 16, dtype=np.float32).reshape(3, 2)  # bf16 [3, 2]
C = np.arange(20, 28, dtype=np.float32).reshape(2, 4)  # fp32 [2, 4]


def _bf16(values: np.ndarray) -> bytes:
    return (values.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()


def _part(object_id: str, begin: int, end: int) -> dict[str, Any]:
    return {"object": object_id, "range": [begin, end]}


def _tensor(oid: str, shape: list[int], fmt: str, offset: int, size: int) -> dict[str, Any]:
    return {"id": oid, "kind": "tensor", "shape": shape, "format": fmt} | {
        "layout": "contiguous_le_v1",
        "offset": offset,
        "bytes": size,
    }


@pytest.fixture
def parts_file(tmp_path: Path) -> Path:
    """Three small tensors and one binding of each kind spec/ninfer3.md §binding allows and the
    decoder once broke."""
    doc = tiny_doc()
    doc["objects"] = [
        _tensor("w.a", [2, 4], "bf16", 0, 16),
        _tensor("w.b", [3, 2], "bf16", 256, 12),
        _tensor("w.c", [2, 4], "fp32", 512, 32),
        {"id": "r.hello", "kind": "resource", "encoding": "raw_bytes_v1"}
        | {"offset": 544, "bytes": 5},
    ]
    doc["files"] = [{"path": None, "payload_bytes": 549}]
    doc["uses"] = []
    doc["bindings"] = {
        "p.a": {"object": "w.a"},
        "p.cut": {"parts": [_part("w.a", 0, 4), _part("w.a", 5, 7)]},  # a row, then a cut
        "p.widths": {"parts": [_part("w.a", 0, 4), _part("w.b", 0, 2)]},  # rows of 4, then of 2
        "p.formats": {"parts": [_part("w.a", 0, 8), _part("w.c", 0, 8)]},  # bf16 rows, fp32 rows
        "p.rows": {"parts": [_part("w.a", 4, 8), _part("w.a", 0, 4)]},  # whole rows, reordered
        # one part per element, in reverse: 8 parts, one parent
        "p.many": {"parts": [_part("w.a", i, i + 1) for i in reversed(range(8))]},
    }
    payload = bytearray(549)
    payload[0:16] = _bf16(A)
    payload[256:268] = _bf16(B)
    payload[512:544] = C.astype("<f4").tobytes()
    payload[544:549] = b"hello"
    return build_file_set(tmp_path, "parts.ninfer", doc, bytes(payload))[0]


def test_mixed_parts_are_valid_bindings(parts_file: Path) -> None:
    """spec/ninfer3.md §binding: parts may split, reshape and reorder; nothing here breaks a
    rule."""
    assert weightfile.validate(parts_file) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_mixed_parts_decode_to_their_elements_in_order(parts_file: Path, engine: str) -> None:
    """The values spec/ninfer3.md §binding defines; most of these raised numpy's ValueError in
    np.concatenate."""
    want = {
        "p.cut": np.concatenate([A.ravel()[0:4], A.ravel()[5:7]]),
        "p.widths": np.concatenate([A.ravel()[0:4], B.ravel()[0:2]]),
        "p.formats": np.concatenate([A, C]),  # whole rows of one row shape still join as rows
        "p.rows": A[::-1],
        "p.many": A.ravel()[::-1],
    }
    with weightfile.open(parts_file) as f:
        for name, values in want.items():
            got = f.decode(name, engine=engine)
            assert got.shape == values.shape, name
            np.testing.assert_array_equal(got, values, err_msg=name)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["p.cut", "p.widths", "p.formats", "p.many"])
def test_words_of_mixed_parts_are_a_typed_error(parts_file: Path, engine: str, name: str) -> None:
    """Scales belong to a row's groups and each encoding has its own words: there is no common
    word set to return (spec/ninfer3.md §binding, §layout-registry)."""
    words = raises_rule(UnsupportedError, "ninfer3.range.words")
    with weightfile.open(parts_file) as f, words as info:
        f.decode_words(name, engine=engine)
    assert info.value.path == f'bindings["{name}"]'


@pytest.mark.parametrize("engine", ENGINES)
def test_words_of_whole_rows_of_one_encoding_still_join(parts_file: Path, engine: str) -> None:
    with weightfile.open(parts_file) as f:
        whole = f.decode_words("p.a", engine=engine)
        rows = f.decode_words("p.rows", engine=engine)
    assert rows.keys() == whole.keys()
    for k, v in whole.items():
        np.testing.assert_array_equal(rows[k], v[::-1])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("words", [False, True])
def test_each_parent_is_decoded_once_per_binding_decode(
    parts_file: Path, engine: str, words: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: a binding of n parts decoded its parent n times (50,000 parts: 217 s). The test
    counts object decodes, not time."""
    calls: list[str] = []
    original = NInferModelFile._object

    def counting(self: NInferModelFile, object_id: str, engine: str, words: bool) -> Any:
        calls.append(object_id)
        return original(self, object_id, engine, words)

    monkeypatch.setattr(NInferModelFile, "_object", counting)
    with weightfile.open(parts_file) as f:
        name = "p.rows" if words else "p.many"  # 2 and 8 parts of the one parent w.a
        (f.decode_words if words else f.decode)(name, engine=engine)
        assert calls == ["w.a"]
        calls.clear()
        f.decode("p.formats", engine=engine)  # two parents: one decode each
        assert sorted(calls) == ["w.a", "w.c"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_read_after_close_is_a_closed_error(parts_file: Path, engine: str) -> None:
    """The maps are gone after close(); a read says so (it raised AssertionError, or reopened
    the entry as if it were a continuation volume)."""
    with weightfile.open(parts_file) as f:
        pass
    for name in ("w.a", "p.many"):
        with raises_rule(ClosedError, "ninfer3.range.closed") as info:
            f.decode(name, engine=engine)
        assert isinstance(info.value, ValueError) and info.value.path == "files[0]"
