"""Hyper-parameters and weights of the Qwen3-VL vision tower (spec/models.md §qwen3-vl)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, Matrix

#: The final merger's activations (spec/numerics.md §vision-gelu): exact erf, or the tanh form.
MERGER_GELUS = ("erf", "tanh")


@dataclass(frozen=True)
class VisionConfig:
    """The vision_config keys the tower needs (spec/models.md §qwen3-vl table)."""

    depth: int
    hidden_size: int  # D
    num_heads: int
    intermediate_size: int  # Iv
    out_hidden_size: int  # O, the text width
    num_position_embeddings: int  # S·S
    deepstack_visual_indexes: tuple[int, ...]
    patch_size: int = 16
    temporal_patch_size: int = 2
    spatial_merge_size: int = 2
    in_channels: int = 3
    rope_theta: float = 10000.0
    eps: float = 1e-6
    #: The family switches of spec/models.md §vision-variants: where the final merger's LayerNorm
    #: sits (False: over D on each patch before the 2×2 regrouping) and its activation. Qwen3-VL
    #: and Qwen3.5 agree on both; the DeepStack count above is what tells them apart.
    merger_postshuffle_norm: bool = False
    merger_gelu: str = "erf"

    def __post_init__(self) -> None:
        hd, side = self.head_dim, math.isqrt(self.num_position_embeddings)
        if self.hidden_size % self.num_heads or hd % 4:
            raise ValueError(f"head dim {self.hidden_size}/{self.num_heads} is not a multiple of 4")
        if side * side != self.num_position_embeddings:
            raise ValueError(f"{self.num_position_embeddings} position rows are not a square")
        if any(not 0 <= i < self.depth for i in self.deepstack_visual_indexes):
            raise ValueError(f"deepstack indexes {self.deepstack_visual_indexes} past the blocks")
        if self.merger_gelu not in MERGER_GELUS:
            raise ValueError(f"merger activation {self.merger_gelu!r} is none of {MERGER_GELUS}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def side(self) -> int:
        """S: the position table is S×S."""
        return math.isqrt(self.num_position_embeddings)

    @property
    def patch_dim(self) -> int:
        """Columns of a pixel_values row: 3·T·P·P."""
        return self.in_channels * self.temporal_patch_size * self.patch_size**2

    @property
    def merged_dim(self) -> int:
        """mi = D·merge²: the width of a merge window."""
        return self.hidden_size * self.spatial_merge_size**2


@dataclass(frozen=True)
class SpecialIds:
    """The token ids of the multimodal prompt (VQF arch, spec/vqf.md §arch-semantics)."""

    vision_start: int
    vision_end: int
    image: int
    video: int


@dataclass(frozen=True)
class VisionBlockWeights:
    """blocks.{i}: LayerNorms, fused qkv, proj and the MLP (spec/models.md §qwen3-vl step 4)."""

    norm1_w: np.ndarray
    norm1_b: np.ndarray
    qkv: Matrix  # [3D, D]
    qkv_b: np.ndarray
    proj: Matrix  # [D, D]
    proj_b: np.ndarray
    norm2_w: np.ndarray
    norm2_b: np.ndarray
    fc1: Matrix  # [Iv, D]
    fc1_b: np.ndarray
    fc2: Matrix  # [D, Iv padded to a multiple of 32 with zero columns]
    fc2_b: np.ndarray


@dataclass(frozen=True)
class MergerWeights:
    """merger.* or deepstack_merger_list.{j}.* (spec/models.md §qwen3-vl steps 5-6)."""

    norm_w: np.ndarray  # [D] (final merger, pre-shuffle) or [mi] (DeepStack, post-shuffle)
    norm_b: np.ndarray
    fc1: DenseMatrix  # [mi, mi]
    fc1_b: np.ndarray
    fc2: DenseMatrix  # [O, mi]
    fc2_b: np.ndarray


@dataclass(frozen=True)
class VisionWeights:
    patch_embed: DenseMatrix  # [D, 3·T·P·P]
    patch_bias: np.ndarray
    pos_embed: np.ndarray  # float32 [S·S, D]
    blocks: tuple[VisionBlockWeights, ...]
    merger: MergerWeights
    deepstack: tuple[MergerWeights, ...]
