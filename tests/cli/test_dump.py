"""`weightfile.open` and `weightfile dump`: logical shapes, untiled order, bindings, engines."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from strategies.ninfer3 import TINY_PAYLOAD, build_file_set, tiny_doc

from weightfile.cli import main
from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.fast.codecs.vqf import codec
from weightfile.model_file import open_model_file
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import NotFoundError

NL, QO, D = TINY_ARCH["n_layers"], TINY_ARCH["n_heads"] * TINY_ARCH["head_dim"], TINY_ARCH["dim"]


def exact_q4_values(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    """Values Q4_0 stores exactly: (nibble − 8)·0.5 with a −4 in every 32-block, so d = 0.5."""
    values = (rng.integers(0, 16, (rows, cols)) - 8).astype(np.float32) * 0.5
    values[:, ::32] = -4.0
    return values


@pytest.fixture
def vqf_with_known_q4_q(tmp_path):
    """q4_q holds two layers of [qo, d] known values, written 4x4-interleaved (flag Q4_4X4)."""
    values = exact_q4_values(np.random.default_rng(7), NL * QO, D)
    payload = codec("q4_0_4x4").encode(values, NL * QO, D)
    tensors = [
        TensorSource(t.name, t.qtype, t.rows, t.cols, payload if t.name == "q4_q" else t.data)
        for t in tiny_tensors(TINY_ARCH)
    ]
    path = write_vqf(tmp_path / "m.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    return path, values.reshape(NL, QO, D)


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_vqf_matrix_comes_out_per_layer_in_plain_row_major_order(vqf_with_known_q4_q, engine):
    path, want = vqf_with_known_q4_q
    with open_model_file(path) as f:
        assert f.codec("q4_q") == "q4_0_4x4"
        got = f.decode("q4_q", engine=engine)
        words = f.decode_words("q4_q", engine=engine)
    assert got.shape == (NL, QO, D) and got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(words["codes"].astype(np.int64) - 8, (want * 2).astype(np.int64))
    assert np.all(words["scales"] == 0x3800)  # f16 0.5


def test_dump_cli_writes_npy_and_npz(vqf_with_known_q4_q, tmp_path, capsys):
    path, want = vqf_with_known_q4_q
    assert main(["dump", str(path), "q4_q", "--out", str(tmp_path / "q.npy")]) == 0
    assert np.array_equal(np.load(tmp_path / "q.npy"), want)
    assert main(["dump", str(path), "attn_norm", "--out", str(tmp_path / "n.npy")]) == 0
    assert np.load(tmp_path / "n.npy").shape == (NL, D)
    out = tmp_path / "w.npz"
    assert main(["dump", str(path), "q4_q", "--words", "--engine", "ref", "--out", str(out)]) == 0
    assert sorted(np.load(out).files) == ["codes", "scales"]
    assert main(["dump", str(path), "nope", "--out", str(tmp_path / "x.npy")]) == 2
    assert "no tensor named 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_ninfer_objects_and_bindings(tmp_path, engine):
    """spec/ninfer3.md §framing-numbers tiny file: bf16 words 0x0000, 0x8000, 0x3F80, 0x7FC1;
    p.split = [2, 4) then [0, 2)."""
    [path] = build_file_set(tmp_path, "tiny.ninfer", tiny_doc(), TINY_PAYLOAD)
    with open_model_file(path) as f:
        assert {"w.bf16", "w.scalar", "p.vec", "p.split"} <= set(f.names())
        whole = f.decode("p.vec", engine=engine)
        split = f.decode_words("p.split", engine=engine)
        scalar = f.decode("w.scalar", engine=engine)
        with pytest.raises(NotFoundError):
            f.decode("p.none", engine=engine)
    bits = whole.view(np.uint32)
    assert list(bits[:3]) == [0x00000000, 0x80000000, 0x3F800000] and np.isnan(whole[3])
    assert list(split["codes"]) == [0x3F80, 0x7FC1, 0x0000, 0x8000]
    assert scalar.shape == () and float(scalar) == 2.0


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="Linux /proc")
def test_an_unwritable_destination_is_named_not_its_temporary_file(capsys):
    """Issue 34 item 11: /proc takes no new file; the error names --out's path."""
    from weightfile.examples import EXAMPLE_PATH

    assert main(["dump", str(EXAMPLE_PATH), "final_norm", "--out", "/proc/version",
                 "--force"]) == 4  # fmt: skip
    err = capsys.readouterr().err
    assert "(/proc/version)" in err and "Traceback" not in err and len(err.splitlines()) == 1
