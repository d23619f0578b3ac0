"""The Qwen3-VL board model on the C kernels for the profile registry (spec/numerics.md
§board-vision-names): the fast dense board model of the text tower beside the fast board vision
tower, in the reference's `BoardVLModel`."""

from __future__ import annotations

from weightfile.fast.qwen3.board.model import bind_board_fast, fast_matrix_words
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.qwen3_vl.board.model import BoardVLModel
from weightfile.ref.vqf.read import VQFFile

from .tower import FastBoardVisionTower


def bind_board_vl_fast(vqf: VQFFile, threads: int = 1) -> BoardVLModel:
    """A VISION VQF bound for the fast kestrel-board engine (keep the file open while used)."""
    text = bind_board_fast(vqf, threads)
    config, weights = bind_vision(vqf, text.config.hidden_size, fast_matrix_words)
    image_id = int(vqf.header.arch["image_token_id"])
    return BoardVLModel(text, FastBoardVisionTower(config, weights, threads), image_id)
