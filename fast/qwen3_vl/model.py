"""The fast Qwen3-VL forward pass, bit for bit ref/qwen3_vl/model.py (spec/models.md §qwen3-vl (b),
(c); spec/numerics.md §vision-merge).

The text tower is fast/qwen3's FastQwen3Model, wrapped, not changed: a prompt that carries images
runs its per-layer path (image rows scattered before layer 0, DeepStack feature j added at the
image positions after text layer j), every other call (text-only prompts, the decode steps after
an image prefill) is its ordinary forward, so an untraced one is one C call for the whole stack.
Positions are the reference's `rope_index` on a fresh cache and text positions shifted by δ
after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast.layers.norm import norm_project
from weightfile.fast.qwen3.decoder import FastKVCache, FastQwen3Model
from weightfile.ref.layers.batch import PositionIds, gather_requests
from weightfile.ref.layers.trace import EMBED, FINAL_NORM, LOGITS, TraceHook, layer_name
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3_vl.config import SpecialIds, VisionConfig
from weightfile.ref.qwen3_vl.model import DEEPSTACK_OP, ImagePrompt
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionOutput
from weightfile.spec.numerics.profile import CANONICAL, NumericsProfile

from .vision import FastVisionTower


class FastQwen3VLModel(ImagePrompt):
    """FastQwen3Model and FastVisionTower on one open VISION VQF; the reference's image prompt
    (ref/qwen3_vl/model.py's ImagePrompt: attached images, positions, the image-count check)."""

    def __init__(
        self,
        text_config: Qwen3Config,
        text_weights,
        vision_config: VisionConfig,
        vision_weights,
        ids: SpecialIds,
        profile: NumericsProfile = CANONICAL,
        threads: int = 1,
    ) -> None:
        self.text = FastQwen3Model(text_config, text_weights, profile, threads)
        self.vision = FastVisionTower(vision_config, vision_weights, threads)
        self.ids = ids
        self.start_images()

    @property
    def threads(self) -> int:
        return self.text.threads

    def forward(
        self,
        token_ids: Sequence[int],
        cache: FastKVCache,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
        images: Sequence[VisionInput] | None = None,
        vision_output: VisionOutput | None = None,
    ) -> np.ndarray:
        """Logits float32 [T, vocab] of an expanded prompt, continuing `cache` (images as the
        reference's `image_prompt` takes them)."""
        slots, vision_output, pos = self.image_prompt(
            token_ids, cache.length, position_ids, trace, images, vision_output
        )
        if vision_output is None:  # no image rows: the text decoder as it is
            return self.text.forward(token_ids, cache, pos, trace)
        return self._forward_images(token_ids, cache, pos, trace, slots, vision_output)

    def _forward_images(self, token_ids, cache, pos, trace, slots, vo: VisionOutput) -> np.ndarray:
        """The per-layer path with the image rows and the DeepStack additions."""
        t = self.text
        tokens, pos, caches = gather_requests([(token_ids, cache, pos)])
        at = list(range(cache.length, cache.length + len(tokens)))

        def hook(name: str, rows: np.ndarray) -> None:
            if trace is not None:
                trace(name, np.array(rows, dtype=np.float32).reshape(len(tokens), -1))

        layer_hook = None if trace is None else hook
        x = t.embed(tokens)
        x[slots] = vo.embeds  # masked_scatter: image rows in prompt order
        hook(EMBED, x)
        cache.reserve(cache.length + len(tokens))
        cos, sin = t.cos_sin(pos)
        for i, lw in enumerate(t.weights.layers):
            x = t.attention_block(i, lw, x, cos, sin, at, caches, layer_hook)
            x = t.mlp_block(i, lw, x, layer_hook)
            if i < len(vo.deepstack):  # spec/numerics.md §vision-merge, after the FFN residual
                x = x.copy()
                x[slots] = x[slots] + vo.deepstack[i]
                hook(layer_name(i, DEEPSTACK_OP), x)
        n, (logits,) = norm_project(x, t.weights.final_norm, t.eps, (t.weights.lm_head,), t.threads)
        hook(FINAL_NORM, n)
        hook(LOGITS, logits)
        cache.length += len(tokens)
        return logits
