"""The `kestrel-board` profile's rows of `weightfile bench --profile kestrel-board` (issue 31):
the board models timed beside the canonical fast engine on the same file, in the same run.

* text: the profile's fast model of the file's text family (weightfile/profiles.py; a Qwen3-VL
  file's text tower is the dense board model, spec/numerics.md §board-forward; a Qwen3-MoE
  file's the board MoE model, spec/numerics.md §board-moe-model) through the same pp/tg tests
  as the canonical rows: a ppN test is the board's batched prefill (`prefill`, logits of the
  last token), a tgN test N single-token steps (`decode_step`, INT8 KV cache),
  spec/numerics.md §board-prompts;
* image: a Qwen3-VL file's board vision tower on the C kernels (fast/qwen3_vl/board,
  spec/numerics.md §board-vision) encoding the bench's seeded 448×448 picture after the
  engine's own preprocessing (spec/numerics.md §board-vision-preprocess: on the Qwen3-VL-2B
  geometry the same 28×28 grid, 784 patches and 196 tokens as the canonical encode), every
  DeepStack merger included.

The rows carry `profile: "kestrel-board"`; the ratios (board ÷ canonical tokens/s, board ÷
canonical seconds per image) are taken per thread count between rows of this one run. The
board's bits do not depend on the thread count, so threads only change the time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from weightfile import profiles
from weightfile.families import vqf_family
from weightfile.ref.vqf.read import VQFFile

from . import engines, measure
from .progress import Progress
from .vision import IMAGE_SEED, IMAGE_SIDE, MAX_REPETITIONS, encode_row, tower_config, work_of

BOARD_TEXT = (
    "kestrel-board rows: the board's own arithmetic (spec/numerics.md §board), bit for bit the "
    "RK3588 engine's; ppN is its batched prefill (last token's logits), tgN its single-token "
    "decode step with the INT8 KV cache; board_decode_ratio = board tg t/s ÷ canonical tg t/s "
    "at the same thread count, in this run"
)
BOARD_IMAGE = (
    "image encode, kestrel-board: the same seeded picture through the engine's preprocessing "
    "(nearest resize, p/127.5 − 1) and the board vision tower on the C kernels (the board's "
    "operation order, one output a vector lane on the AVX2 / AVX-512 / NEON paths; the "
    "softmax's expf and the LayerNorms stay scalar); image_encode.board.encode_ratio = board "
    "seconds ÷ canonical fast seconds at the same thread count, in this run"
)


def profile_for(vqf: VQFFile, name: str) -> profiles.Profile:
    """The profile row `name`, after checking it runs the file's family (the profile's typed
    refusal, `vqf.bind.unsupported`, otherwise) — before anything is measured."""
    profile = profiles.profile_named(name)
    profile.require_container("vqf")
    profile.family_models(vqf_family(vqf))
    return profile


class BoardForward:
    """A board text model behind the bench's `forward(tokens, cache[, logits])`: with
    `logits="last"` (a ppN test, weightfile/bench/engines.py `forward_prompt`) the batched
    prefill, else each token through the decode step (a tgN test)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def new_cache(self) -> Any:
        return self.model.new_cache()

    def forward(self, tokens: Sequence[int], cache: Any, logits: str | None = None) -> Any:
        if logits == "last":
            return self.model.prefill(list(tokens), cache)
        return [self.model.decode_step(int(t), cache) for t in tokens][-1]


def with_threads(model: Any, threads: int) -> Any:
    """The same bound model with another thread count (the weights are shared, not re-read)."""
    return dataclasses.replace(model, threads=threads)


@dataclasses.dataclass(frozen=True)
class BoundText:
    """A profile's fast text model of one file (`bind_text`)."""

    profile: profiles.Profile
    model: Any


def bind_text(vqf: VQFFile, profile: profiles.Profile | None) -> BoundText | None:
    """The profile's fast model of the file's text family (None for no profile): its geometry
    checks refuse a file the board's kernels do not cover (`vqf.bind.unsupported`) before
    anything is timed."""
    if profile is None:
        return None
    return BoundText(profile, profile.fast_model(engines.text_family(vqf), vqf, threads=1))


def text_rows(vqf: VQFFile, bound: BoundText | None, plan: Any, bar: Progress) -> list[Any]:
    """The board's pp and tg tests at each thread count on the bound model (`bind_text`; none
    without one), as `report.fast_rows` runs the canonical ones; each row's engine is "fast",
    its profile the board's."""
    if bound is None:
        return []
    profile = bound.profile
    vocab = int(vqf.header.arch["vocab_size"])
    rows = []
    for n in plan.threads:
        model = BoardForward(with_threads(bound.model, n))
        for n_prompt, n_gen, n_depth in plan.runs:
            bar.phase(f"{profile.name} ×{n} {measure.label_of(n_prompt, n_gen, n_depth)}")
            row = measure.run_row(model, "fast", n, vocab, n_prompt, n_gen, plan.repetitions,
                                  bar.tick, n_depth)  # fmt: skip
            rows.append(dataclasses.replace(row, profile=profile.name))
    return rows


