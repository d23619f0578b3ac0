"""A tiny random transformers `Qwen3_5ForConditionalGeneration` checkpoint folder: the text model
of tests/strategies/qwen35_checkpoint.py with a 2-block vision tower, every weight a bf16 value,
a BPE tokenizer with the four image tokens, and the processor's two config files.

Shared by the multimodal `.ninfer` tests (spec/models.md §qwen35-vision); needs torch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from strategies.qwen35_checkpoint import SIZES, TEMPLATE, round_to_bf16
from strategies.qwen35_moe_checkpoint import SIZES as MOE_SIZES
from strategies.tiny_vqf import bpe_tokenizer

torch = pytest.importorskip("torch", reason="the import check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="the import check needs the 'external' extra (transformers)"
)

VISION = dict(
    depth=2, hidden_size=32, intermediate_size=48, num_heads=2, patch_size=4,
    temporal_patch_size=2, spatial_merge_size=2, num_position_embeddings=16, out_hidden_size=64,
)  # fmt: skip
TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
#: The processor's settings for this tower (patch 4, so small images give several windows).
PROCESSOR = dict(
    patch_size=4, merge_size=2, temporal_patch_size=2, image_mean=[0.5] * 3, image_std=[0.5] * 3,
    min_pixels=64, max_pixels=4096,
)  # fmt: skip


def tokenizer():
    """The tiny BPE tokenizer with the four image tokens added after its vocabulary."""
    tok = bpe_tokenizer()
    tok.add_special_tokens(list(TOKENS))
    return tok


def ids() -> dict[str, int]:
    tok = tokenizer()
    return {t: tok.token_to_id(t) for t in TOKENS}


def hf_config(moe: bool = False, vision: dict | None = None) -> transformers.Qwen3_5Config:
    """The dense checkpoint's config, or with `moe` the Qwen3.5-MoE one (the text model of
    tests/strategies/qwen35_moe_checkpoint.py under the same tower and tokens); `vision`
    replaces entries of the tower's config."""
    found = ids()
    text = dict(
        MOE_SIZES if moe else SIZES,
        vocab_size=tokenizer().get_vocab_size(),
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "partial_rotary_factor": 0.5, "mrope_section": [2, 1, 1],
                         "mrope_interleaved": True},
        tie_word_embeddings=False,
        eos_token_id=2,
    )  # fmt: skip
    config = transformers.Qwen3_5MoeConfig if moe else transformers.Qwen3_5Config
    return config(
        text_config=text,
        vision_config=VISION | (vision or {}),
        image_token_id=found["<|image_pad|>"],
        video_token_id=found["<|video_pad|>"],
        vision_start_token_id=found["<|vision_start|>"],
        vision_end_token_id=found["<|vision_end|>"],
        tie_word_embeddings=False,
        attn_implementation="eager",
    )


def image_processor():
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    return Qwen2VLImageProcessorPil(**PROCESSOR)


def write_checkpoint(
    folder: Path, seed: int, moe: bool = False, vision: dict | None = None
) -> torch.nn.Module:
    """save_pretrained of a random model with bf16 weights (norms, biases and the position table
    moved off their neutral values; with `moe`, the router and experts spread as in
    qwen35_moe_checkpoint), plus tokenizer, template and processor files."""
    torch.manual_seed(seed)
    kind = "Qwen3_5MoeForConditionalGeneration" if moe else "Qwen3_5ForConditionalGeneration"
    model = getattr(transformers, kind)(hf_config(moe, vision)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias") or "pos_embed" in name:
                p.add_(0.2 * torch.randn_like(p))
            if name.endswith(("mlp.gate.weight", "experts.gate_up_proj", "experts.down_proj")):
                p.copy_(0.2 * torch.randn_like(p))  # initialised at zero / tiny: spread them
            if "visual" in name and "weight" in name and p.ndim >= 2:
                p.mul_(2.0)  # transformers' 0.02 init leaves the tower's rows near zero
            if not name.endswith(("A_log", "dt_bias")):
                round_to_bf16(p)
            else:
                p.add_(1e-3 * torch.randn_like(p))
    model.save_pretrained(folder)
    tokenizer().save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    image_processor().save_pretrained(folder)  # preprocessor_config.json
    (folder / "video_preprocessor_config.json").write_text(json.dumps(PROCESSOR))
    return model


def image_array(seed: int = 7, shape: tuple[int, int] = (24, 40)) -> np.ndarray:
    """A seeded RGB picture, smooth plus noise, so resizing matters."""
    rng = np.random.default_rng(seed)
    h, w = shape
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], axis=-1)
    return np.clip(base + rng.normal(0, 30, (h, w, 3)), 0, 255).astype(np.uint8)
