"""Synthetic models: geometry against vqf.md's own numbers, determinism, the cache."""

import inspect

import pytest
from strategies.vqf_worked_examples import VL_2B_TABLE

from weightfile.bench.synthetic import (
    SPECS,
    planned_layout,
    spec_named,
    synthetic_model,
    tensor_sources,
)
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.errors import NotFoundError


def test_vl2b_text_layout_matches_the_worked_example():
    rows, size = planned_layout(SPECS["qwen3-vl-2b-text-q4_0"])
    assert rows == VL_2B_TABLE[:14]  # spec/vqf.md §worked-example rows 1-14, the text tensors
    # spec/vqf.md §worked-example: the vision tensors start at 1,590,583,296; without them that is
    # file_len, + 8 FNV
    assert size == 1_590_583_296 + 8


def test_qwen3_0_6b_q4_projection_bytes_by_hand():
    # per layer: q 2048·1024, k and v 1024·1024, o 1024·2048, gate/up/down 3072·1024 elements;
    # Q4_0 stores 32 elements in 18 bytes (spec/vqf.md §q4-0)
    per_layer = 2048 * 1024 + 2 * 1024 * 1024 + 1024 * 2048 + 3 * 3072 * 1024
    rows, _ = planned_layout(SPECS["qwen3-0.6b-q4_0"])
    sizes = dict((name, size) for name, _, size in rows)
    layers = sum(sizes[f"q4_{k}"] for k in ("q", "k", "v", "o", "gate", "up", "down"))
    assert layers == 28 * per_layer * 18 // 32
    assert sizes["q4_lm"] == 151_936 * 1024 * 18 // 32
    assert sizes["token_embed"] == 151_936 * 1024 * 2  # F16 (spec/vqf.md §f16)


def test_planning_draws_no_weights():
    # every matrix payload is a generator that has not started: planning a 2.4 GB model is free
    sources = tensor_sources(SPECS["qwen3-vl-2b-text-q8_0"])
    lazy = [t for t in sources if inspect.isgenerator(t.data)]
    assert len(lazy) == 9  # token_embed, 7 projections, lm_head
    assert {inspect.getgeneratorstate(t.data) for t in lazy} == {inspect.GEN_CREATED}


def test_unknown_name_is_a_typed_error():
    with pytest.raises(NotFoundError) as err:
        spec_named("qwen9-1t")
    assert err.value.rule == "bench.synthetic.name"


@pytest.mark.parametrize("name", ["tiny-q4_0", "tiny-q8_0"])
def test_tiny_file_is_valid_and_has_the_planned_layout(tmp_path, name):
    path, built = synthetic_model(name, tmp_path)
    assert built
    assert validate(path, checksum=True) == []
    rows, size = planned_layout(SPECS[name])
    assert path.stat().st_size == size
    with open_vqf(path) as vqf:
        assert [(e.name, e.offset, e.bytes) for e in vqf.entries] == rows
        assert vqf.header.arch["dim"] == SPECS[name].hidden


def test_cache_is_reused_and_generation_is_deterministic(tmp_path):
    first, built = synthetic_model("tiny-q4_0", tmp_path / "a")
    assert built
    stamp = first.stat().st_mtime_ns
    again, rebuilt = synthetic_model("tiny-q4_0", tmp_path / "a")
    assert (again, rebuilt) == (first, False)
    assert again.stat().st_mtime_ns == stamp
    other, _ = synthetic_model("tiny-q4_0", tmp_path / "b")
    assert other.read_bytes() == first.read_bytes()
    assert other.name == first.name  # keyed by name + generator version + spec hash


def test_failed_generation_leaves_nothing(tmp_path, monkeypatch):
    import weightfile.bench.synthetic as synthetic

    def broken(*args, **kwargs):
        raise RuntimeError("encoder failed")

    monkeypatch.setattr(synthetic, "encode", broken)
    with pytest.raises(RuntimeError):
        synthetic_model("tiny-q4_0", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_other_generator_versions_are_removed_on_build(tmp_path):
    stale = tmp_path / "tiny-q4_0-g0-000000000000.vqf"
    other = tmp_path / "tiny-q8_0-g0-000000000000.vqf"
    stale.write_bytes(b"old")
    other.write_bytes(b"other model")
    path, built = synthetic_model("tiny-q4_0", tmp_path)
    assert built
    assert sorted(tmp_path.iterdir()) == sorted([path, other])


def test_chunked_embedding_and_tied_lm_head_equal_whole_matrix_encodings(tmp_path, monkeypatch):
    # chunks of 64 rows (a multiple of every row group) must give the bytes of one whole-matrix
    # encode (spec/vqf.md §repack-gates); the expected bytes come from the reference codecs, not the
    # fast ones
    import numpy as np

    import weightfile.bench.synthetic as synthetic
    from weightfile.ref.codecs.vqf import codec, f16

    monkeypatch.setattr(synthetic, "ROW_CHUNK", 64)
    s = SPECS["tiny-q4_0"]
    path, _ = synthetic_model("tiny-q4_0", tmp_path)
    embed = np.concatenate([synthetic._embed_chunk(s, start) for start in range(0, 256, 64)])
    with open_vqf(path) as vqf:
        assert bytes(vqf.payload("token_embed")) == f16.encode(embed, 256, 64, mode="trunc_ftz")
        assert bytes(vqf.payload("q4_lm")) == codec("q4_0_4x4").encode(embed, 256, 64)
