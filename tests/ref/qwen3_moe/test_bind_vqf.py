"""Binding a version-3 VQF file (spec/vqf.md §text-tensors, §arch-semantics): expert bands cut per
expert, and every rule of the Qwen3-MoE binder broken once (vqf.bind.moe_experts, moe_band,
moe_router), each next to the legal file it was made from."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from strategies.tiny_moe import MoeSpec, moe_config, moe_file_parts, state_dict, write_moe_file

from weightfile import families
from weightfile.families.qwen3_moe.hf_names import expert_tensor, router_tensor
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf
from weightfile.ref.qwen3_moe.decoder import Qwen3MoeModel
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag

SPEC = MoeSpec(moe_config(layers=2, experts=4, top_k=2), "q8_0_8x8", "none", 5)


def bind_parts(tmp_path, arch, tensors, flags):
    path = write_vqf(tmp_path / "m.vqf", arch=arch, tensors=tensors, flags=flags, overwrite=True)
    with open_vqf(path) as vqf:
        return bind_vqf(vqf)


@pytest.mark.parametrize("fmt", ["f32", "q4_0_4x4", "q8_0"])
def test_each_expert_is_its_own_band_of_the_stacked_matrices(tmp_path, fmt):
    spec = dataclasses.replace(SPEC, matrix_format=fmt)
    sd = state_dict(spec)
    config, w = bind_parts(tmp_path, *moe_file_parts(spec))
    assert (config.num_experts, config.num_experts_per_tok, config.intermediate_size) == (4, 2, 128)
    for layer in (0, 1):
        lw = w.layers[layer]
        assert isinstance(lw.router, DenseMatrix)
        assert (lw.router.values == sd[router_tensor(layer)]).all()  # F32, never quantized
        for e in range(4):
            for role in ("gate", "up", "down"):
                m = getattr(lw.experts[e], role)
                want = sd[expert_tensor(layer, e, role)]
                got = m.values if isinstance(m, DenseMatrix) else dequantize(m)
                # the band of expert e, not its neighbour's: within the codec's rounding
                tol = 0 if fmt == "f32" else (0.2 if fmt.startswith("q4") else 0.02)
                assert np.abs(got - want).max() <= tol, (layer, e, role)


def dequantize(m: QuantMatrix) -> np.ndarray:
    return m.codes * np.repeat(m.scale_bits.view(np.float16).astype(np.float32), 32, axis=1)


def test_the_family_row_binds_a_version3_file(tmp_path):
    path = write_moe_file(tmp_path / "m.vqf", SPEC)
    with open_vqf(path) as vqf:
        family = families.vqf_family(vqf)
        model = family.reference_model(vqf)
    assert family.name == "qwen3_moe" and isinstance(model, Qwen3MoeModel)
    names = family.trace_names(model.config)
    assert "layers.1.moe_experts" in names and "layers.0.gate_proj" not in names


@pytest.mark.parametrize(
    ("change", "path"),
    [({"top_k": 0}, "header.arch.top_k"), ({"top_k": 5}, "header.arch.top_k")],
)
def test_expert_counts_the_decoder_cannot_use_are_refused(tmp_path, change, path):
    arch, tensors, flags = moe_file_parts(SPEC)
    with pytest.raises(InvalidError) as exc:
        bind_parts(tmp_path, {**arch, **change}, tensors, flags)
    assert (exc.value.rule, exc.value.path) == ("vqf.bind.moe_experts", path)


def test_shared_experts_are_unsupported(tmp_path):
    arch, tensors, flags = moe_file_parts(SPEC)
    with pytest.raises(UnsupportedError) as exc:
        bind_parts(tmp_path, {**arch, "shared_experts": 1}, tensors, flags)
    assert (exc.value.rule, exc.value.path) == (
        "vqf.bind.unsupported",
        "header.arch.shared_experts",
    )


def test_a_band_that_is_not_n_experts_times_moe_ffn_is_refused(tmp_path):
    arch, tensors, flags = moe_file_parts(SPEC)
    with pytest.raises(InvalidError) as exc:  # 4 · 32 = 128 of ffn_dim, said to be 2 · 64
        bind_parts(tmp_path, {**arch, "n_experts": 2, "top_k": 1, "moe_ffn": 48}, tensors, flags)
    assert (exc.value.rule, exc.value.path) == ("vqf.bind.moe_band", "header.arch.ffn_dim")


def test_an_expert_band_that_splits_blocks_or_tiles_is_refused(tmp_path):
    # 8 experts of 16 rows: ffn_dim 128 as before, but down's bands would split 32-blocks (and
    # a 32-block multiple is also whole 4- and 8-row tile groups, so tiles never straddle)
    arch, tensors, flags = moe_file_parts(SPEC)
    router = next(t for t in tensors if t.name == "moe_router")
    wide = dataclasses.replace(router, rows=2 * 8, data=bytes(4 * 2 * 8 * 32))
    tensors = [wide if t is router else t for t in tensors]
    with pytest.raises(InvalidError) as exc:
        bind_parts(tmp_path, {**arch, "n_experts": 8, "moe_ffn": 16}, tensors, flags)
    assert (exc.value.rule, exc.value.path) == ("vqf.bind.moe_band", "header.arch.moe_ffn")


def test_a_router_that_is_not_f32_rows_of_every_layer_is_refused(tmp_path):
    arch, tensors, flags = moe_file_parts(SPEC)
    router = next(t for t in tensors if t.name == "moe_router")
    short = dataclasses.replace(router, rows=router.rows - 4, data=router.data[: -4 * 4 * 32])
    with pytest.raises(InvalidError) as exc:
        bind_parts(tmp_path, arch, [short if t is router else t for t in tensors], flags)
    assert exc.value.rule == "vqf.bind.moe_router"
    assert exc.value.path.startswith("directory[")


@pytest.mark.parametrize("flag", [VQFFlag.G256, VQFFlag.Q8BUF_Q4])
def test_g256_and_q4i8_expert_matrices_are_unsupported(tmp_path, flag):
    arch, tensors, flags = moe_file_parts(dataclasses.replace(SPEC, matrix_format="q8_0"))
    bind_parts(tmp_path, arch, tensors, flags)  # the guard: plain Q8_0 binds
    with pytest.raises(UnsupportedError) as exc:
        bind_parts(tmp_path, arch, tensors, flags | flag)
    assert (exc.value.rule, exc.value.path) == ("vqf.bind.unsupported", "flags")
