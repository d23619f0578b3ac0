"""The functions of the replay table (weightfile/replay.py, spec/numerics.md §replay): each takes
the bound model and the dump's input arrays and returns the outputs under the dump's names."""

from __future__ import annotations

from typing import Any

import numpy as np

from weightfile.ref.qwen3_moe.board.ffn import dump_arrays
from weightfile.spec.errors import InvalidError

F32 = np.float32
#: The packs' record of the engine's path: (SIMD 8x8 kernel = 1, Q8 layout mode 8x8 = 2, refused,
#: expert width); the board MoE model is that path (spec/numerics.md §board-moe-products).
MOE_INFO = "moe.info_simd_mode8_rejected_ef"
SIMD_8X8, Q8_LAYOUT_8X8 = 1, 2


def board_moe_ffn(model: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """spec/numerics.md §board-moe row (l, t) of moe.x_in [L, N, d] through layer l's Q8 MoE
    FFN of the board MoE model (reference or fast: `model.moe_step`)."""
    x = inputs["moe.x_in"]
    layers = model.weights.layers
    d = model.config.hidden_size
    if x.ndim != 3 or x.shape[0] > len(layers) or x.shape[2] != d or x.dtype != F32:
        raise InvalidError(
            "frontend.replay.input",
            f"moe.x_in is {x.dtype} {list(x.shape)}; the model needs float32 [L <= "
            f"{len(layers)}, N, {d}]",
            path="moe.x_in",
        )
    steps = [[model.moe_step(layers[i], row) for row in x[i]] for i in range(x.shape[0])]
    out = dump_arrays(steps)
    refused = int(any(s.refused for row in steps for s in row))
    ie = model.config.moe_intermediate_size
    out[MOE_INFO] = np.array([SIMD_8X8, Q8_LAYOUT_8X8, refused, ie], dtype=np.int32)
    return out
