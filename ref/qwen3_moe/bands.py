"""Expert bands of a layer's stacked matrix, as byte ranges of its payload (spec/vqf.md
§text-tensors).

Every VQF matrix layout is a grid of units: `outer` row groups (G rows: 1 untiled, 4 or 8 tiled)
by `nb` block columns (32 columns a block; one column for F32/F16 words), each unit
`unit_bytes` long, stored row group by row group and block column by block column inside one
(spec/vqf.md §q8-0, §q8-tiled, §q4-0, §q4-8x8l). So expert e's gate/up rows [e·Ie, (e+1)·Ie) are the
row groups [e·Ie/G, (e+1)·Ie/G), one contiguous byte range, and its down columns [e·Ie, (e+1)·Ie)
are the block columns [e·Ie/32, (e+1)·Ie/32) of every row group: `outer` ranges of equal length. The
importer writes the stacked payload from per-expert encodings with these functions, and the fast
decoder reads an expert's bands with them, so both agree with the layout by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from weightfile.spec.codecs.vqf.registry import CODECS


@dataclass(frozen=True)
class Grid:
    """A [rows, cols] payload as outer × nb units of unit_bytes."""

    outer: int  # row groups
    nb: int  # block columns
    unit_bytes: int  # bytes of one (row group, block column) unit
    group_rows: int  # rows per row group
    block_cols: int  # columns per block column


def grid(codec: str, rows: int, cols: int) -> Grid:
    """The unit grid of a codec's [rows, cols] payload (rows and cols whole groups and blocks)."""
    c = CODECS[codec]
    g = c.tiling.group_rows if c.tiling is not None else 1
    if rows % g or cols % c.block_elements:
        raise ValueError(f"{codec} [{rows}, {cols}] is not whole {g}-row groups and blocks")
    return Grid(rows // g, cols // c.block_elements, g * c.block_bytes, g, c.block_elements)


def row_band(codec: str, data: np.ndarray, rows: int, cols: int, lo: int, hi: int) -> np.ndarray:
    """The bytes of rows [lo, hi) of a [rows, cols] payload (a view: one contiguous range)."""
    gr = grid(codec, rows, cols)
    if lo % gr.group_rows or hi % gr.group_rows:
        raise ValueError(f"rows [{lo}, {hi}) split {gr.group_rows}-row groups")
    step = gr.nb * gr.unit_bytes
    return data[lo // gr.group_rows * step : hi // gr.group_rows * step]


def col_band(codec: str, data: np.ndarray, rows: int, cols: int, lo: int, hi: int) -> np.ndarray:
    """The bytes of columns [lo, hi) of a [rows, cols] payload, as a [rows, hi − lo] payload of
    the same codec (a copy: `outer` ranges gathered)."""
    gr = grid(codec, rows, cols)
    if lo % gr.block_cols or hi % gr.block_cols:
        raise ValueError(f"columns [{lo}, {hi}) split {gr.block_cols}-column blocks")
    units = np.asarray(data, dtype=np.uint8).reshape(gr.outer, gr.nb, gr.unit_bytes)
    return np.ascontiguousarray(units[:, lo // gr.block_cols : hi // gr.block_cols]).reshape(-1)


def col_band_view(
    codec: str, data: np.ndarray, rows: int, cols: int, lo: int, hi: int
) -> tuple[np.ndarray, int]:
    """Columns [lo, hi) of a [rows, cols] payload in place: (the bytes from the band's first unit
    to its last, the byte stride between row groups). Row group g of the band is the `hi − lo`
    columns' units at g·stride from the view's start (a view: nothing is copied)."""
    gr = grid(codec, rows, cols)
    if lo % gr.block_cols or hi % gr.block_cols:
        raise ValueError(f"columns [{lo}, {hi}) split {gr.block_cols}-column blocks")
    stride = gr.nb * gr.unit_bytes
    first = lo // gr.block_cols * gr.unit_bytes
    span = (gr.outer - 1) * stride + (hi - lo) // gr.block_cols * gr.unit_bytes
    return data[first : first + span], stride


def join_col_bands(codec: str, bands: list[bytes], rows: int, band_cols: int) -> bytes:
    """The [rows, len(bands)·band_cols] payload whose column bands are `bands` (each a
    [rows, band_cols] payload of `codec`), in order: the inverse of `col_band`."""
    gr = grid(codec, rows, band_cols)
    parts = [
        np.frombuffer(b, dtype=np.uint8).reshape(gr.outer, gr.nb, gr.unit_bytes) for b in bands
    ]
    return np.concatenate(parts, axis=1).tobytes()
