"""The format and codec registries hold the spec/ninfer3.md §format-registry table and the
spec/ninfer3.md §layout-registry pairs, once each."""

from __future__ import annotations

from weightfile.spec.codecs.ninfer3.formats import FORMATS, GROUPED_FORMATS
from weightfile.spec.codecs.ninfer3.registry import CODECS


def test_ten_registered_formats_q1() -> None:
    """Q1: the 10-name registry is authoritative."""
    assert sorted(FORMATS) == sorted(
        [
            "bf16",
            "fp32",
            "int32",
            "q4_g64_fp16",
            "q5_g64_fp16",
            "q6_g64_fp16",
            "q8_g32_fp16",
            "t2_g128_fp16",
            "nvfp4",
            "fp8_e4m3fn_row_bf16",
        ]
    )


def test_grouped_formats_match_3_1_table() -> None:
    """Code bits, group, legal codes, qmax and full-group bits/weight of spec/ninfer3.md
    §format-registry."""
    table = {
        "q4_g64_fp16": (4, 64, -8, 7, 4.25),
        "q5_g64_fp16": (5, 64, -16, 15, 5.25),
        "q6_g64_fp16": (6, 64, -32, 31, 6.25),
        "q8_g32_fp16": (8, 32, -127, 127, 8.5),
        "t2_g128_fp16": (2, 128, -1, 1, 2.125),
    }
    for name, (bits, group, qmin, qmax, bpw) in table.items():
        f = GROUPED_FORMATS[name]
        assert (f.code_bits, f.group_size, f.qmin, f.qmax) == (bits, group, qmin, qmax)
        assert (f.code_bits * f.group_size + 16) / f.group_size == bpw
    assert GROUPED_FORMATS["q8_g32_fp16"].illegal_codes == (-128,)
    assert GROUPED_FORMATS["t2_g128_fp16"].illegal_codes == (-2,)


def test_each_layout_accepts_the_4_1_formats() -> None:
    """spec/ninfer3.md §layout-registry "Accepts": which formats each layout carries."""
    by_layout: dict[str, set] = {}
    for fmt, layout in CODECS:
        by_layout.setdefault(layout, set()).add(fmt)
    assert by_layout == {
        "contiguous_le_v1": {"bf16", "fp32", "int32"},
        "row_split_k128_v1": {
            "q4_g64_fp16",
            "q5_g64_fp16",
            "q6_g64_fp16",
            "q8_g32_fp16",
            "t2_g128_fp16",
        },
        "block_scale_k16_m128x4_v1": {"nvfp4"},
        "row_scale_v1": {"fp8_e4m3fn_row_bf16"},
        "raw_bytes_v1": {None},
    }


def test_encoders_are_the_canonical_ones() -> None:
    """grouped_absmax for q4..q8 (not t2, Q7), fp8_row_maxabs, no quantiser for nvfp4
    (spec/ninfer3.md §nvfp4)."""
    enc = {fmt: pair.encoder for (fmt, _), pair in CODECS.items()}
    assert {enc[f] for f in ("q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16")} == {
        "grouped_absmax"
    }
    assert enc["t2_g128_fp16"] is None and enc["nvfp4"] is None
    assert enc["fp8_e4m3fn_row_bf16"] == "fp8_row_maxabs"
