"""Tiled layouts put element (r, c) where the address formulas of spec/vqf.md §q8-tiled, §q4-0,
§q4-8x8l say.

Each test builds a small legacy payload with a distinct byte per (row, block, position), tiles it,
and checks every element's address computed here from the spec's own formula.
"""

from __future__ import annotations

import struct
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.codecs.vqf import codec, g256, q4_0, q8_0, tiling
from weightfile.spec.codecs.vqf.registry import CODECS

# The tiled layouts are rows of spec/codecs/vqf/layouts.TILED, reached through codec().
q8_0_8x8, q8_0_4x4 = codec("q8_0_8x8"), codec("q8_0_4x4")
q4_0_4x4, q4_0_8x8l = codec("q4_0_4x4"), codec("q4_0_8x8l")
g256_8x8, g256_4x4 = codec("g256_8x8"), codec("g256_4x4")

ROWS, COLS = 16, 96  # 2 groups of 8 (4 of 4) rows, nb = 3 blocks per row
NB = COLS // 32


def _scale(r: int, b: int) -> int:
    return 0x1000 + 16 * r + b


def _q8_legacy() -> tuple[bytes, np.ndarray]:
    """Legacy Q8_0 payload and its logical codes: code(r, c) = (7r + 3c) mod 255 - 127."""
    codes = np.array([[(7 * r + 3 * c) % 255 - 127 for c in range(COLS)] for r in range(ROWS)])
    raw = b"".join(
        struct.pack("<H32b", _scale(r, b), *codes[r, 32 * b : 32 * b + 32].tolist())
        for r in range(ROWS)
        for b in range(NB)
    )
    return raw, codes


def _q4_legacy() -> tuple[bytes, np.ndarray]:
    """Legacy Q4_0 payload; qs byte k of row r, block b is (5r + 11b + 3k) mod 256."""
    qs = np.array([[[(5 * r + 11 * b + 3 * k) % 256 for k in range(16)] for b in range(NB)]
                   for r in range(ROWS)])  # fmt: skip
    raw = b"".join(
        struct.pack("<H", _scale(r, b)) + bytes(qs[r, b].tolist())
        for r in range(ROWS)
        for b in range(NB)
    )
    return raw, qs


@pytest.mark.parametrize(("codec", "g"), [(q8_0_8x8, 8), (q8_0_4x4, 4)])
def test_q8_tiles_follow_the_address_formula(codec: object, g: int) -> None:
    legacy, codes = _q8_legacy()
    tiled = tiling.tile(codec.NAME, legacy, ROWS, COLS)  # type: ignore[attr-defined]
    group_bytes = 34 * g  # 272 for 8x8, 136 for 4x4
    for r in range(ROWS):
        for c in range(COLS):
            base = (r // g) * NB * group_bytes + (c // 32) * group_bytes
            m, j = r % g, c % 32
            assert struct.unpack_from("<H", tiled, base + 2 * m)[0] == _scale(r, c // 32)
            addr = base + 2 * g + (j // 4) * (4 * g) + 4 * m + (j % 4)
            assert struct.unpack_from("<b", tiled, addr)[0] == codes[r, c]
    assert tiling.untile(codec.NAME, tiled, ROWS, COLS) == legacy  # type: ignore[attr-defined]


def test_q4_4x4_follows_the_address_formula_with_xor() -> None:
    legacy, qs = _q4_legacy()
    tiled = tiling.tile("q4_0_4x4", legacy, ROWS, COLS)
    for r in range(ROWS):
        for b in range(NB):
            base = (r // 4) * NB * 72 + b * 72
            m = r % 4
            assert struct.unpack_from("<H", tiled, base + 2 * m)[0] == _scale(r, b)
            for k in range(16):
                assert tiled[base + 8 + 16 * (k // 4) + 4 * m + k % 4] == qs[r, b, k] ^ 0x88


def test_q4_8x8l_follows_the_address_formula_with_xor() -> None:
    legacy, qs = _q4_legacy()
    tiled = tiling.tile("q4_0_8x8l", legacy, ROWS, COLS)
    for r in range(ROWS):
        for b in range(NB):
            base = (r // 8) * NB * 144 + b * 144
            m = r % 8
            assert struct.unpack_from("<H", tiled, base + 2 * m)[0] == _scale(r, b)
            for k in range(16):
                assert tiled[base + 16 + 64 * (k // 8) + 8 * m + k % 8] == qs[r, b, k] ^ 0x88


def test_q4_4x4_stored_nibbles_read_as_signed_4_bit_codes() -> None:
    # spec/vqf.md §q4-0: after XOR 0x88 each stored nibble, as two's complement, equals (nibble -
    # 8).
    x = np.random.default_rng(7).standard_normal((4, 32)).astype(np.float32)
    tiled = q4_0_4x4.encode(x, 4, 32)
    codes = q4_0.decode_words(q4_0.encode(x, 4, 32), 4, 32)["codes"].astype(int) - 8
    for m in range(4):
        for k in range(16):
            byte = tiled[8 + 16 * (k // 4) + 4 * m + k % 4]
            lo, hi = byte & 0xF, byte >> 4
            assert (lo - 16 if lo > 7 else lo) == codes[m, k]
            assert (hi - 16 if hi > 7 else hi) == codes[m, k + 16]


@pytest.mark.parametrize(
    ("tiled", "base"),
    [(q8_0_8x8, q8_0), (q8_0_4x4, q8_0), (q4_0_4x4, q4_0), (q4_0_8x8l, q4_0),
     (g256_8x8, g256), (g256_4x4, g256)],
)  # fmt: skip
def test_tiled_decode_equals_legacy_decode(tiled: object, base: object) -> None:
    x = np.random.default_rng(3).standard_normal((8, 256)).astype(np.float32)
    payload = tiled.encode(x, 8, 256)  # type: ignore[attr-defined]
    legacy = base.encode(x, 8, 256)  # type: ignore[attr-defined]
    assert tiled.decode(payload, 8, 256).tobytes() == base.decode(legacy, 8, 256).tobytes()  # type:
    # ignore[attr-defined]


@given(st.binary(min_size=2 * 272, max_size=2 * 272))
def test_untile_inverts_tile_on_any_bytes(raw: bytes) -> None:
    assert tiling.tile("q8_0_8x8", tiling.untile("q8_0_8x8", raw, 8, 64), 8, 64) == raw
    assert (
        tiling.tile("q4_0_8x8l", tiling.untile("q4_0_8x8l", raw[:288], 16, 32), 16, 32) == raw[:288]
    )


def test_codec_gives_every_registry_name_the_four_functions() -> None:
    """codec(name): a module for an untiled codec, a TiledCodec over its base for a table row."""
    for name, c in CODECS.items():
        found = codec(name)
        assert name == found.NAME
        for function in ("encode", "decode", "decode_words", "validate"):
            assert callable(getattr(found, function)), (name, function)
        if c.tiling is None:
            assert isinstance(found, ModuleType)
        else:
            assert isinstance(found, tiling.TiledCodec) and c.base == found.base.NAME
    with pytest.raises(KeyError):
        codec("q8_0_16x16")
