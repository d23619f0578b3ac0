"""The Qwen3-VL family's board model for the profile registry (spec/numerics.md §board-vision,
§board-vision-names): the dense board text model of the file's text tower beside the board
vision tower.

The engine's multimodal prefill (visual tokens in the image rows, DeepStack after the first
text layers) was not rebuilt for the oracle packs, so it is not reproduced: a prompt with images
runs the vision tower only (`vision_arrays`) and `generate` refuses it; a text-only prompt runs
the dense board model (spec/numerics.md §board-forward) unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.ref.qwen3.board.model import bind_board
from weightfile.ref.qwen3.board.model import generate as text_generate
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import UnsupportedError

from .tower import BoardVisionTower

F32 = np.float32


@dataclass
class BoardVLModel:
    """`text`: the dense board model (ref or fast); `tower`: the board vision tower (ref or
    fast, the same `forward`). Images wait in `pending` (pixel buffers [H', W', 3], the engine's
    preprocessing) until `vision_arrays` runs them."""

    text: Any
    tower: Any
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
        out: dict[str, np.ndarray] = {}
        for i, pixels in enumerate(self.pending):
            prefix = f"image{i}." if i else ""

            def keep(name: str, value: np.ndarray, prefix: str = prefix) -> None:
                out[prefix + name] = np.array(value, dtype=np.asarray(value).dtype)

            self.tower.forward(pixels, keep)
        self.pending = []
        return out


def generate(
    model: BoardVLModel,
    prompt: Sequence[int],
    steps: int,
    path: str = "prefill",
    ops: bool = False,
    stop_ids: frozenset[int] = frozenset(),
) -> dict[str, np.ndarray]:
    """spec/numerics.md §board-prompts the text prompt path of the dense board model; a prompt
    with images is refused (spec/numerics.md §board-vision-names: not reproduced)."""
    if model.pending:
        raise UnsupportedError(
            "vqf.bind.unsupported",
            "the kestrel-board profile does not reproduce the engine's text tower with images "
            "(spec/numerics.md §board-vision-names); `weightfile trace` writes the vision "
            "tower's arrays",
            path="--image",
        )
    return text_generate(model.text, prompt, steps, path, ops, stop_ids)


def bind_board_vl(vqf: VQFFile) -> BoardVLModel:
    """A VISION VQF bound for the kestrel-board profile: the dense board model of its text tower
    and the board vision tower of its vision tensors."""
    text = bind_board(vqf)
    config, weights = bind_vision(vqf, text.config.hidden_size)
    return BoardVLModel(text, BoardVisionTower(config, weights))
