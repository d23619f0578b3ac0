"""The Qwen3-VL forward pass: vision tower, multimodal prompt, MRoPE positions with images and
DeepStack (spec/models.md §qwen3-vl (b), (c); spec/numerics.md §vision-merge).

The text tower is ref/qwen3's decoder, block for block; this module only changes what goes in
(image-token rows replaced by the merger output before layer 0) and what happens between the
first layers (DeepStack features added at the image positions after text layers 0 … ds−1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from weightfile.ref.layers.batch import PositionIds
from weightfile.ref.layers.tokens import Vec, each
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook, as_rows, layer_name
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.decoder import KVCache, Qwen3Model
from weightfile.ref.qwen3.weights import ModelWeights
from weightfile.spec.errors import InvalidError
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .config import SpecialIds, VisionConfig, VisionWeights
from .vision import VisionInput, VisionOutput, VisionTower

#: The text-layer trace name of the DeepStack addition (layers.L.deepstack, L < ds).
DEEPSTACK_OP = "deepstack"


def expand_image_tokens(
    token_ids: Sequence[int], image_token_id: int, counts: Sequence[int]
) -> list[int]:
    """spec/models.md §qwen3-vl (c): each `image_token_id` stands for the next image and becomes
    that image's count of copies, as the Hugging Face processor expands its placeholder.
    `frontend.image.count` when placeholders and images differ in number."""
    places = sum(1 for t in token_ids if t == image_token_id)
    if places != len(counts):
        raise InvalidError(
            "frontend.image.count",
            f"{places} image placeholder(s) (id {image_token_id}) for {len(counts)} image(s)",
        )
    out: list[int] = []
    it = iter(counts)
    for t in token_ids:
        out += [t] * next(it) if t == image_token_id else [t]
    return out


def rope_index(
    token_ids: Sequence[int], image_token_id: int, grids: Sequence[tuple[int, int, int]], merge: int
) -> tuple[list[tuple[int, int, int]], int]:
    """spec/models.md §qwen3-vl (b) `get_rope_index`: (t, h, w) per token of an expanded prompt, and
    δ = (largest id) + 1 − (prompt length), the offset of every later token."""
    pos: list[tuple[int, int, int]] = []
    p, i, img = 0, 0, iter(grids)
    n = len(token_ids)
    while i < n:
        if token_ids[i] != image_token_id:
            pos.append((p, p, p))
            p, i = p + 1, i + 1
            continue
        j = i
        while j < n and token_ids[j] == image_token_id:
            j += 1
        while i < j:  # one run may hold several images when nothing separates them
            grid = next(img, None)
            if grid is None:
                raise InvalidError("frontend.image.count", "more image tokens than images")
            _, gh, gw = grid
            hh, ww = gh // merge, gw // merge
            if i + hh * ww > j:
                raise InvalidError(
                    "frontend.image.count",
                    f"an image of {hh * ww} tokens meets a run of {j - i} image tokens",
                )
            pos += [(p, p + r, p + c) for r in range(hh) for c in range(ww)]
            p += max(hh, ww)
            i += hh * ww
    if next(img, None) is not None:
        raise InvalidError("frontend.image.count", "fewer image tokens than images")
    top = max((max(t) for t in pos), default=-1)
    return pos, top + 1 - n


class ImagePrompt:
    """What a Qwen3-VL model does around its two towers, whatever engine runs them: the images
    attached for the next fresh sequence, the MRoPE positions (spec/models.md §qwen3-vl (b)) and the
    check of a prompt's image tokens against the images' rows. A subclass sets `text`, `vision`
    and `ids` and calls `start_images()`; fast/qwen3_vl reuses this class as it is."""

    text: Any  # Qwen3Model here, fast/qwen3's FastQwen3Model there: the same interface
    vision: Any  # VisionTower or FastVisionTower
    ids: SpecialIds

    def start_images(self) -> None:
        self.rope_delta = 0  # δ of the last prefill with images (spec/models.md §qwen3-vl (b))
        self.pending_images: Sequence[VisionInput] = ()

    def attach_images(self, images: Sequence[VisionInput]) -> None:
        """The images the next fresh sequence's prompt refers to (see `forward`)."""
        self.pending_images = tuple(images)

    @property
    def config(self) -> Qwen3Config:
        return self.text.config

    def new_cache(self) -> KVCache:
        return self.text.new_cache()

    def encode_images(
        self, images: Sequence[VisionInput], trace: TraceHook | None = None
    ) -> VisionOutput:
        return self.vision.forward(images, trace)

    def positions(
        self, token_ids: Sequence[int], images: Sequence[VisionInput], start: int
    ) -> PositionIds:
        """MRoPE ids of a prompt after `start` cached positions: get_rope_index on a fresh cache,
        text positions shifted by δ on a continued one."""
        if start == 0:
            grids = [im.grid_thw for im in images]
            merge = self.vision.config.spatial_merge_size
            pos, self.rope_delta = rope_index(token_ids, self.ids.image, grids, merge)
            return pos
        if images:
            raise InvalidError(
                "frontend.image.count", "images are taken in the first call of a sequence only"
            )
        base = start + self.rope_delta
        return [(p, p, p) for p in range(base, base + len(token_ids))]

    def image_prompt(
        self,
        token_ids: Sequence[int],
        start: int,
        position_ids: PositionIds | None,
        trace: TraceHook | None,
        images: Sequence[VisionInput] | None,
        vision_output: VisionOutput | None,
    ) -> tuple[list[int], VisionOutput | None, PositionIds]:
        """The image-token slots, the images' rows (encoded here unless given) and the positions
        of a prompt after `start` cached positions. Without `images`, the first call of a
        sequence takes the images attached with `attach_images` (how run and trace hand them
        over, so generation needs no change)."""
        if images is None:
            images = ()
            if start == 0:
                images, self.pending_images = self.pending_images, ()
        slots = [i for i, tok in enumerate(token_ids) if tok == self.ids.image]
        if images and vision_output is None:
            vision_output = self.encode_images(images, trace)
        n_rows = 0 if vision_output is None else len(vision_output.embeds)
        if len(slots) != n_rows:
            raise InvalidError(
                "frontend.image.count",
                f"{len(slots)} image tokens in the prompt, the images give {n_rows} rows",
            )
        return slots, vision_output, position_ids or self.positions(token_ids, images, start)


