"""The bundled example: a tiny Qwen3-shaped VQF file, generated deterministically.

`weightfile verify --example` and `weightfile inspect --example` use the committed copy in
weightfile/data/; a test regenerates it and requires identical bytes. It is a well-formed model:
seeded float weights (unit norms, projections of standard deviation 1/sqrt(fan-in), an embedding
of unit variance) encoded by the same Q4_0 encoders `import` uses (spec/vqf.md §encodings), so every
scale is a finite f16 and `run` generates from it. `tiny_tensors` is the older byte-level generator
the conformance corpus is built from; its raw random bytes exercise the container, not a model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import Geometry, inventory
from weightfile.spec.vqf.qtypes import QType

EXAMPLE_PATH = Path(__file__).with_name("data") / "tiny-qwen3-q4.vqf"

#: A Qwen3-shaped arch small enough to commit (every tiling gate of spec/vqf.md §repack-gates
#: passes).
TINY_ARCH: dict[str, Any] = {
    "dim": 64,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "head_dim": 16,
    "ffn_dim": 128,
    "vocab_size": 256,
    "max_seq_len": 256,
    "rope_theta": 1000000.0,
    "norm_eps": 1e-6,
    "bos_id": 1,
    "eos_id": 2,
    "has_q_norm": 1,
    "head_dim_full": 16,
}
TINY_FLAGS = VQFFlag.Q8_8X8 | VQFFlag.Q4_4X4 | VQFFlag.EMB_F16


def synthetic_payload(qtype: int, elements: int, rng: np.random.Generator) -> bytes:
    """Deterministic bytes of a plausible payload for `qtype` (spec/vqf.md §f32, §f16, §q8-0,
    §q4-0)."""
    if qtype == QType.F32:
        return (1.0 + 0.1 * rng.standard_normal(elements)).astype("<f4").tobytes()
    if qtype == QType.F16:
        return (0.02 * rng.standard_normal(elements)).astype("<f2").tobytes()
    blocks = -(-elements // 32)
    scales = (0.001 + 0.01 * rng.random(blocks)).astype("<f2").view(np.uint8).reshape(blocks, 2)
    if qtype == QType.Q8_0:
        codes = rng.integers(-127, 128, (blocks, 32), dtype=np.int8).view(np.uint8)
    else:
        codes = rng.integers(0, 256, (blocks, 16), dtype=np.uint8)
    return np.concatenate([scales, codes], axis=1).tobytes()


def tiny_tensors(
    arch: dict[str, Any], wmode: str = "q4", seed: int = 0, *, embed: QType = QType.F16
) -> list[TensorSource]:
    """One TensorSource per inventory entry of `arch` in `wmode`, with seeded payloads."""
    rng = np.random.default_rng(seed)
    g = Geometry.from_arch(arch)
    sources = []
    for kind in inventory(arch, wmode):
        qtype = embed if kind.name == "token_embed" else kind.qtypes[0]
        rows, cols = kind.directory_shape(g)
        data = synthetic_payload(qtype, rows * cols, rng)
        sources.append(TensorSource(kind.name, qtype, rows, cols, data))
    return sources


def example_state_dict(arch: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """transformers-named float32 weights of a small random Qwen3 with the shapes of `arch`."""
    from weightfile.families.qwen3.hf_names import (
        EMBED,
        FINAL_NORM,
        LAYER_TENSORS,
        LM_HEAD,
        layer_tensor,
    )

    rng = np.random.default_rng(seed)
    d, hd, ffn, v = arch["dim"], arch["head_dim"], arch["ffn_dim"], arch["vocab_size"]
    q, kv = arch["n_heads"] * hd, arch["n_kv_heads"] * hd
    shapes = {
        "q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d), "o_proj": (d, q),
        "gate_proj": (ffn, d), "up_proj": (ffn, d), "down_proj": (d, ffn),
    }  # fmt: skip

    def normal(shape: tuple[int, int]) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[1])).astype(np.float32)

    sd = {
        EMBED: rng.standard_normal((v, d)).astype(np.float32),
        LM_HEAD: normal((v, d)),
        FINAL_NORM: np.ones(d, np.float32),
    }
    for i in range(arch["n_layers"]):
        for f in LAYER_TENSORS:
            if f.endswith("norm"):
                sd[layer_tensor(i, f)] = np.ones(hd if f in ("q_norm", "k_norm") else d, np.float32)
            else:
                sd[layer_tensor(i, f)] = normal(shapes[f])
    return sd


def example_tensors(arch: dict[str, Any], seed: int = 0) -> list[TensorSource]:
    """The bundled example's tensors: `example_state_dict` encoded as `import --qtype q4_0
    --layout tiled` encodes a checkpoint (reference codecs, so the bytes are the oracle's)."""
    from weightfile.families.qwen3.hf import config_from_hf
    from weightfile.families.qwen3.to_vqf import build_tensors

    hf = dict(
        vocab_size=arch["vocab_size"], hidden_size=arch["dim"], intermediate_size=arch["ffn_dim"],
        num_hidden_layers=arch["n_layers"], num_attention_heads=arch["n_heads"],
        num_key_value_heads=arch["n_kv_heads"], head_dim=arch["head_dim"],
        rope_theta=arch["rope_theta"], rms_norm_eps=arch["norm_eps"],
        max_position_embeddings=arch["max_seq_len"], bos_token_id=arch["bos_id"],
        eos_token_id=arch["eos_id"], tie_word_embeddings=False,
    )  # fmt: skip
    return build_tensors(example_state_dict(arch, seed), config_from_hf(hf), QType.Q4_0, TINY_FLAGS)


def write_example(path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the bundled example file to `path`."""
    return write_vqf(
        path,
        arch=TINY_ARCH,
        tensors=example_tensors(TINY_ARCH),
        flags=TINY_FLAGS,
        overwrite=overwrite,
    )
