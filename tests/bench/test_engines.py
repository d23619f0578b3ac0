"""The engine adapter: fast only with C kernels, per-token work, the estimate's row slice."""

import numpy as np
import pytest

from weightfile.bench import engines
from weightfile.bench.synthetic import synthetic_model
from weightfile.ref.qwen3.bind_vqf import codec_matrix_words
from weightfile.ref.vqf.read import open_vqf


def test_without_c_kernels_the_fast_engine_is_absent_not_the_reference(monkeypatch):
    assert engines.fast_open_model() is not None and engines.fast_matrix_from_entry() is not None
    monkeypatch.setattr(engines, "library", lambda: None)
    assert engines.fast_open_model() is None and engines.fast_matrix_from_entry() is None


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