class Qwen3VLModel(ImagePrompt):
    """The text decoder of ref/qwen3 and the vision tower, bound to one numerics profile."""

    def __init__(
        self,
        text_config: Qwen3Config,
        text_weights: ModelWeights,
        vision_config: VisionConfig,
        vision_weights: VisionWeights,
        ids: SpecialIds,
        profile: NumericsProfile = CANONICAL,
    ) -> None:
        self.text = Qwen3Model(text_config, text_weights, profile)
        self.vision = VisionTower(vision_config, vision_weights, profile)
        self.ids = ids
        self.start_images()

    def forward(
        self,
        token_ids: Sequence[int],
        cache: KVCache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
        images: Sequence[VisionInput] | None = None,
        vision_output: VisionOutput | None = None,
    ) -> np.ndarray:
        """Logits float32 [T, vocab] of an expanded prompt (each image's tokens already in place,
        `expand_image_tokens`), continuing `cache` (images as `image_prompt` takes them)."""
        t = self.text
        slots, vision_output, pos = self.image_prompt(
            token_ids, cache.length, position_ids, trace, images, vision_output
        )

        def hook(name: str, rows: list[Vec]) -> None:
            if trace is not None:
                trace(name, as_rows(rows))

        caches = [cache] * len(token_ids)
        x = t.embed(token_ids)
        for r, s in enumerate(slots):  # masked_scatter: image rows in prompt order
            x[s] = list(vision_output.embeds[r])
        hook(EMBED, x)
        ds = () if vision_output is None else vision_output.deepstack
        for i, lw in enumerate(t.weights.layers):
            x = t.attention_block(i, lw, x, pos, caches, hook)
            x = t.mlp_block(i, lw, x, hook)
            if i < len(ds):  # spec/numerics.md §vision-merge: outside every norm, before the next
                # layer
                x = list(x)
                for r, s in enumerate(slots):
                    x[s] = t.kernels.add(x[s], list(ds[i][r]))
                hook(layer_name(i, DEEPSTACK_OP), x)
        k = t.kernels
        eps, final_norm = t.config.eps_f32, t.weights.final_norm
        n = each(lambda v: k.rmsnorm(v, final_norm, eps), x)
        hook(FINAL_NORM, n)
        head = t.weights.output_matrix()
        logits = each(lambda v: k.matvec(head, v), n)
        hook(LOGITS, logits)
        return as_rows(logits)


@dataclass(frozen=True)
class VLConfig:
    """What the family registry passes as `config` (weightfile/families/registry.py): the text
    config (its `vocab_size` is what the frontend checks ids against), the tower's, the special
    ids."""

    text: Qwen3Config
    vision: VisionConfig
    ids: SpecialIds

    @property
    def vocab_size(self) -> int:
        return self.text.vocab_size


def reference_model(config: VLConfig, weights: tuple[ModelWeights, VisionWeights]) -> Qwen3VLModel:
    """The registry's `reference` entry: (config, weights) of `bind_vqf.bind_family`."""
    tw, vw = weights
    return Qwen3VLModel(config.text, tw, config.vision, vw, config.ids)
