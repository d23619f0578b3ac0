"""Binding a VQF file to the decoder (spec/vqf.md §text-tensors, §weight-modes, §geometry,
§arch-semantics): arch -> config, stacked tensors sliced per layer, F16/F32 read exactly, quantized
payloads handed to the words hook."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from strategies.model import legacy_block_bytes, legacy_words, q4_matrix, quantized, random_weights

from weightfile.ref.qwen3.bind_vqf import bind_vqf, codec_matrix_words
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.ref.qwen3.weights import ModelWeights
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

ARCH = {
    "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "head_dim": 8, "ffn_dim": 64,
    "vocab_size": 48, "max_seq_len": 64, "rope_theta": 10000.0, "norm_eps": 1e-6,
    "bos_id": 1, "eos_id": 2, "has_q_norm": 1, "head_dim_full": 8,
}  # fmt: skip
CONFIG = Qwen3Config(
    vocab_size=48, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=8, rope_theta=10000.0,
    rms_norm_eps=1e-6, tie_word_embeddings=False,
)  # fmt: skip
PROJ = {
    "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
    "gate": "gate_proj", "up": "up_proj", "down": "down_proj",
}  # fmt: skip


def f32_bytes(arrays: list[np.ndarray]) -> bytes:
    return np.concatenate([a.reshape(-1) for a in arrays]).astype("<f4").tobytes()


def sources(w: ModelWeights, family: str, embed_f16: bool) -> list[TensorSource]:
    """The tensors of spec/vqf.md §text-tensors for weights w; projections stacked layer after
    layer."""
    qt = QType.Q8_0 if family == "q8" else QType.Q4_0
    d, nl, hd, V = 32, 2, 8, 48
    emb = w.embed.astype("<f2").tobytes() if embed_f16 else w.embed.astype("<f4").tobytes()
    out = [
        TensorSource("token_embed", QType.F16 if embed_f16 else QType.F32, V, d, emb),
        TensorSource("final_norm", QType.F32, d, 1, f32_bytes([w.final_norm])),
        TensorSource("attn_norm", QType.F32, nl * d, 1, f32_bytes([x.attn_norm for x in w.layers])),
        TensorSource("ffn_norm", QType.F32, nl * d, 1, f32_bytes([x.ffn_norm for x in w.layers])),
        TensorSource("q_norm", QType.F32, nl * hd, 1, f32_bytes([x.q_norm for x in w.layers])),
        TensorSource("k_norm", QType.F32, nl * hd, 1, f32_bytes([x.k_norm for x in w.layers])),
    ]
    for short, attr in PROJ.items():
        mats = [getattr(x, attr) for x in w.layers]
        rows, cols = mats[0].shape
        data = b"".join(legacy_block_bytes(m, family) for m in mats)
        out.append(TensorSource(f"{family}_{short}", qt, nl * rows, cols, data))
    if w.lm_head is not None:
        out.append(TensorSource(f"{family}_lm", qt, V, d, legacy_block_bytes(w.lm_head, family)))
    return out


def weights_for(family: str, seed: int) -> ModelWeights:
    make = quantized if family == "q8" else q4_matrix
    w = random_weights(CONFIG, seed=seed, make=make, untied=True)
    return replace(w, embed=w.embed.astype(np.float16).astype(np.float32))  # F16-exact


def write(path: Path, srcs: list[TensorSource], arch: dict = ARCH) -> Path:
    return write_vqf(path, arch=arch, tensors=srcs, flags=VQFFlag.EMB_F16)


def same_matrix(a, b) -> bool:
    return (a.codes == b.codes).all() and (a.scale_bits == b.scale_bits).all()


@pytest.mark.parametrize("hook", ["test-only decoder", "the codecs"])
@pytest.mark.parametrize(("family", "embed_f16"), [("q8", True), ("q4", False)])
def test_bound_weights_equal_the_written_ones(tmp_path: Path, family: str, embed_f16: bool, hook):
    w = weights_for(family, seed=4)
    path = write(tmp_path / "m.vqf", sources(w, family, embed_f16))
    with open_vqf(path) as vqf:
        config, bound = bind_vqf(
            vqf, legacy_words if hook == "test-only decoder" else codec_matrix_words
        )
    assert config == replace(CONFIG, rms_norm_eps=float(np.float32(1e-6)))  # the header's f32
    assert (bound.embed.view(np.uint32) == w.embed.view(np.uint32)).all()
    assert (bound.final_norm == w.final_norm).all()
    # layer l is slice l (spec/vqf.md §text-tensors)
    for got, want in zip(bound.layers, w.layers, strict=True):
        for attr in PROJ.values():
            assert same_matrix(getattr(got, attr), getattr(want, attr)), attr
        for attr in ("attn_norm", "ffn_norm", "q_norm", "k_norm"):
            assert (getattr(got, attr) == getattr(want, attr)).all(), attr
    assert same_matrix(bound.lm_head, w.lm_head)
    a = Qwen3Model(config, bound).forward([1, 2, 3], Qwen3Model(config, bound).new_cache())
    m = Qwen3Model(CONFIG, w)
    assert (a.view(np.uint32) == m.forward([1, 2, 3], m.new_cache()).view(np.uint32)).all()


def test_dual_file_family_option(tmp_path: Path) -> None:
    w8, w4 = weights_for("q8", 1), weights_for("q4", 2)
    w4 = replace(w4, embed=w8.embed, final_norm=w8.final_norm, layers=tuple(
        replace(l4, attn_norm=l8.attn_norm, ffn_norm=l8.ffn_norm, q_norm=l8.q_norm,
                k_norm=l8.k_norm)
        for l4, l8 in zip(w4.layers, w8.layers, strict=True)
    ))  # fmt: skip
    srcs = sources(w8, "q8", True) + [s for s in sources(w4, "q4", True) if s.name[:3] == "q4_"]
    path = write(tmp_path / "dual.vqf", srcs)
    with open_vqf(path) as vqf:
        _, default = bind_vqf(vqf, legacy_words)  # the engine's decode choice: q4 first
        _, q8 = bind_vqf(vqf, legacy_words, projection_set="q8")
    assert same_matrix(default.layers[1].down_proj, w4.layers[1].down_proj)
    assert same_matrix(q8.layers[1].down_proj, w8.layers[1].down_proj)


def test_missing_tensor_is_named(tmp_path: Path) -> None:
    w = weights_for("q8", 3)
    path = write(tmp_path / "m.vqf", [s for s in sources(w, "q8", True) if s.name != "ffn_norm"])
    with open_vqf(path) as vqf, pytest.raises(NotFoundError) as info:
        bind_vqf(vqf, legacy_words)
    assert info.value.rule == "vqf.bind.missing_tensor" and info.value.path == "ffn_norm"


def test_wrong_size_is_refused_with_its_directory_entry(tmp_path: Path) -> None:
    w = weights_for("q8", 3)
    short = [TensorSource("q_norm", QType.F32, 8, 1, b"\0" * 32)]  # 8 values, the arch wants 16
    srcs = [s for s in sources(w, "q8", True) if s.name != "q_norm"] + short
    path = write(tmp_path / "m.vqf", srcs)
    with open_vqf(path) as vqf, pytest.raises(InvalidError) as info:
        bind_vqf(vqf, legacy_words)
    e = next(e for e in vqf.entries if e.name == "q_norm")
    assert info.value.rule == "vqf.bind.size"
    assert (info.value.offset, info.value.path) == (e.entry_offset, f"directory[{e.index}]")


def test_tied_file_without_lm_uses_the_embedding(tmp_path: Path) -> None:
    w = replace(weights_for("q8", 5), lm_head=None)
    path = write(tmp_path / "m.vqf", sources(w, "q8", True))
    with open_vqf(path) as vqf:
        config, bound = bind_vqf(vqf, legacy_words)
    assert config.tie_word_embeddings and bound.lm_head is None


def test_moe_and_bad_arch_are_refused(tmp_path: Path) -> None:
    w = weights_for("q8", 6)
    path = write(tmp_path / "kv0.vqf", sources(w, "q8", True), {**ARCH, "n_kv_heads": 0})
    with open_vqf(path) as vqf, pytest.raises(InvalidError) as info:
        bind_vqf(vqf, legacy_words)
    assert info.value.rule == "vqf.bind.arch"
    path = write(tmp_path / "noqk.vqf", sources(w, "q8", True), {**ARCH, "has_q_norm": 0})
    with open_vqf(path) as vqf, pytest.raises(UnsupportedError):
        bind_vqf(vqf, legacy_words)
