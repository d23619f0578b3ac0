"""TileGeometry.payload_position equals each layout's own formula as spec/vqf.md §q8-tiled, §q4-0,
§q4-8x8l write it out."""

from __future__ import annotations

from weightfile.spec.codecs.vqf.registry import CODECS


def test_q8_8x8_positions() -> None:  # spec/vqf.md §q8-tiled: 16 + 32·(j div 4) + 4m + (j mod 4)
    t = CODECS["q8_0_8x8"].tiling
    assert t is not None
    for m in range(8):
        for j in range(32):
            assert t.payload_position(m, j) == 16 + 32 * (j // 4) + 4 * m + j % 4


def test_q8_4x4_positions() -> None:  # spec/vqf.md §q8-tiled: 8 + 16·(j div 4) + 4m + (j mod 4)
    t = CODECS["q8_0_4x4"].tiling
    assert t is not None
    for m in range(4):
        for j in range(32):
            assert t.payload_position(m, j) == 8 + 16 * (j // 4) + 4 * m + j % 4


# spec/vqf.md §q4-0: 8 + 16·(k div 4) + 4m + (k mod 4), XOR 0x88
def test_q4_4x4_positions() -> None:
    t = CODECS["q4_0_4x4"].tiling
    assert t is not None and t.xor == 0x88
    for m in range(4):
        for k in range(16):
            assert t.payload_position(m, k) == 8 + 16 * (k // 4) + 4 * m + k % 4


# spec/vqf.md §q4-8x8l: 16 + 64·(k div 8) + 8m + (k mod 8), XOR 0x88
def test_q4_8x8l_positions() -> None:
    t = CODECS["q4_0_8x8l"].tiling
    assert t is not None and t.xor == 0x88
    for m in range(8):
        for k in range(16):
            assert t.payload_position(m, k) == 16 + 64 * (k // 8) + 8 * m + k % 8
    # "Chunk i comes from row (i mod 8), legacy qs bytes [8·(i div 8), +8)."
    for i in range(16):
        assert t.payload_position(i % 8, 8 * (i // 8)) == 16 + 8 * i


def test_every_group_block_position_is_used_exactly_once() -> None:
    for c in CODECS.values():
        t = c.tiling
        if t is None:
            continue
        used = [t.scale_position(m) + h for m in range(t.group_rows) for h in (0, 1)]
        used += [
            t.payload_position(m, j)
            for m in range(t.group_rows)
            for j in range(t.block_payload_bytes)
        ]
        assert sorted(used) == list(range(t.group_block_bytes)), c.name
