"""Issue 15, the Python API: version, typing marker, the opened files as read-only mappings,
metadata, writing from float arrays, refusals with our errors, and the umask."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import numpy as np
import pytest

import weightfile
from weightfile.examples import EXAMPLE_PATH, TINY_ARCH, TINY_FLAGS
from weightfile.spec.errors import InvalidError, NotFoundError


def test_version_is_the_installed_distribution():
    assert weightfile.__version__ == importlib.metadata.version("weightfile")


def test_py_typed_marks_the_package_typed():
    assert (Path(weightfile.__file__).parent / "py.typed").is_file()


def test_qtype_and_flags_are_reexported():
    # values from spec/vqf.md §flags (flags) and spec/vqf.md §qtype-codes (qtype ids), not the enums
    assert int(weightfile.QType.Q4_0) == 3 and int(weightfile.QType.F16) == 5
    assert int(weightfile.VQFFlag.ENC) == 0x80 and int(weightfile.VQFFlag.EMB_F16) == 0x20


def test_an_opened_file_is_a_read_only_mapping():
    with weightfile.open_vqf(EXAMPLE_PATH) as vqf:
        directory = [e.name for e in vqf.entries]
    with weightfile.open(EXAMPLE_PATH) as f:
        assert f.keys() == directory == list(f)
        assert len(f) == len(directory) == 14  # the q4 inventory of spec/vqf.md §text-tensors, 2
        # layers
        assert "q4_q" in f and "nope" not in f and 3 not in f
        np.testing.assert_array_equal(f["attn_norm"], f.decode("attn_norm"))
        assert f.get("nope") is None and f.get("nope", 7) == 7
        with pytest.raises(LookupError) as exc:  # NotFoundError is a LookupError
            f["nope"]
        assert isinstance(exc.value, NotFoundError) and exc.value.rule == "vqf.directory.name"
        assert dict(f.items()).keys() == set(directory)
        text = repr(f)
        assert str(EXAMPLE_PATH) in text and "14 names" in text and "vqf" in text
    assert "closed" in repr(f)


def test_metadata_is_the_header():
    with weightfile.open(EXAMPLE_PATH) as f:
        meta = f.metadata()
    assert meta["format"] == "vqf" and meta["version"] == 2 and meta["layout"] == "current"
    assert meta["flags"] == 0x23 and meta["flag_names"] == ["Q8_8X8", "Q4_4X4", "EMB_F16"]
    stored = {**TINY_ARCH, "norm_eps": float(np.float32(TINY_ARCH["norm_eps"]))}  # an f32 field
    assert {k: meta["arch"][k] for k in TINY_ARCH} == stored


def test_example_rewritten_from_its_decoded_floats_is_the_same_file(tmp_path):
    """from_array encodes floats itself: the example's decoded values, re-encoded by qtype and
    flags, give back the example's bytes (Q4_0 and F16 re-encode their own decodes exactly)."""
    with weightfile.open(EXAMPLE_PATH) as f, weightfile.open_vqf(EXAMPLE_PATH) as vqf:
        sources = [
            weightfile.TensorSource.from_array(e.name, f[e.name], qtype=e.qtype, flags=TINY_FLAGS)
            for e in vqf.entries
        ]
        assert [(s.rows, s.cols) for s in sources] == [(e.rows, e.cols) for e in vqf.entries]
    out = weightfile.write_vqf(tmp_path / "x.vqf", arch=TINY_ARCH, tensors=sources, flags=0x23)
    assert out.read_bytes() == EXAMPLE_PATH.read_bytes()


def test_from_array_quantizes_within_half_a_step():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 64, 64)).astype(np.float32)
    src = weightfile.TensorSource.from_array("q4_q", w, qtype=weightfile.QType.Q4_0)
    assert (src.rows, src.cols, len(src.data)) == (2 * 64, 64, 2 * 64 * 2 * 18)
    with pytest.raises(InvalidError) as exc:
        weightfile.TensorSource.from_array("x", np.zeros((1, 1, 1, 1)), qtype=1)
    assert exc.value.rule == "vqf.writer.payload"


