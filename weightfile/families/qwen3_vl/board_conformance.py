"""Board vision model cases (`vqf-board-vl-model`): a tiny Qwen3-VL VQF (flag VISION) and an
image as raw RGB pixels -> the board vision tower's geometry, its visual tokens and DeepStack
features (hex) and the SHA-256 of every intermediate the engine dumps, under the `kestrel-board`
numerics profile (spec/numerics.md §board-vision; README "Board vision model cases").

The geometry is chosen to reach the engine's defects: an FFN width of 40 (the padded-stride
buffer, 40 -> 64) and an odd patch grid (the merge drops a row), from a picture above the
position table's cap (scaled down). The score tree's dropped products need a tower at least 96
wide (head_dim 24), whose F32 mergers would make the case several times larger; the property
tests cover them (tests/ref/qwen3_vl/board). The enlarging branch of the preprocessing is the
packs' (tests/data/kestrel-board-v2, 70x100 -> 80x112).
The expected answer is the reference board tower (ref/qwen3_vl/board), which reproduces the
engine's own packs bit for bit (tests/ref/qwen3_vl/board); the `fast` adapter answers with the
fast board tower (fast/qwen3_vl/board).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.families.qwen3.to_vqf import arch_from_config, build_tensors
from weightfile.families.qwen3_vl.conformance import (
    VL_HF,
    Image,
    read_images,
    sha256,
    text_state_dict,
    vision_state_dict,
)
from weightfile.families.qwen3_vl.to_vqf import build_vision_tensors, text_config, vision_arch
from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3_vl.bind_vqf import bind_vision
from weightfile.ref.qwen3_vl.board.preprocess import board_pixels
from weightfile.ref.qwen3_vl.board.tower import BoardVisionTower
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: The tiny Qwen3-VL of the board cases: the board's text limits (head_dim 32, Q8_0 8x8 tiles)
#: and a vision tower 32 wide (one head), an FFN of 40, 16-pixel patches and a 4x4 position
#: table; one text layer (the case runs the tower only).
BOARD_VL_HF: dict[str, Any] = copy.deepcopy(VL_HF)
BOARD_VL_HF["tie_word_embeddings"] = False
BOARD_VL_HF["text_config"].update(
    hidden_size=64, intermediate_size=128, head_dim=32, num_hidden_layers=1
)
BOARD_VL_HF["text_config"]["rope_parameters"]["mrope_section"] = [8, 4, 4]
BOARD_VL_HF["vision_config"].update(
    depth=2, hidden_size=32, num_heads=1, intermediate_size=40, patch_size=16,
    out_hidden_size=64, num_position_embeddings=16, deepstack_visual_indexes=[0],
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class BoardVLCase:
    name: str
    meaning: str
    seed: int
    image: Image


CASES = (
    BoardVLCase("over-the-cap", "a 90x130 picture (6x9 = 54 patches, over the cap of 16): "
                "s = sqrt(16/54), scaled to 48x64 (3x4 patches, the last row in no token), 2 "
                "tokens", 41, Image(90, 130, 421)),
)  # fmt: skip


def write_model(path: Path, case: BoardVLCase) -> Path:
    """The case's file through the importer's own functions (text Q8_0 8x8 tiled, vision Q8_0
    legacy; spec/vqf.md §text-tensors, §vision-tensors)."""
    merged, c = text_config(BOARD_VL_HF)
    arch = arch_from_config(merged, c) | vision_arch(BOARD_VL_HF, c)
    flags = file_flags(QType.Q8_0, "tiled") | VQFFlag.VISION
    sd = text_state_dict(case.seed, c)
    sd["lm_head.weight"] = sd["model.embed_tokens.weight"][::-1].copy()
    tensors = build_tensors(sd, c, QType.Q8_0, flags, FAST)
    tensors += build_vision_tensors(vision_state_dict(case.seed, arch), arch, FAST)
    return write_vqf(path, arch=arch, tensors=tensors, flags=int(flags))


def hexed(a: np.ndarray) -> dict[str, Any]:
    return {
        "dtype": "float32",
        "shape": [str(n) for n in a.shape],
        "hex": np.ascontiguousarray(a, dtype="<f4").tobytes().hex(),
    }


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """The protocol's answer (README "Board vision model cases")."""
    with open_vqf(folder / case["model"]) as vqf:
        config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]))
    if backend is FAST:
        from weightfile.fast.qwen3_vl.board.tower import FastBoardVisionTower

        tower: BoardVisionTower = FastBoardVisionTower(config, weights)
    else:
        tower = BoardVisionTower(config, weights)
    (rgb,) = read_images(folder, case)
    arrays: dict[str, np.ndarray] = {}
    pixels = board_pixels(rgb, config.patch_size, config.num_position_embeddings)
    out = tower.forward(pixels, lambda name, value: arrays.__setitem__(name, np.asarray(value)))
    geometry = arrays.pop("vision.geometry_hw_grid_ntok")
    return {
        "geometry": [str(int(n)) for n in geometry],
        "merger_out": hexed(out.merger_out),
        "deepstack": [hexed(d) for d in out.deepstack],
        "activations": {n: sha256(arrays[n].astype("<f4")) for n in sorted(arrays)},
    }


def case_answer(backend: Backend, folder: Path) -> dict[str, Any]:
    """The built-in adapter's answer to a `vqf-board-vl-model` case folder."""
    return answer(backend, folder, read_case(folder))


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every board vision model case."""
    for case in CASES:
        folder = scratch / case.name
        folder.mkdir()
        path = write_model(folder / "model.vqf", case)
        im = case.image
        files = {"model.vqf": path.read_bytes(), "image0.rgb": im.pixels().tobytes()}
        (folder / "image0.rgb").write_bytes(files["image0.rgb"])
        images = [{"file": "image0.rgb", "height": str(im.height), "width": str(im.width)}]
        fields = {"expect": "accept", "model": "model.vqf", "images": images,
                  "image_preprocess": "board", "numerics": "kestrel-board",
                  "description": case.meaning}  # fmt: skip
        want = answer(REFERENCE, folder, fields)
        yield f"{prefix}/board-vl-model/qwen3_vl/{case.name}", fields, files, want
