"""The declarative `.ninfer` v3 spec layer against the spec's own numbers (spec/ninfer3.md
§entry-header, §volume-header, §general, §format-registry, §layout-registry, §contiguous,
§row-split, §block-scale, §row-scale, §raw-bytes, §worked-sizes)."""

from __future__ import annotations

import pytest
from strategies.ninfer3 import raises_rule

from weightfile.spec.codecs.ninfer3.layouts import encoded_size, row_split_planes, shape_problem
from weightfile.spec.errors import MalformedError
from weightfile.spec.ninfer3 import directory
from weightfile.spec.ninfer3.domains import elements, is_id, is_positive_u64, is_shape, is_u64
from weightfile.spec.ninfer3.framing import (
    ContinuationHeader,
    EntryHeader,
    build_continuation_header,
    build_entry_header,
    entry_payload_start,
    parse_continuation_header,
    parse_entry_header,
)
from weightfile.spec.ninfer3.registry import DEVICE_ONLY_LAYOUTS, ENCODINGS, FORMATS, LAYOUTS


def test_headers_are_32_bytes() -> None:
    assert EntryHeader.sizeof() == 32 and ContinuationHeader.sizeof() == 32


def test_entry_header_bytes_match_the_spec_hex() -> None:
    """spec/ninfer3.md §framing-numbers tiny file: `4e494e4645520003 e00f000000000000` + id
    00..0f."""
    ident = bytes(range(16))
    raw = build_entry_header(4064, ident)
    assert raw == bytes.fromhex("4e494e4645520003e00f000000000000") + ident
    parsed = parse_entry_header(raw)
    assert (parsed.json_bytes, parsed.artifact_id) == (4064, ident)


def test_continuation_header_bytes_match_the_spec_hex() -> None:
    """spec/ninfer3.md §framing-numbers tiny sharded file, part 2: `4e494e5052540003
    0200000000000000` + id."""
    raw = build_continuation_header(2, bytes(16))
    assert raw == bytes.fromhex("4e494e50525400030200000000000000") + bytes(16)
    assert parse_continuation_header(raw, path="files[2]").part_index == 2


def test_header_parse_errors_are_translated() -> None:
    with raises_rule(MalformedError, "ninfer3.header.truncated"):
        parse_entry_header(b"NINFER\x00\x03")
    with raises_rule(MalformedError, "ninfer3.part.magic"):
        parse_continuation_header(bytes(32), path="files[1]")


@pytest.mark.parametrize("json_bytes,start", [(65_504, 65_536), (4064, 4096), (4065, 8192)])
def test_entry_payload_start(json_bytes: int, start: int) -> None:
    assert entry_payload_start(json_bytes) == start


def test_registry_has_ten_formats_and_four_layouts() -> None:
    """Q1: the 10-name registry (t2_g128_fp16 included) is authoritative."""
    assert len(FORMATS) == 10 and "t2_g128_fp16" in FORMATS
    assert set(LAYOUTS) == {
        "contiguous_le_v1",
        "row_split_k128_v1",
        "block_scale_k16_m128x4_v1",
        "row_scale_v1",
    }
    assert {f for layout in LAYOUTS.values() for f in layout.accepts} == set(FORMATS)
    assert all(layout.alignment == 256 for layout in LAYOUTS.values())
    assert ENCODINGS["raw_bytes_v1"].alignment == 1
    assert not set(DEVICE_ONLY_LAYOUTS) & set(LAYOUTS)


def _size(fmt: str, shape: tuple[int, ...]) -> int:
    layout = next(name for name, lay in LAYOUTS.items() if fmt in lay.accepts)
    assert shape_problem(layout, shape) is None
    return encoded_size(fmt, layout, shape)


@pytest.mark.parametrize(
    "fmt,shape,want",
    [
        ("q4_g64_fp16", (7168, 5120), 19_496_960),
        ("q5_g64_fp16", (7168, 5120), 24_084_480),
        ("q6_g64_fp16", (7168, 5120), 28_672_000),
        ("q8_g32_fp16", (7168, 5120), 38_993_920),
        ("t2_g128_fp16", (7168, 5120), 9_748_480),
        ("fp8_e4m3fn_row_bf16", (14336, 5120), 73_428_992),
        ("nvfp4", (14336, 5120), 41_287_684),
        ("q5_g64_fp16", (2, 130), 528),
        ("q4_g64_fp16", (256, 128), 17_408),
        ("q5_g64_fp16", (256, 128), 21_504),
        # spec/ninfer3.md §row-split known packed bytes: single rows, total sizes
        ("q4_g64_fp16", (1, 65), 260),
        ("q5_g64_fp16", (1, 130), 520),
        ("q6_g64_fp16", (1, 65), 516),
        ("q8_g32_fp16", (1, 33), 264),
        ("t2_g128_fp16", (1, 130), 260),
        # spec/ninfer3.md §block-scale and §row-scale examples
        ("nvfp4", (128, 64), 4612),
        ("fp8_e4m3fn_row_bf16", (2, 4), 260),
        # spec/ninfer3.md §contiguous contiguous
        ("bf16", (248320, 128), 63_569_920),
        ("fp32", (), 4),
        ("int32", (3, 5), 60),
    ],
)
def test_encoded_sizes_of_the_spec(fmt: str, shape: tuple[int, ...], want: int) -> None:
    assert _size(fmt, shape) == want


def test_row_split_plane_offsets_of_the_spec() -> None:
    """spec/ninfer3.md §worked-sizes: q5 [7168,5120] high at 18,350,080, scales at 22,937,600; q5
    [2,130] planes."""
    big = row_split_planes("q5_g64_fp16", (7168, 5120))
    assert (big.high_offset, big.scale_offset) == (18_350_080, 22_937_600)
    small = row_split_planes("q5_g64_fp16", (2, 130))
    assert (small.k_pad, small.gpr) == (256, 4)
    assert (small.high_offset, small.high_bytes, small.scale_offset) == (256, 64, 512)


@pytest.mark.parametrize(
    "layout,shape",
    [
        ("block_scale_k16_m128x4_v1", (100, 64)),
        ("block_scale_k16_m128x4_v1", (128, 32)),
        ("row_split_k128_v1", (4,)),
        ("row_scale_v1", (2, 3, 4)),
    ],
)
def test_shapes_that_do_not_fit(layout: str, shape: tuple[int, ...]) -> None:
    assert shape_problem(layout, shape) is not None


def test_value_domains() -> None:
    assert is_u64(0) and is_u64(2**64 - 1) and not is_u64(2**64)
    assert not any(is_u64(v) for v in (5.0, True, -1, "5", None))
    assert is_positive_u64(1) and not is_positive_u64(0)
    assert is_id("é/x") and not any(is_id(v) for v in ("", "a\x00", "\ud800", 3))
    assert is_shape([]) and is_shape([1] * 16) and not is_shape([1] * 17)
    assert not is_shape([2**32, 2**32]) and is_shape([2**32, 2**32 - 1])
    assert elements([]) == 1


def test_directory_records_are_closed_as_the_spec_lists() -> None:
    assert directory.ROOT.members == {
        "components",
        "objects",
        "bindings",
        "uses",
        "files",
        "metadata",
        "provenance",
    }
    assert len(directory.TENSOR.members) == 7 and len(directory.RESOURCE.members) == 5
    assert directory.FILE.members == {"path", "payload_bytes"}
    assert directory.PART.members == {"object", "range"}
    assert set(directory.ACTIVATION_POLICIES) == {"A16Only", "AllowA8", "AllowA4"}
