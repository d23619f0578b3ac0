"""The functions of the replay table (weightfile/replay.py, spec/numerics.md §replay): each takes
the bound model, the row's numbers (`at`: {"l": 2}) and the dump's input arrays in the row's
order, and returns the outputs in the row's order. The vision steps are the board tower's own
methods (ref/qwen3_vl/board/tower.py; the fast tower inherits the steps), so replay and the tower
cannot compute a step two ways. A ValueError here is the dump's input unfit for the model's step
(replay.py turns it into `frontend.replay.input`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from weightfile.ref.qwen3_moe.board.ffn import dump_arrays
from weightfile.ref.qwen3_vl.board.tower import merge_windows
from weightfile.spec.errors import InvalidError

F32 = np.float32
#: The packs' record of the engine's path: (SIMD 8x8 kernel = 1, Q8 layout mode 8x8 = 2, refused,
#: expert width); the board MoE model is that path (spec/numerics.md §board-moe-products).
MOE_INFO = "moe.info_simd_mode8_rejected_ef"
SIMD_8X8, Q8_LAYOUT_8X8 = 1, 2
MOE_OUTPUTS = ("moe.router_logits", "moe.experts", "moe.weights", "moe.gate", "moe.up", "moe.act",
               "moe.partial_sum", "moe.out", MOE_INFO)  # fmt: skip


def board_moe_ffn(model: Any, at: dict[str, int], x: np.ndarray) -> tuple[np.ndarray, ...]:
    """spec/numerics.md §board-moe row (l, t) of moe.x_in [L, N, d] through layer l's Q8 MoE
    FFN of the board MoE model (reference or fast: `model.moe_step`)."""
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
    return tuple(out[n] for n in MOE_OUTPUTS)


# --- the board vision tower (spec/numerics.md §board-vision), one step each ------------------


def _f32(a: np.ndarray, *shape: int | None) -> np.ndarray:
    """`a` when it is float32 of `shape` (None: any length on that axis), else ValueError."""
    ok = a.dtype == F32 and a.ndim == len(shape)
    if not ok or any(n is not None and n != m for n, m in zip(shape, a.shape, strict=True)):
        want = ", ".join("*" if n is None else str(n) for n in shape)
        raise ValueError(f"the step takes float32 [{want}]")
    return a


def _rows(model: Any, a: np.ndarray, width: int | None = None) -> np.ndarray:
    """Patch or token rows [P, width] (width: the tower's hidden size unless given)."""
    return _f32(a, None, model.tower.config.hidden_size if width is None else width)


def _grid(geometry: np.ndarray) -> tuple[int, int]:
    """(gh, gw) of `vision.geometry_hw_grid_ntok`."""
    if geometry.shape != (5,) or geometry.dtype.kind not in "iu" or min(geometry[2:4]) < 1:
        raise ValueError("the geometry is int32 [H', W', gh, gw, tokens], gh and gw >= 1")
    return int(geometry[2]), int(geometry[3])


def _merger(at: dict[str, int]) -> str:
    """The merger a row's numbers name: DeepStack merger d, or the main merger."""
    return f"ds{at['d']}" if "d" in at else "merger"


def block_input(model: Any, at: dict[str, int]) -> dict[str, str]:
    """spec/numerics.md §board-vision-block block l's input: the patch rows with positions for
    block 0, block l−1's output after."""
    return {"x": f"vit.layer{at['l'] - 1}.out" if at["l"] else "vision.patch_plus_pos"}


def merged_block(model: Any, at: dict[str, int]) -> dict[str, str]:
    """spec/numerics.md §board-vision-mergers the block a merger reads: vis_ds_idx[d] for
    DeepStack merger d, the last block for the main merger."""
    c = model.tower.config
    last = len(model.tower.weights.blocks) - 1
    return {"x": f"vit.layer{c.deepstack_visual_indexes[at['d']] if 'd' in at else last}.out"}


def _pixels(model: Any, pixels: np.ndarray) -> np.ndarray:
    """A pixel buffer the tower takes (float32 [H', W', 3], whole patches), else ValueError."""
    try:
        model.tower.grid(pixels)
    except InvalidError as exc:
        raise ValueError(exc.detail) from exc
    return pixels


def geometry(model: Any, at: dict[str, int], pixels: np.ndarray) -> np.ndarray:
    return model.tower.geometry(_pixels(model, pixels))


def patch_embed(model: Any, at: dict[str, int], pixels: np.ndarray) -> np.ndarray:
    return model.tower.embed_patches(_pixels(model, pixels))


def positions(model: Any, at: dict[str, int], pe: np.ndarray, geo: np.ndarray) -> np.ndarray:
    gh, gw = _grid(geo)
    return model.tower.add_positions(_rows(model, _f32(pe, gh * gw, None)), gh, gw)


def rotary(model: Any, at: dict[str, int], geo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return model.tower.rotary(*_grid(geo))


def ln1(model: Any, at: dict[str, int], x: np.ndarray) -> np.ndarray:
    return model.tower.ln1(at["l"], _rows(model, x))


def qkv(model: Any, at: dict[str, int], n1: np.ndarray) -> np.ndarray:
    return model.tower.qkv(at["l"], _rows(model, n1))


def _heads(model: Any, a: np.ndarray) -> np.ndarray:
    c = model.tower.config
    return _f32(a, 3, c.num_heads, None, c.head_dim)


def rope(model: Any, at: dict[str, int], qkv: np.ndarray, cos: np.ndarray, sin: np.ndarray):
    qkv = _heads(model, qkv)
    hd = model.tower.config.head_dim
    return model.tower.rope(qkv, _f32(cos, qkv.shape[2], hd), _f32(sin, qkv.shape[2], hd))


def scores(model: Any, at: dict[str, int], roped: np.ndarray) -> np.ndarray:
    return model.tower.attention(_heads(model, roped))[1]


def attention(model: Any, at: dict[str, int], roped: np.ndarray) -> np.ndarray:
    return model.tower.attention(_heads(model, roped))[0]


def proj(model: Any, at: dict[str, int], att: np.ndarray) -> np.ndarray:
    return model.tower.proj(at["l"], _rows(model, att))


def residual(model: Any, at: dict[str, int], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return model.tower.residual(_rows(model, x), _f32(y, *x.shape))


def ln2(model: Any, at: dict[str, int], r1: np.ndarray) -> np.ndarray:
    return model.tower.ln2(at["l"], _rows(model, r1))


def fc1(model: Any, at: dict[str, int], n2: np.ndarray) -> np.ndarray:
    return model.tower.fc1(at["l"], _rows(model, n2))


def gelu_padded(model: Any, at: dict[str, int], f1: np.ndarray) -> np.ndarray:
    return model.tower.gelu_padded(at["l"], _rows(model, f1, model.tower.config.intermediate_size))


def fc2(model: Any, at: dict[str, int], act: np.ndarray) -> np.ndarray:
    padded = model.tower.weights.blocks[at["l"]].fc2.shape[1]
    return model.tower.fc2(at["l"], _rows(model, act, padded))


def merge(model: Any, at: dict[str, int], x: np.ndarray, geo: np.ndarray) -> np.ndarray:
    gh, gw = _grid(geo)
    return merge_windows(_rows(model, _f32(x, gh * gw, None)), gh, gw)


def merger_norm(model: Any, at: dict[str, int], m: np.ndarray) -> np.ndarray:
    return model.tower.merger_norm(_merger(at), _rows(model, m, 4 * model.tower.config.hidden_size))


def merger_fc1(model: Any, at: dict[str, int], n: np.ndarray) -> np.ndarray:
    return model.tower.merger_fc1(_merger(at), _rows(model, n, 4 * model.tower.config.hidden_size))


def merger_out(model: Any, at: dict[str, int], f1: np.ndarray) -> np.ndarray:
    mw, _ = model.tower.merger_weights(_merger(at))
    return model.tower.merger_out(_merger(at), _rows(model, f1, mw.fc2.shape[1]))
