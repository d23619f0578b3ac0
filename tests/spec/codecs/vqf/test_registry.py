"""The VQF codec registry states the geometry of spec/vqf.md §encodings and the layout rule of
spec/vqf.md §qtype-codes/§encodings/§inventory."""

from __future__ import annotations

import pytest

from weightfile.spec.codecs.vqf import blocks
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for, payload_size, shape_violation
from weightfile.spec.errors import InvalidError, UnsupportedError


@pytest.mark.parametrize(
    ("record", "size"),
    [
        (blocks.block_q8_0, 34),  # spec/vqf.md §q8-0
        (blocks.block_q4_0, 18),  # spec/vqf.md §q4-0
        (blocks.block_q8_0x8, 272),  # spec/vqf.md §q8-tiled
        (blocks.block_q8_0x4, 136),  # spec/vqf.md §q8-tiled
        (blocks.block_q4_0x4, 72),  # spec/vqf.md §q4-0
        (blocks.block_q4_0x8, 144),  # spec/vqf.md §q4-8x8l
    ],
)
def test_block_records_have_the_spec_sizes(record: object, size: int) -> None:
    assert record.sizeof() == size  # type: ignore[attr-defined]


def test_registry_names_are_unique_and_match_the_module_names() -> None:
    assert list(CODECS) == [c.name for c in CODECS.values()]
    assert set(CODECS) == {
        "f32", "f16", "q8_0", "q4_0", "q4i8", "g256", "q8_0_8x8", "q8_0_4x4", "q4_0_4x4",
        "q4_0_8x8l", "g256_8x8", "g256_4x4",
    }  # fmt: skip


def test_tile_groups_are_row_group_blocks() -> None:
    for c in CODECS.values():
        if c.tiling is not None:
            assert c.group_record is not None
            assert (
                c.group_record.sizeof() == c.tiling.group_block_bytes == c.row_group * c.block_bytes
            )


@pytest.mark.parametrize(
    ("name", "rows", "cols", "size"),
    [  # spec/vqf.md §worked-example worked example (Qwen3-VL-2B, wmode q4 + vision)
        ("f16", 151936, 2048, 622_329_856),
        ("f32", 2048, 1, 8_192),
        ("f32", 57344, 1, 229_376),
        ("q4_0_4x4", 57344, 2048, 66_060_288),
        ("q4_0_4x4", 172032, 2048, 198_180_864),
        ("q4_0", 151936, 2048, 175_030_272),
        ("q8_0", 24, 3145728, 80_216_064),
        ("q8_0", 24, 1048576, 26_738_688),
        # spec/vqf.md §size-function: ceil(N/32) blocks for a partial last block
        ("q8_0", 1, 33, 68),
        ("q4_0", 1, 1, 18),
        ("g256", 3, 100, 340),
    ],
)
def test_payload_size_reproduces_the_spec_numbers(
    name: str, rows: int, cols: int, size: int
) -> None:
    assert payload_size(name, rows, cols) == size


def test_tiled_layouts_require_row_groups_and_whole_blocks() -> None:
    assert shape_violation("q8_0_8x8", 8, 64) is None
    assert shape_violation("q8_0_8x8", 4, 64).rule == "vqf.codec.q8_0_8x8.geometry"  # type:
    # ignore[union-attr]
    assert shape_violation("q4_0_4x4", 4, 48).rule == "vqf.codec.q4_0_4x4.geometry"  # type:
    # ignore[union-attr]
    assert shape_violation("q8_0", 3, 5) is None  # legacy: any N
    assert shape_violation("q8_0", -1, 5).rule == "vqf.codec.q8_0.shape"  # type: ignore[union-attr]


Q8_8X8, Q4_4X4, X8, Q8BUF_Q4, G256, EMB_F16, VISION = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40


@pytest.mark.parametrize(
    ("qtype", "flags", "name", "override", "want"),
    [
        (1, 0x223, "final_norm", None, "f32"),
        (5, 0x223, "token_embed", None, "f16"),
        (3, Q8_8X8 | Q4_4X4 | EMB_F16, "q4_q", None, "q4_0_4x4"),
        (3, Q8_8X8 | EMB_F16, "q4_q", None, "q4_0"),
        (2, Q8_8X8 | Q4_4X4, "q8_q", None, "q8_0_8x8"),
        # vision: always legacy (spec/vqf.md §q8-0)
        (2, Q8_8X8 | Q4_4X4 | VISION, "v_q8_qkv", None, "q8_0"),
        (2, Q4_4X4, "q8_q", None, "q8_0"),  # spec/vqf.md §decisions item 3: no flag reads as legacy
        # ...
        (2, Q4_4X4, "q8_q", "4x4", "q8_0_4x4"),  # ... unless the caller knows it is 4x4
        (2, Q4_4X4, "q8_q", "legacy", "q8_0"),
        (2, Q8BUF_Q4 | Q4_4X4 | EMB_F16, "q8_q", None, "q4i8"),
        (2, Q8_8X8 | Q4_4X4 | G256, "q8_up", None, "g256_8x8"),
        (2, Q4_4X4 | G256, "q8_up", None, "g256"),
        (2, Q4_4X4 | G256, "q8_up", "4x4", "g256_4x4"),
        (4, Q8_8X8 | Q4_4X4 | X8, "x8_q", None, "q4_0_8x8l"),
    ],
)
def test_codec_for_follows_flags_and_names(
    qtype: int, flags: int, name: str, override: str | None, want: str
) -> None:
    assert codec_for(qtype, flags, name, q8_tiling=override) == want  # type: ignore[arg-type]


def test_codec_for_refuses_a_4x4_override_that_contradicts_q8_8x8() -> None:
    with pytest.raises(InvalidError) as e:
        codec_for(2, Q8_8X8, "q8_q", q8_tiling="4x4")
    assert e.value.rule == "vqf.codec.q8_tiling"


def test_codec_for_refuses_unknown_qtypes() -> None:
    with pytest.raises(UnsupportedError):
        codec_for(6, 0, "q8_q")


def test_a_matrix_that_cannot_be_tiled_stays_legacy() -> None:
    # spec/vqf.md §q8-tiled: R % G != 0 or C % 32 != 0 keeps the legacy layout, e.g. a q8_lm with V
    # % 8 != 0.
    flags = Q8_8X8 | Q4_4X4
    assert codec_for(2, flags, "q8_lm", shape=(151936, 2048)) == "q8_0_8x8"
    assert codec_for(2, flags, "q8_lm", shape=(151937, 2048)) == "q8_0"
    assert codec_for(2, flags | G256, "q8_lm", shape=(4, 2048)) == "g256"
    assert codec_for(2, Q4_4X4, "q8_q", q8_tiling="4x4", shape=(6, 64)) == "q8_0"
    assert codec_for(3, flags, "q4_q", shape=(2048, 48)) == "q4_0"
    assert codec_for(1, flags, "final_norm", shape=(2048, 1)) == "f32"
