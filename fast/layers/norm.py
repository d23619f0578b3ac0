"""RMSNorm over rows in C, alone or fused with the next products' activation quantization
(spec/numerics.md §rmsnorm, §q8-activation); equals `weightfile.ref.layers.norm.rmsnorm` row by
row."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import (
    FastMatrix,
    activation_buffers,
    kernels,
    matmat_codes_set,
    project,
    takes_codes,
)


def rmsnorm(x: np.ndarray, weight: np.ndarray, eps: np.float32) -> np.ndarray:
    """spec/numerics.md §rmsnorm over the last axis of x; weight float32 [n]."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = weight.shape[0]
    out = np.empty_like(x)
    kernels().wf_rmsnorm_rows(address(x), x.size // n, n, address(weight), eps, address(out))
    return out


def norm_project(
    x: np.ndarray, weight: np.ndarray, eps: np.float32, mats: Sequence[FastMatrix], threads: int
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(rmsnorm(x), project(mats, rmsnorm(x))) with the norm and the spec/numerics.md §q8-activation
    activation quantization in one C call when the products take codes: the same operations in
    order."""
    if not takes_codes(mats):
        n = rmsnorm(x, weight, eps)
        return n, project(mats, n, threads)
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, codes, scales = activation_buffers(x, mats)
    kernels().wf_rmsnorm_quantize(
        address(x), x.shape[0], x.shape[1], address(weight), eps,
        address(n), address(codes), address(scales),
    )  # fmt: skip
    return n, matmat_codes_set(mats, codes, scales, threads)
