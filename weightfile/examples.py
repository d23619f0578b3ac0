"""The bundled example: a tiny Qwen3-shaped VQF file, generated deterministically.

`weightfile verify --example` and `weightfile inspect --example` use the committed copy in
weightfile/data/; a test regenerates it and requires identical bytes. Its weights are seeded
pseudo-random numbers (norm weights near 1, Q4_0 blocks with in-range f16 scales), enough to
exercise every field of the container; a model that produces sensible text comes with the
forward-pass work.
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

#: A Qwen3-shaped arch small enough to commit (every tiling gate of spec/vqf.md §7.5 passes).
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
    """Deterministic bytes of a plausible payload for `qtype` (spec/vqf.md §5.1–§5.3, §5.7)."""
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


def write_example(path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """Write the bundled example file to `path`."""
    return write_vqf(
        path, arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH), flags=TINY_FLAGS, overwrite=overwrite
    )
