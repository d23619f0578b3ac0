"""SwiGLU in C, alone or fused with the down projection's activation quantization
(spec/numerics.md §silu, §q8-activation); equals the reference's `Kernels.swiglu` element by
element."""

from __future__ import annotations

import numpy as np

from weightfile.fast._native import address
from weightfile.fast.numerics.matrix import (
    FastMatrix,
    activation_buffers,
    kernels,
    matmat_codes_set,
    takes_codes,
)


def swiglu(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """spec/numerics.md §silu silu(g) * u, element-wise."""
    gate = np.ascontiguousarray(gate, dtype=np.float32)
    up = np.ascontiguousarray(up, dtype=np.float32)
    out = np.empty_like(gate)
    kernels().wf_swiglu(address(gate), address(up), gate.size, address(out))
    return out


def swiglu_project(
    gate: np.ndarray, up: np.ndarray, mat: FastMatrix, threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """(swiglu(gate, up), mat applied to it), swiglu and the spec/numerics.md §q8-activation
    quantization in one C call when `mat` takes codes."""
    if not takes_codes((mat,)):
        sw = swiglu(gate, up)
        return sw, mat.matmat(sw, threads=threads)
    gate = np.ascontiguousarray(gate, dtype=np.float32)
    up = np.ascontiguousarray(up, dtype=np.float32)
    if up.shape != gate.shape:
        raise ValueError(f"gate {gate.shape} and up {up.shape} differ")
    sw, codes, scales = activation_buffers(gate, (mat,))
    kernels().wf_swiglu_quantize(
        address(gate), address(up), gate.size, address(sw), address(codes), address(scales)
    )
    return sw, matmat_codes_set((mat,), codes, scales, threads)[0]
