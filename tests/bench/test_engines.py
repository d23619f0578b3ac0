"""The engine adapter: lazy imports, per-token work, the reference estimate's row slice."""

import numpy as np
import pytest

from weightfile.bench import engines
from weightfile.bench.synthetic import synthetic_model
from weightfile.ref.model.bind_vqf import codec_matrix_words
from weightfile.ref.vqf.read import open_vqf


def test_optional_module_distinguishes_missing_from_broken(tmp_path, monkeypatch):
    assert engines.optional_module("weightfile.no_such_module") is None
    assert engines.optional_module("weightfile.bench.roofline") is not None
    # a module that exists but imports a missing one is a bug to surface, not "no engine"
    (tmp_path / "wf_broken_engine.py").write_text("import wf_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError):
        engines.optional_module("wf_broken_engine")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path, _ = synthetic_model("tiny-q8_0", tmp_path_factory.mktemp("syn"))
    return path


def test_macs_per_token_by_hand(tiny):
    with open_vqf(tiny) as vqf:
        shapes = engines.matrix_shapes(vqf)
    assert shapes["q8_down"] == (64, 128, 2)
    per_layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 128 * 64
    assert engines.macs_per_token(shapes) == 2 * per_layer + 256 * 64 == 90_112


def test_leading_rows_equal_the_whole_matrix_rows(tiny):
    # the estimate decodes only the first bytes; they must be the first rows of the layer
    with open_vqf(tiny) as vqf:
        e = vqf.entry("q8_gate")
        layer0 = bytes(vqf.payload(e)[: 128 * 64 // 32 * 34])
        codes, scales = codec_matrix_words("q8_gate", e.qtype, vqf.header.flags, layer0, 128, 64)
        head = engines.leading_rows(vqf, "q8_gate", 128, 64)
    k = engines.ESTIMATE_ROWS
    assert np.array_equal(head.codes.view(np.uint8), np.asarray(codes)[:k].view(np.uint8))
    assert np.array_equal(head.scale_bits, np.asarray(scales)[:k])


def test_reference_estimate_is_positive(tiny):
    with open_vqf(tiny) as vqf:
        assert engines.estimate_ref_token_seconds(vqf) > 0
