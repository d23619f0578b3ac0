"""`get_slice` on `.ninfer` objects and bindings decodes only the rows asked for, and they are
bit for bit the rows of a full decode (spec/ninfer3.md §binding, §row-split, §row-scale).

The files are written by hand (`build_file_set`), the payloads by the codecs' own encoders; the
oracle is `decode` of the whole object or binding, cut with NumPy.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies.ninfer3 import TINY_PAYLOAD, build_file_set, tiny_doc

import weightfile
from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.model_file import NInferModelFile

#: (format, layout) pairs with a value encoder, one per row-addressable layout.
PAIRS = [
    ("bf16", "contiguous_le_v1"),
    ("fp32", "contiguous_le_v1"),
    ("q4_g64_fp16", "row_split_k128_v1"),
    ("q8_g32_fp16", "row_split_k128_v1"),
    ("fp8_e4m3fn_row_bf16", "row_scale_v1"),
]


def write(folder: Path, objects: list[tuple[str, str, tuple[int, int], np.ndarray]],
          bindings: dict[str, Any]) -> Path:  # fmt: skip
    """A single-file set holding `objects` (id, format, layout via PAIRS, values) 256-aligned
    after the tiny file's resource, and `bindings`."""
    doc = tiny_doc()
    payload = bytearray(TINY_PAYLOAD[260:265])  # "hello" at 0: the component's resource
    descriptors = [{"id": "r.hello", "kind": "resource", "encoding": "raw_bytes_v1",
                    "offset": 0, "bytes": 5}]  # fmt: skip
    for oid, fmt, shape, values in objects:
        layout = dict(PAIRS)[fmt]
        data = get_codec(fmt, layout).encode(values, shape)
        offset = -(-len(payload) // 256) * 256
        payload += bytes(offset - len(payload)) + data
        descriptors.append({"id": oid, "kind": "tensor", "shape": list(shape), "format": fmt,
                            "layout": layout, "offset": offset, "bytes": len(data)})  # fmt: skip
    doc["objects"] = descriptors
    doc["bindings"] = bindings
    doc["uses"] = []
    doc["files"] = [{"path": None, "payload_bytes": len(payload)}]
    return build_file_set(folder, "slice.ninfer", doc, bytes(payload))[0]


@st.composite
def sliced_files(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """1-3 objects (one common row width, sometimes one other) and a binding of 1-5 parts:
    whole-row ranges, or element ranges that cut rows (the binding then joins as a flat run)."""
    k = draw(st.sampled_from([4, 64, 130]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    objects = []
    for i in range(draw(st.integers(1, 3))):
        fmt = draw(st.sampled_from([f for f, _ in PAIRS]))
        width = draw(st.sampled_from([k, k, k, 8]))
        shape = (draw(st.integers(1, 5)), width)
        values = (rng.standard_normal(shape) * 4).astype(np.float32)
        objects.append((f"w.{i}", fmt, shape, values))
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        oid, _, (n, width), _ = draw(st.sampled_from(objects))
        if draw(st.booleans()):  # whole rows
            r0 = draw(st.integers(0, n - 1))
            r1 = draw(st.integers(r0 + 1, n))
            parts.append({"object": oid, "range": [r0 * width, r1 * width]})
        else:  # any element range: rows cut at either end
            e0 = draw(st.integers(0, n * width - 1))
            e1 = draw(st.integers(e0 + 1, n * width))
            parts.append({"object": oid, "range": [e0, e1]})
    bindings = {"p.parts": {"parts": parts}, "p.whole": {"object": objects[0][0]}}
    return objects, bindings


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sliced_files(), engine=st.sampled_from(["ref", "fast"]), cut=st.data())
def test_slices_are_the_rows_of_a_full_decode(case, engine, cut):
    objects, bindings = case
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), objects, bindings)
        with weightfile.open(path) as f:
            for name in [*bindings, *(o[0] for o in objects)]:
                full, view = f.decode(name, engine=engine), f.get_slice(name)
                assert view.shape == full.shape, name
                n = full.shape[0]
                a = cut.draw(st.integers(0, n - 1), label=f"{name} start")
                b = cut.draw(st.integers(a + 1, n), label=f"{name} stop")
                got = view.__getitem__(slice(a, b), engine=engine)
                assert got.dtype == full.dtype and got.shape == full[a:b].shape, name
                assert np.array_equal(bits(got), bits(full[a:b])), f"{name}[{a}:{b}]"


def test_a_slice_never_decodes_a_whole_object(tmp_path, monkeypatch):
    """Rows of a row-split, a row-scale and a contiguous object, and a binding that cuts rows
    of them, come from those rows' bytes: the whole-object decode is never called."""
    rng = np.random.default_rng(7)
    objects = [
        ("w.q4", "q4_g64_fp16", (6, 130), rng.standard_normal((6, 130)).astype(np.float32)),
        ("w.f8", "fp8_e4m3fn_row_bf16", (6, 130), rng.standard_normal((6, 130)).astype(np.float32)),
        ("w.bf", "bf16", (6, 130), rng.standard_normal((6, 130)).astype(np.float32)),
    ]
    parts = [{"object": "w.q4", "range": [200, 400]}, {"object": "w.f8", "range": [0, 390]},
             {"object": "w.bf", "range": [650, 780]}]  # fmt: skip
    path = write(tmp_path, objects, {"p.cut": {"parts": parts}})
    with weightfile.open(path) as f:
        want = {name: f.decode(name) for name in ("w.q4", "w.f8", "w.bf", "p.cut")}
        whole: list[str] = []
        original = NInferModelFile._object

        def counting(self: NInferModelFile, oid: str, engine: str, words: bool) -> Any:
            whole.append(oid)
            return original(self, oid, engine, words)

        monkeypatch.setattr(NInferModelFile, "_object", counting)
        for name in ("w.q4", "w.f8", "w.bf"):
            np.testing.assert_array_equal(f.get_slice(name)[2:4], want[name][2:4])
        np.testing.assert_array_equal(f.get_slice("p.cut")[100:500], want["p.cut"][100:500])
        assert f.get_slice("p.cut").shape == (720,)  # a flat run: the cuts are not whole rows
    assert whole == []


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_the_shape_of_a_binding_comes_from_the_directory(tmp_path, monkeypatch, engine):
    values = np.arange(24, dtype=np.float32).reshape(4, 6)
    parts = [{"object": "w.0", "range": [12, 24]}, {"object": "w.0", "range": [0, 6]}]
    path = write(tmp_path, [("w.0", "bf16", (4, 6), values)], {"p.rows": {"parts": parts}})
    with weightfile.open(path) as f:
        monkeypatch.setattr(NInferModelFile, "decode", None)  # shape must not decode
        view = f.get_slice("p.rows")
        assert view.shape == (3, 6)
        np.testing.assert_array_equal(view.__getitem__(slice(1, 3), engine=engine), values[[3, 0]])
