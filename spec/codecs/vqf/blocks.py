"""Byte geometry of the VQF quantized blocks and tile groups (spec/vqf.md §q8-0, §q4i8, §g256,
§q8-tiled, §q4-0, §q4-8x8l).

One `construct` record per on-disk unit. Payloads are read as bounds-checked slices by the codecs;
these schemas state the field order and sizes, and the registry derives every block size from them.
"""

from __future__ import annotations

from construct import Array, Bytes, Int8sl, Int16ul, Struct

#: Elements covered by one block, the unit of every quantized VQF encoding (spec/vqf.md §encodings).
QK = 32

#: Q8_0 legacy block, 34 B (spec/vqf.md §q8-0); also the Q4I8 (spec/vqf.md §q4i8) and G256
#: (spec/vqf.md §g256) block.
block_q8_0 = Struct(
    "d" / Int16ul,  # f16 scale bits, LE; value = code * d
    "qs" / Array(QK, Int8sl),  # 32 int8 codes, element j at +2+j
)

#: Q4_0 legacy block, 18 B (spec/vqf.md §q4-0): byte j holds element j (low nibble) and j+16 (high
#: nibble).
block_q4_0 = Struct(
    "d" / Int16ul,  # f16 scale bits, LE; value = (nibble - 8) * d
    "qs" / Bytes(QK // 2),  # 16 bytes of nibble pairs
)

#: Q8 8x8 tile group, 272 B per 8 rows x 32 cols (spec/vqf.md §q8-tiled).
block_q8_0x8 = Struct(
    "d" / Array(8, Int16ul),  # the 8 row scales, row order (row m at 2m)
    "qs" / Bytes(8 * QK),  # codes in 4-byte chunks: row m's code j at 16 + 32(j//4) + 4m + j%4
)

#: Q8 4x4 tile group, 136 B per 4 rows x 32 cols (spec/vqf.md §q8-tiled; written when
#: VLLM_Q8_8X8=0).
block_q8_0x4 = Struct(
    "d" / Array(4, Int16ul),  # the 4 row scales, row order
    "qs" / Bytes(4 * QK),  # codes in 4-byte chunks: row m's code j at 8 + 16(j//4) + 4m + j%4
)

#: Q4 4x4 tile group, 72 B per 4 rows x 32 cols (spec/vqf.md §q4-0); every qs byte XOR 0x88.
block_q4_0x4 = Struct(
    "d" / Array(4, Int16ul),  # the 4 row scales, row order
    "qs" / Bytes(4 * QK // 2),  # row m's legacy byte k at 8 + 16(k//4) + 4m + k%4, XOR 0x88
)

#: Q4_8X8L tile group, 144 B per 8 rows x 32 cols (spec/vqf.md §q4-8x8l); every qs byte XOR 0x88.
block_q4_0x8 = Struct(
    "d" / Array(8, Int16ul),  # the 8 row scales, row order
    "qs" / Bytes(8 * QK // 2),  # row m's legacy byte k at 16 + 64(k//8) + 8m + k%8, XOR 0x88
)