def decode_ratio(tests: list[dict[str, Any]], board: str) -> dict[str, float] | None:
    """Board ÷ canonical fast tokens/s of the first tg test (at its depth), per thread count
    both ran."""
    fast = [t for t in tests if t["engine"] == "fast" and t["n_gen"]]
    if not fast:
        return None
    first = (fast[0]["n_gen"], fast[0].get("n_depth", 0))
    rate = {
        (t["profile"], t["threads"]): t["avg_tokens_per_s"]
        for t in fast
        if (t["n_gen"], t.get("n_depth", 0)) == first
    }
    return {
        str(n): r / rate[("canonical", n)]
        for (p, n), r in rate.items()
        if p == board and ("canonical", n) in rate
    } or None


def add_decode_ratio(report: dict[str, Any], profile: profiles.Profile | None) -> list[str]:
    """The report's `board_decode_ratio` (with a board profile only); returns its note."""
    if profile is None:
        return []
    report["board_decode_ratio"] = decode_ratio(report["tests"], profile.name)
    return [BOARD_TEXT]


def board_tower(vqf: VQFFile) -> Any:
    """The fast board vision tower of a Qwen3-VL file (its weights through the fast codecs)."""
    from weightfile.fast.qwen3.board.model import fast_matrix_words
    from weightfile.fast.qwen3_vl.board.tower import FastBoardVisionTower
    from weightfile.ref.qwen3_vl.bind_vqf import bind_vision

    config, weights = bind_vision(vqf, int(vqf.header.arch["dim"]), fast_matrix_words)
    return FastBoardVisionTower(config, weights)


def board_pixels_of(vqf: VQFFile, side: int) -> np.ndarray:
    """The bench's seeded side×side picture after the engine's preprocessing (float32
    [H', W', 3], spec/numerics.md §board-vision-preprocess)."""
    from weightfile.ref.qwen3_vl.board.preprocess import board_pixels

    arch = vqf.header.arch
    c = tower_config(arch)
    rgb = np.random.default_rng(IMAGE_SEED).integers(0, 256, (side, side, 3), dtype=np.uint8)
    return board_pixels(rgb, c.patch_size, int(arch["vis_max_pos"]))


def timed_board_encode(tower: Any, pixels: np.ndarray) -> float:
    import time

    start = time.perf_counter()
    tower.forward(pixels)
    return time.perf_counter() - start


def image_rows(
    vqf: VQFFile, threads: Sequence[int], repetitions: int, side: int = IMAGE_SIDE
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the board image's geometry, one encode row per thread count) of the board tower."""
    tower = board_tower(vqf)
    c = tower.config
    pixels = board_pixels_of(vqf, side)
    gh, gw = pixels.shape[0] // c.patch_size, pixels.shape[1] // c.patch_size
    tokens = (gh // c.spatial_merge_size) * (gw // c.spatial_merge_size)
    work = work_of(c, gh * gw)
    warm = pixels[: 2 * c.patch_size, : 2 * c.patch_size]  # one merge window: loads the kernels
    rows = []
    for n in threads:
        tower.threads = n
        tower.forward(warm)
        samples = [
            timed_board_encode(tower, pixels) for _ in range(min(repetitions, MAX_REPETITIONS))
        ]
        row = encode_row("fast", n, "measured", samples)
        rows.append(
            row | {"profile": "kestrel-board", "gflop_per_s": 2 * work.total / row["seconds"] / 1e9}
        )
    image = {"side": side, "preprocess": "board", "pixels_hw": list(pixels.shape[:2]),
             "grid": [1, gh, gw], "patches": gh * gw, "tokens": tokens}  # fmt: skip
    return image, rows


def add_image_rows(section: dict[str, Any], vqf: VQFFile, threads: Sequence[int], reps: int,
                   side: int = IMAGE_SIDE) -> None:  # fmt: skip
    """The board tower's rows into the report's `image_encode` section, beside the canonical
    rows (each row then says its profile), with the board image and the per-thread ratio."""
    for r in section["rows"]:
        r.setdefault("profile", "canonical")
    image, rows = image_rows(vqf, threads, reps, side)
    canonical = {r["threads"]: r["seconds"] for r in section["rows"] if r["engine"] == "fast"}
    section["rows"] += rows
    section["board"] = {
        "image": image,
        "encode_ratio": {
            str(r["threads"]): r["seconds"] / canonical[r["threads"]]
            for r in rows
            if r["threads"] in canonical
        }
        or None,
    }
