"""A tiny seeded Qwen3VLForConditionalGeneration checkpoint and its image, for the Qwen3-VL oracle
tests (tests/ref/qwen3_vl, tests/convert/test_qwen3_vl_vqf.py).

DeepStack indexes [0, 2] (non-empty, so both text layers receive a feature), vision intermediate 48
(padded to 64 columns in the file: the fc2 padding is exercised), a 4×4 position table (so the
bilinear resampling interpolates), a non-square 64×96 image (a 4×6 patch grid, 6 image tokens) and
a prompt with text on both sides of it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from weightfile.fast.backend import FAST

torch = pytest.importorskip("torch", reason="the oracle needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="the oracle needs the 'external' extra (transformers)"
)

IMAGE_ID, VIDEO_ID, VS_ID, VE_ID = 250, 251, 248, 249
#: The prompt before expansion: text, <vs>, the image placeholder, <ve>, text.
PROMPT = [1, 2, VS_ID, IMAGE_ID, VE_ID, 3, 4]
IMAGE_SHAPE = (64, 96)  # H, W: smart_resize keeps it (multiples of 32 inside the limits)
MIN_PIXELS, MAX_PIXELS = 1024, 65536

TEXT = dict(
    vocab_size=256, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6,
    rope_parameters={"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [4, 2, 2],
                     "mrope_interleaved": True},
    max_position_embeddings=512, tie_word_embeddings=True,
)  # fmt: skip
VISION = dict(
    depth=3, hidden_size=32, num_heads=2, intermediate_size=48, patch_size=16,
    temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=64, num_position_embeddings=16,
    deepstack_visual_indexes=[0, 2], hidden_act="gelu_pytorch_tanh", in_channels=3,
)  # fmt: skip


def hf_config(**vision_overrides):
    return transformers.Qwen3VLConfig(
        text_config=dict(TEXT),
        vision_config={**VISION, **vision_overrides},
        image_token_id=IMAGE_ID,
        video_token_id=VIDEO_ID,
        vision_start_token_id=VS_ID,
        vision_end_token_id=VE_ID,
        tie_word_embeddings=True,
    )


def build_model(seed: int = 0, **vision_overrides):
    """The seeded model; norm weights and biases moved off their init so that a swapped weight and
    bias, or a missing bias, changes the outputs."""
    torch.manual_seed(seed)
    m = transformers.Qwen3VLForConditionalGeneration(hf_config(**vision_overrides)).eval()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "norm" in n and n.endswith("weight"):
                p.add_(torch.randn_like(p) * 0.1)
            if n.endswith("bias"):
                p.normal_(0, 0.05)
    return m


def save_checkpoint(folder: Path, seed: int = 0, **vision_overrides) -> Path:
    build_model(seed, **vision_overrides).save_pretrained(folder)
    return folder


def image_array(seed: int = 1) -> np.ndarray:
    """uint8 [64, 96, 3] noise with a smooth gradient, so resizing has structure to keep."""
    rng = np.random.default_rng(seed)
    h, w = IMAGE_SHAPE
    grad = (np.arange(w)[None, :, None] * 2 + np.arange(h)[:, None, None]).astype(np.int64)
    return ((rng.integers(0, 128, (h, w, 3)) + grad) % 256).astype(np.uint8)


def load_hf(folder: Path):
    return transformers.Qwen3VLForConditionalGeneration.from_pretrained(
        folder, attn_implementation="eager", dtype=torch.float32
    ).eval()


_ROOT: list[Path] = []


def _root() -> Path:
    """One private folder per test process for the shared checkpoint and its imported file."""
    if not _ROOT:
        import atexit
        import shutil
        import tempfile

        _ROOT.append(Path(tempfile.mkdtemp(prefix="wf-qwen3vl-")))
        atexit.register(shutil.rmtree, _ROOT[0], True)
    return _ROOT[0]


def shared_checkpoint() -> Path:
    """The seed-0 checkpoint, saved once per process (the tests only read it)."""
    folder = _root() / "hf"
    if not (folder / "config.json").is_file():
        save_checkpoint(folder)
    return folder


def shared_vqf() -> Path:
    """shared_checkpoint() imported once as q8_0 legacy, with the fast codecs (same bytes)."""
    from weightfile.families.qwen3_vl.to_vqf import import_vl_checkpoint

    out = _root() / "q8_0.vqf"
    if not out.is_file():
        import_vl_checkpoint(shared_checkpoint(), out, backend=FAST)
    return out
