"""Directory qtype codes and the tensor size function (spec/vqf.md §qtype-codes, §size-function)."""

from __future__ import annotations

import enum


class QType(enum.IntEnum):
    """VQFTensor.qtype. The layout variant (tiling, G256, Q4I8) is never encoded here
    (spec/vqf.md §qtype-codes)."""

    F32 = 0x01
    Q8_0 = 0x02  #: also the Q8 8x8/4x4 tiled, G256 and Q4I8 payloads
    Q4_0 = 0x03  #: also Q4 4x4
    Q4_8X8L = 0x04  #: x8_* only
    F16 = 0x05


#: (elements per block, bytes per block) of each qtype.
BLOCK_GEOMETRY: dict[QType, tuple[int, int]] = {
    QType.F32: (1, 4),
    QType.F16: (1, 2),
    QType.Q8_0: (32, 2 + 32),  # f16 scale + 32 int8 codes
    QType.Q4_0: (32, 2 + 16),  # f16 scale + 16 bytes of nibbles
    QType.Q4_8X8L: (32, 2 + 16),
}


def tensor_bytes(qtype: int, elements: int) -> int:
    """Payload bytes of `elements` = rows·cols values: 4N, 2N, ceil(N/32)·34 or ·18
    (spec/vqf.md §size-function)."""
    block_elements, block_bytes = BLOCK_GEOMETRY[QType(qtype)]
    return -(-elements // block_elements) * block_bytes


def qtype_name(qtype: int) -> str:
    """The registry name of a code, or `0x..` for an unregistered one."""
    try:
        return QType(qtype).name
    except ValueError:
        return f"0x{qtype:02x}"
