"""The Qwen3-VL family's board model for the profile registry (spec/numerics.md §board-vision,
§board-vision-names, §board-vl-prefill): the dense board text model of the file's text tower
beside the board vision tower.

A text-only prompt runs the dense board model (spec/numerics.md §board-forward) unchanged. A
prompt with images runs every image through the tower, then the engine's multimodal prefill
(visual tokens in the image rows, interleaved MRoPE, the multimodal INT8 attention, DeepStack
after the first text layers; `prefill.py`) and decode steps at the MRoPE text position. That
path is read from the engine's source and not checked against engine logits (no pack has any).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.ref.layers.sampling import greedy
from weightfile.ref.qwen3.board.model import bind_board
from weightfile.ref.qwen3.board.model import generate as text_generate
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import UnsupportedError

from .prefill import VisualRows, decode_at, mrope_positions, multimodal_prefill
from .tower import BoardVisionTower

F32 = np.float32


@dataclass
class BoardVLModel:
    """`text`: the dense board model (ref or fast); `tower`: the board vision tower (ref or
    fast, the same `forward`). Images wait in `pending` (pixel buffers [H', W', 3], the engine's
    preprocessing) until `vision_arrays` runs them."""

    text: Any
    tower: Any
    image_token_id: int = -1
    pending: list[np.ndarray] = field(default_factory=list)

    @property
    def config(self):
        """The text tower's config (the session reads its vocabulary size)."""
        return self.text.config

    def new_cache(self):
        return self.text.new_cache()

    def attach_board_images(self, pixels: Sequence[np.ndarray]) -> None:
        """Images for the next `vision_arrays`, each preprocessed by the engine's recipe
        (ref/qwen3_vl/board/preprocess.py)."""
        self.pending = [np.asarray(p, F32) for p in pixels]

    def vision_arrays(self) -> dict[str, np.ndarray]:
        """spec/numerics.md §board-vision-names every attached image through the tower, every
        intermediate under the engine dumps' names (a second image's prefixed `image1.`, …)."""
        return self.encode_pending()[0]

    def encode_pending(self) -> tuple[dict[str, np.ndarray], list[Any]]:
        """(the tower's arrays of every attached image, as `vision_arrays` names them; each
        image's `BoardVisionOutput`), and the images are consumed."""
        out: dict[str, np.ndarray] = {}
        encoded = []
        for i, pixels in enumerate(self.pending):
            prefix = f"image{i}." if i else ""

            def keep(name: str, value: np.ndarray, prefix: str = prefix) -> None:
                out[prefix + name] = np.array(value, dtype=np.asarray(value).dtype)

            encoded.append(self.tower.forward(pixels, keep))
        self.pending = []
        return out, encoded


def generate(
    model: BoardVLModel,
    prompt: Sequence[int],
    steps: int,
    path: str = "prefill",
    ops: bool = False,
    stop_ids: frozenset[int] = frozenset(),
) -> dict[str, np.ndarray]:
    """spec/numerics.md §board-prompts the text prompt path of the dense board model; with
    images, spec/numerics.md §board-vl-prefill (the batched prefill only: the engine's decode
    path takes no images)."""
    if not model.pending:
        return text_generate(model.text, prompt, steps, path, ops, stop_ids)
    if path != "prefill":
        raise UnsupportedError(
            "vqf.bind.unsupported",
            "the board engine takes images in its batched multimodal prefill only, not "
            "token by token (spec/numerics.md §board-vl-prefill): --prompt-path prefill",
            path="--prompt-path",
        )
    return image_generate(model, prompt, steps, ops, stop_ids)


def image_generate(
    model: BoardVLModel, prompt: Sequence[int], steps: int, ops: bool, stop_ids: frozenset[int]
) -> dict[str, np.ndarray]:
    """spec/numerics.md §board-vl-prefill the tower's arrays of every attached image, the
    multimodal prefill's logits and greedy decode steps at the MRoPE text position, named as
    `generate` names them (ops: the first decode step's intermediates)."""
    c = model.tower.config
    cell = c.patch_size * c.spatial_merge_size  # an odd grid's last row or column: no token
    grids = [(p.shape[0] // cell, p.shape[1] // cell) for p in model.pending]
    arrays, encoded = model.encode_pending()
    vis = visual_rows(encoded)
    positions = mrope_positions(prompt, model.image_token_id, grids)
    cache = model.text.new_cache()
    out = dict(arrays)
    logits = multimodal_prefill(model.text, list(prompt), positions, vis, cache)
    out["prefill.logits"] = logits
    tokens: list[int] = []
    nxt = greedy(logits)
    for k in range(steps):
        if nxt in stop_ids:
            break
        tokens.append(nxt)
        rec = ops_recorder(out, "decode.step0.") if ops and k == 0 else _ignore
        logits = decode_at(model.text, nxt, cache, positions.next_text + k, rec)
        out[f"decode.step{k}.logits"] = logits
        nxt = greedy(logits)
    out["decode.tokens"] = np.array(tokens, dtype=np.int32)
    return out


def visual_rows(encoded: Sequence[Any]) -> VisualRows:
    """Every image's visual tokens and DeepStack features, concatenated in image order."""
    tokens = np.concatenate([o.merger_out for o in encoded]).astype(F32)
    count = len(encoded[0].deepstack)
    ds = tuple(np.concatenate([o.deepstack[d] for o in encoded]).astype(F32) for d in range(count))
    return VisualRows(tokens, ds)


def ops_recorder(out: dict[str, np.ndarray], prefix: str):
    return lambda name, v: out.__setitem__(prefix + name, np.array(v, F32))


def _ignore(name: str, value: np.ndarray) -> None:
    pass


def bind_board_vl(vqf: VQFFile) -> BoardVLModel:
    """A VISION VQF bound for the kestrel-board profile: the dense board model of its text tower
    and the board vision tower of its vision tensors."""
    text = bind_board(vqf)
    config, weights = bind_vision(vqf, text.config.hidden_size)
    image_id = int(vqf.header.arch["image_token_id"])
    return BoardVLModel(text, BoardVisionTower(config, weights), image_id)
