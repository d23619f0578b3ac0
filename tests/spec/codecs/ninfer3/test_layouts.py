"""The layout geometry reproduces the spec's worked sizes and offsets (spec/ninfer3.md §row-split,
§block-scale, §row-scale, §raw-bytes, §worked-sizes).

Every number below is typed from the spec, not computed by the code under test.
"""

from __future__ import annotations

import itertools

import pytest

from weightfile.spec.codecs.ninfer3.layouts import (
    ROW_SPLIT_GEOMETRY,
    block_scale_planes,
    encoded_size,
    nvfp4_scale_index,
    row_scale_planes,
    row_split_planes,
    row_split_row_view,
    shape_problem,
)


@pytest.mark.parametrize(
    ("fmt", "layout", "shape", "size"),
    [
        ("q4_g64_fp16", "row_split_k128_v1", (7168, 5120), 19_496_960),
        ("q5_g64_fp16", "row_split_k128_v1", (7168, 5120), 24_084_480),
        ("q6_g64_fp16", "row_split_k128_v1", (7168, 5120), 28_672_000),
        ("q8_g32_fp16", "row_split_k128_v1", (7168, 5120), 38_993_920),
        ("t2_g128_fp16", "row_split_k128_v1", (7168, 5120), 9_748_480),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1", (14336, 5120), 73_428_992),
        ("nvfp4", "block_scale_k16_m128x4_v1", (14336, 5120), 41_287_684),
        ("q5_g64_fp16", "row_split_k128_v1", (2, 130), 528),
        ("q4_g64_fp16", "row_split_k128_v1", (256, 128), 17_408),
        ("q5_g64_fp16", "row_split_k128_v1", (256, 128), 21_504),
        ("nvfp4", "block_scale_k16_m128x4_v1", (128, 64), 4612),
        ("fp8_e4m3fn_row_bf16", "row_scale_v1", (2, 4), 260),
        ("bf16", "contiguous_le_v1", (3, 5), 30),
        ("int32", "contiguous_le_v1", (), 4),
    ],
)
def test_encoded_size_matches_spec_4_7(fmt: str, layout: str, shape: tuple, size: int) -> None:
    """spec/ninfer3.md §worked-sizes sizes, the spec/ninfer3.md §block-scale/§row-scale examples and
    spec/ninfer3.md §contiguous's elements × word size."""
    assert shape_problem(layout, shape) is None
    assert encoded_size(fmt, layout, shape) == size


def test_row_split_plane_offsets_match_spec_4_7() -> None:
    """The spec/ninfer3.md §worked-sizes breakdowns of q4/q5/q6/q8/t2 [7168, 5120] and q5 [2,
    130]."""
    q4 = row_split_planes("q4_g64_fp16", (7168, 5120))
    assert (q4.k_pad, q4.gpr, q4.base_bytes) == (5120, 80, 18_350_080)
    assert (q4.scale_bytes, q4.scale_offset) == (1_146_880, 18_350_080)
    q5 = row_split_planes("q5_g64_fp16", (7168, 5120))
    assert (q5.high_bytes, q5.high_offset, q5.scale_offset) == (4_587_520, 18_350_080, 22_937_600)
    q6 = row_split_planes("q6_g64_fp16", (7168, 5120))
    assert (q6.high_bytes, q6.scale_offset) == (9_175_040, 27_525_120)
    q8 = row_split_planes("q8_g32_fp16", (7168, 5120))
    assert (q8.gpr, q8.base_bytes) == (160, 36_700_160)
    t2 = row_split_planes("t2_g128_fp16", (7168, 5120))
    assert (t2.gpr, t2.base_bytes) == (40, 9_175_040)
    small = row_split_planes("q5_g64_fp16", (2, 130))
    assert (small.k_pad, small.gpr, small.base_bytes) == (256, 4, 256)
    assert (small.high_bytes, small.high_offset, small.scale_bytes, small.scale_offset) == (
        64,
        256,
        16,
        512,
    )


@pytest.mark.parametrize(
    ("fmt", "k", "scale_offset", "total"),
    [
        ("q4_g64_fp16", 65, 256, 260),
        ("q5_g64_fp16", 130, 512, 520),
        ("q6_g64_fp16", 65, 512, 516),
        ("q8_g32_fp16", 33, 256, 264),
        ("t2_g128_fp16", 130, 256, 260),
    ],
)
def test_single_row_geometry_matches_known_packed_bytes_table(
    fmt: str, k: int, scale_offset: int, total: int
) -> None:
    """The scale_offset and total columns of the spec/ninfer3.md §row-split "Known packed bytes"
    table."""
    p = row_split_planes(fmt, (1, k))
    assert (p.scale_offset, p.bytes) == (scale_offset, total)


