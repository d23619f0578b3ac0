"""A stored Qwen3.5 parameter as the blocks both containers share, so that `.ninfer` ↔ GGUF copies
blocks instead of requantising them (spec/ninfer3.md §qwen35-gguf).

`Stored` holds one parameter as `q8` (int8 codes [.., N, K] and binary16 scale words, one per 32
codes: `q8_g32_fp16` and GGUF Q8_0 decode alike, scale × code in one binary32 multiply), `bf16`
(the 16-bit words) or `f32` values. Row gathers, row stacking and column-block permutations keep
the blocks; GGUF bytes are made from them (`gguf_array`), and `.ninfer` words back
(`ninfer_words`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.spec.errors import UnsupportedError

Q8_GROUP = 32
REQUANTIZE_RULE = "qwen35.gguf.requantize"


@dataclass(frozen=True)
class Stored:
    """One parameter's blocks (module docstring)."""

    kind: str  # "q8" | "bf16" | "f32"
    data: np.ndarray  # q8: int8 codes; bf16: uint16 words; f32: float32 values
    scales: np.ndarray | None = None  # q8: uint16 binary16 words [.., N, K / 32]

    def rows(self, index: np.ndarray) -> Stored:
        scales = None if self.scales is None else self.scales[..., index, :]
        return Stored(self.kind, self.data[..., index, :], scales)

    def vector(self, index: np.ndarray) -> Stored:
        return Stored(self.kind, self.data[index])

    def columns(self, index: np.ndarray, name: str) -> Stored:
        """Columns permuted; a q8 permutation must move whole 32-column blocks."""
        if self.kind != "q8":
            return Stored(self.kind, self.data[..., index])
        blocks = index.reshape(-1, Q8_GROUP)
        starts = blocks[:, 0]
        if np.any(starts % Q8_GROUP) or np.any(blocks != starts[:, None] + np.arange(Q8_GROUP)):
            raise UnsupportedError(
                REQUANTIZE_RULE,
                f"{name}: the value-head reorder moves columns inside Q8_0 blocks (value head "
                "width not a multiple of 32): give --requantize",
                path=name,
            )
        assert self.scales is not None
        return Stored("q8", self.data[..., index], self.scales[..., starts // Q8_GROUP])

    def values(self) -> np.ndarray:
        """float32 values (q8: scale × code, one binary32 multiply)."""
        if self.kind == "f32":
            return np.asarray(self.data, dtype=np.float32)
        if self.kind == "bf16":
            return (self.data.astype(np.uint32) << 16).view(np.float32)
        assert self.scales is not None
        s = np.repeat(self.scales.view(np.float16).astype(np.float32), Q8_GROUP, axis=-1)
        return s[..., : self.data.shape[-1]] * self.data.astype(np.float32)


def stack(parts: list[Stored]) -> Stored:
    """Parameters stacked by rows (as float32 values when their kinds differ)."""
    if len({p.kind for p in parts}) > 1:
        parts = [Stored("f32", p.values()) for p in parts]
    data = np.concatenate([p.data for p in parts], axis=-2 if parts[0].data.ndim > 1 else 0)
    if parts[0].scales is None:
        return Stored(parts[0].kind, data)
    return Stored("q8", data, np.concatenate([p.scales for p in parts], axis=-2))  # type: ignore[misc]


def stack_experts(parts: list[Stored]) -> Stored:
    """Per-expert matrices as one [E, N, K] tensor."""
    scales = None if parts[0].scales is None else np.stack([p.scales for p in parts])  # type: ignore[misc]
    return Stored(parts[0].kind, np.stack([p.data for p in parts]), scales)


def gguf_array(s: Stored) -> tuple[np.ndarray, str]:
    """(array, GGML type name) of what GGUFWriter.add_tensor takes: Q8_0 block bytes
    [.., N, blocks·34] (scale word, then 32 codes), BF16 words, or F32 values."""
    if s.kind == "f32":
        return np.ascontiguousarray(s.data, dtype=np.float32), "F32"
    if s.kind == "bf16":
        return np.ascontiguousarray(s.data, dtype=np.uint16), "BF16"
    assert s.scales is not None
    *lead, n, k = s.data.shape
    codes = np.ascontiguousarray(s.data).reshape(*lead, n, k // Q8_GROUP, Q8_GROUP).view(np.uint8)
    words = np.ascontiguousarray(s.scales[..., : k // Q8_GROUP], dtype="<u2")
    scale = words.view(np.uint8).reshape(*lead, n, k // Q8_GROUP, 2)
    blocks = np.concatenate([scale, codes], axis=-1)
    return np.ascontiguousarray(blocks.reshape(*lead, n, -1)), "Q8_0"


def from_q8_0(raw: np.ndarray, shape: tuple[int, ...]) -> Stored:
    """GGUF Q8_0 block bytes as q8 blocks of logical `shape` (numpy order)."""
    *lead, k = shape
    blocks = np.asarray(raw, dtype=np.uint8).reshape(*lead, k // Q8_GROUP, 2 + Q8_GROUP)
    scales = np.ascontiguousarray(blocks[..., :2]).view("<u2")[..., 0]
    codes = np.ascontiguousarray(blocks[..., 2:]).view(np.int8).reshape(*lead, k)
    return Stored("q8", codes, scales.astype(np.uint16))


def bf16_words(values: np.ndarray) -> np.ndarray:
    """float32 values that are bf16 values -> their words (the low half must be zero)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return (bits >> 16).astype(np.uint16)


def round_bf16(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 words, rounding to nearest even (finite values)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).astype(np.uint16)
