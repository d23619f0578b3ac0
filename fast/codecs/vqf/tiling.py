"""Vectorised row-group interleave (spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l); must equal
ref/codecs/vqf/tiling.py.

The legacy payload viewed as [R/G, G, nb, 2 + P] (group, row in group, block, byte) is transposed
into [R/G, nb, G, 2] scales followed by [R/G, nb, P/k, G, k] chunks: the address formula of
spec/vqf.md §q8-tiled written as an axis permutation. `TiledCodec` is ref's, with the fast base
codecs and this permutation, so every tiled layout (spec/codecs/vqf/layouts.TILED) is one object
here too.
"""

from __future__ import annotations

import numpy as np

from weightfile.fast.codecs.vqf.common import require_payload
from weightfile.ref.codecs.vqf import tiling as ref
from weightfile.ref.codecs.vqf.tiling import geometry


def _axes(name: str, rows: int, cols: int) -> tuple[int, int, int, int, int]:
    t = geometry(name)
    return rows // t.group_rows, t.group_rows, cols // 32, t.block_payload_bytes, t.chunk_bytes


def tile(name: str, legacy: bytes, rows: int, cols: int) -> bytes:
    """Rearrange a legacy payload into the tiled layout (XOR applied to payload bytes)."""
    ng, g, nb, p, k = _axes(name, rows, cols)
    src = np.frombuffer(legacy, dtype=np.uint8).reshape(ng, g, nb, 2 + p)
    out = np.empty((ng, nb, g * (2 + p)), dtype=np.uint8)
    out[..., : 2 * g] = src[..., :2].transpose(0, 2, 1, 3).reshape(ng, nb, 2 * g)
    chunks = src[..., 2:].reshape(ng, g, nb, p // k, k).transpose(0, 2, 3, 1, 4)
    out[..., 2 * g :] = chunks.reshape(ng, nb, g * p) ^ np.uint8(geometry(name).xor)
    return out.tobytes()


def untile(name: str, tiled: bytes, rows: int, cols: int) -> bytes:
    """Undo `tile`."""
    ng, g, nb, p, k = _axes(name, rows, cols)
    src = np.frombuffer(tiled, dtype=np.uint8).reshape(ng, nb, g * (2 + p))
    out = np.empty((ng, g, nb, 2 + p), dtype=np.uint8)
    out[..., :2] = src[..., : 2 * g].reshape(ng, nb, g, 2).transpose(0, 2, 1, 3)
    chunks = src[..., 2 * g :].reshape(ng, nb, p // k, g, k) ^ np.uint8(geometry(name).xor)
    out[..., 2:] = chunks.transpose(0, 3, 1, 2, 4).reshape(ng, g, nb, p)
    return out.tobytes()


class TiledCodec(ref.TiledCodec):
    """ref's tiled codec (same checks, errors and rule renaming) on the fast base codecs."""

    PACKAGE = "weightfile.fast.codecs.vqf"

    def tile(self, legacy: bytes, rows: int, cols: int) -> bytes:
        """The vectorised `tile` (ref: ref.tile)."""
        return tile(self.NAME, legacy, rows, cols)

    def untile(self, tiled: bytes, rows: int, cols: int) -> bytes:
        """The vectorised `untile` (ref: ref.untile)."""
        return untile(self.NAME, tiled, rows, cols)

    def legacy_payload(self, payload: bytes, rows: int, cols: int) -> bytes:
        """The untiled payload, checked without copying a large mapped payload first."""
        return self.untile(require_payload(self.NAME, payload, rows, cols), rows, cols)  # type:
        # ignore[arg-type]