def test_row_split_geometry_table_is_4_3() -> None:
    """b, G, B, H of spec/ninfer3.md §row-split; B = G·min(b,4)/8 for q4..q6 and b·G/8 otherwise, H
    = G·(b−4)/8."""
    table = {
        "q4_g64_fp16": (4, 64, 32, 0),
        "q5_g64_fp16": (5, 64, 32, 8),
        "q6_g64_fp16": (6, 64, 32, 16),
        "q8_g32_fp16": (8, 32, 32, 0),
        "t2_g128_fp16": (2, 128, 32, 0),
    }
    for name, (b, g, base, high) in table.items():
        geo = ROW_SPLIT_GEOMETRY[name]
        assert (geo.code_bits, geo.group_size) == (b, g)
        assert (geo.base_bytes_per_group, geo.high_bytes_per_group) == (base, high)


def test_row_view_of_q5_fixture_row_1_starts_at_128_288_520() -> None:
    """spec/ninfer3.md §row-split C++ fixture: "The row-1 view planes start at object offsets 128,
    288 and 520"."""
    view = row_split_row_view("q5_g64_fp16", (2, 130), 1, 1)
    assert (view.base.offset, view.high.offset, view.scale.offset) == (128, 288, 520)
    assert (view.base.length, view.high.length, view.scale.length) == (128, 32, 8)


def test_nvfp4_example_geometry_and_swizzle_4_4() -> None:
    """[128, 64]: code 4096, scales at 4096 (512 B), divisor at 4608; row 31 -> +496, 32 -> +4."""
    p = block_scale_planes((128, 64))
    assert (p.code_plane_bytes, p.scale_plane_offset, p.scale_plane_bytes) == (4096, 4096, 512)
    assert (p.weight_divisor_offset, p.bytes) == (4608, 4612)
    assert nvfp4_scale_index(31, 0, 64) == 496
    assert nvfp4_scale_index(32, 0, 64) == 4
    big = block_scale_planes((14336, 5120))
    assert (big.code_plane_bytes, big.scale_plane_bytes) == (36_700_160, 4_587_520)
    assert big.weight_divisor_offset == 41_287_680


def test_nvfp4_swizzle_formula_is_the_stated_permutation() -> None:
    """The formula equals viewing [N, K/16] as [N/128, 4, 32, K/64, 4], axes (0, 3, 2, 1, 4)."""
    n_rows, k = 256, 128
    natural = [(n, g) for n in range(n_rows) for g in range(k // 16)]
    dims = (n_rows // 128, 4, 32, k // 64, 4)
    stored = []
    for a, d, c, b, e in itertools.product(*(range(dims[i]) for i in (0, 3, 2, 1, 4))):
        stored.append(natural[(((a * 4 + b) * 32 + c) * (k // 64) + d) * 4 + e])
    assert [nvfp4_scale_index(n, g, k) for n, g in stored] == list(range(len(stored)))


def test_fp8_row_geometry_4_5() -> None:
    """[2, 4]: codes 8 bytes, scale plane at 256, total 260; [14336, 5120] scales at 73,400,320."""
    p = row_scale_planes((2, 4))
    assert (p.code_plane_bytes, p.scale_plane_offset, p.bytes) == (8, 256, 260)
    assert row_scale_planes((14336, 5120)).scale_plane_offset == 73_400_320


@pytest.mark.parametrize(
    ("layout", "shape"),
    [
        ("row_split_k128_v1", (4,)),
        ("row_split_k128_v1", (0, 4)),
        ("block_scale_k16_m128x4_v1", (64, 64)),
        ("block_scale_k16_m128x4_v1", (128, 48)),
        ("row_scale_v1", (1, 2, 3)),
        ("contiguous_le_v1", (1,) * 17),
        ("raw_bytes_v1", (0,)),
    ],
)
def test_shapes_outside_4_1_constraints_are_named(layout: str, shape: tuple) -> None:
    """Each spec/ninfer3.md §layout-registry shape constraint rejects; the nearest legal shape is
    accepted."""
    assert shape_problem(layout, shape) is not None


@pytest.mark.parametrize(
    ("layout", "shape"),
    [
        ("row_split_k128_v1", (1, 1)),
        ("block_scale_k16_m128x4_v1", (128, 64)),
        ("row_scale_v1", (1, 1)),
        ("contiguous_le_v1", (1,) * 16),
        ("contiguous_le_v1", ()),
        ("raw_bytes_v1", (1,)),
    ],
)
def test_nearest_legal_shapes_are_accepted(layout: str, shape: tuple) -> None:
    """Guard for the rejection test above."""
    assert shape_problem(layout, shape) is None