@pytest.mark.parametrize("drop", ["dim", "n_kv_heads", "norm_eps"])
def test_write_vqf_refuses_an_incomplete_arch(drop, tmp_path):
    arch = {k: v for k, v in TINY_ARCH.items() if k != drop}
    with pytest.raises(InvalidError) as exc:  # whole tensors: only the arch is wrong
        weightfile.write_vqf(
            tmp_path / "x.vqf", arch=arch, tensors=example_sources(), flags=TINY_FLAGS
        )
    assert exc.value.rule == "vqf.writer.arch" and drop in exc.value.detail
    assert list(tmp_path.iterdir()) == []


def test_protect_vqf_without_any_key_is_our_error(tmp_path):
    with pytest.raises(InvalidError) as exc:
        weightfile.protect_vqf(EXAMPLE_PATH, tmp_path / "p.vqf")
    assert exc.value.rule == "vqf.writer.keys"
    assert list(tmp_path.iterdir()) == []


def example_sources() -> list[weightfile.TensorSource]:
    """The bundled example's tensors, as stored (no encoding: cheap)."""
    with weightfile.open_vqf(EXAMPLE_PATH) as vqf:
        return [
            weightfile.TensorSource(e.name, e.qtype, e.rows, e.cols, bytes(vqf.payload(e)))
            for e in vqf.entries
        ]


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_written_files_honour_the_umask(mask, tmp_path):
    sources = example_sources()
    old = os.umask(mask)
    try:
        plain = weightfile.write_vqf(
            tmp_path / "p.vqf", arch=TINY_ARCH, tensors=sources, flags=TINY_FLAGS
        )
        enc = weightfile.encrypt_vqf(plain, tmp_path / "e.vqf", b"pw")
    finally:
        os.umask(old)
    for path in (plain, enc):  # public outputs: 0644, less where the umask says (issue 34)
        assert path.stat().st_mode & 0o777 == 0o644 & ~mask


CORPUS = Path(__file__).resolve().parents[2] / "conformance" / "corpus"
SLICED = [EXAMPLE_PATH, *sorted(CORPUS.glob("vqf/v1/model/qwen3/*/model.vqf"))]


@pytest.mark.parametrize("model", SLICED, ids=lambda p: p.parent.name)
def test_get_slice_rows_equal_the_full_decode(model):
    with weightfile.open(model) as f:
        for name in f:
            full, view = f[name], f.get_slice(name)
            assert view.shape == full.shape and view.get_shape() == list(full.shape)
            n = full.shape[0]
            for a, b in {(0, n), (1, min(n, 3)), (n - 1, n), (n // 2, n), (0, 1), (2, 2)}:
                np.testing.assert_array_equal(view[a:b], full[a:b], err_msg=f"{name}[{a}:{b}]")
            np.testing.assert_array_equal(view[-1], full[-1])
            np.testing.assert_array_equal(view[::2], full[::2])


def test_get_slice_reads_only_the_rows_asked_for(monkeypatch):
    """A row range of a tiled matrix decodes just the row groups holding it (4 rows of Q4_4X4,
    spec/vqf.md §q8-tiled), a layer range just those layers' bytes."""
    seen: list[int] = []
    with weightfile.open(EXAMPLE_PATH) as f:
        prepare = f._prepare

        def spying(name, engine):
            e, module, rows, cols = prepare(name, engine)

            class Spy:
                def decode(self, payload, r, c):
                    seen.append(len(payload))
                    return module.decode(payload, r, c)

            return e, Spy(), rows, cols

        monkeypatch.setattr(f, "_prepare", spying)
        lm = f.get_slice("q4_lm")[5:6]  # rows 4..7 are one group: 4 rows × 2 blocks × 18 B
        layer = f.get_slice("q4_q")[1:2]  # the second of two layers: half the bytes
        with weightfile.open_vqf(EXAMPLE_PATH) as vqf:
            q_bytes = next(e.bytes for e in vqf.entries if e.name == "q4_q")
    assert lm.shape == (1, 64) and layer.shape == (1, 64, 64)
    assert seen == [4 * 2 * 18, q_bytes // 2]


def test_get_slice_of_a_ninfer_object_and_binding():
    model = CORPUS / "ninfer3/v2/model/qwen35/dense-q4-q8-fused/model.ninfer"
    with weightfile.open(model) as f:
        assert repr(f).startswith("NInferModelFile(") and f.metadata()["format"] == "ninfer3"
        for name in list(f)[-3:]:  # bindings sort last: parts of fused parents among them
            full, view = f[name], f.get_slice(name)
            assert view.shape == full.shape
            np.testing.assert_array_equal(view[1:3], full[1:3])
