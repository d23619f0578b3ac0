"""Fixed numbers of the VQF container (spec/vqf.md §constants, §placement, §fnv-trailer)."""

from __future__ import annotations

from typing import Final

#: u32 at offset 0, little-endian; the bytes on disk read "FQFW", not "VQFW"
#: (spec/vqf.md §decisions item 2).
MAGIC: Final = 0x57465146
MAGIC_BYTES: Final = b"FQFW"

VERSION_DENSE: Final = 2  #: dense model, either header layout
VERSION_MOE: Final = 3  #: qwen3_moe, always the current 448-byte layout
VERSIONS: Final = (VERSION_DENSE, VERSION_MOE)

HEADER_BYTES: Final = 448  #: sizeof(VQFHeader), current 45-word arch layout
LEGACY_HEADER_BYTES: Final = 432  #: sizeof of the legacy 41-word layout
# (spec/vqf.md §legacy-header)
SIG_BYTES: Final = 200  #: sizeof(VQFSig)
ARCH_WORDS: Final = 45
LEGACY_ARCH_WORDS: Final = 41
ENTRY_BYTES: Final = 64  #: sizeof(VQFTensor)
NAME_BYTES: Final = 32  #: VQFTensor.name, NUL-terminated

DIRECTORY_OFFSET: Final = 448  #: round_up(sizeof(header), 64) for both layouts
PAGE: Final = 4096  #: VQF_HEADER_BYTES: data_offset is rounded up to it
ALIGN: Final = 64  #: VQF_ALIGN: every tensor starts on it and is zero-padded to it

FNV_TRAILER_BYTES: Final = 8  #: plaintext: FNV-1a-64 as u64 LE at file_len
TAG_TRAILER_BYTES: Final = 32  #: ENC: HMAC-SM3 tag at file_len

FNV_OFFSET_BASIS: Final = 0xCBF29CE484222325
FNV_PRIME: Final = 0x100000001B3

#: Smallest file the loader maps: a header plus one directory entry (spec/vqf.md §loader-chain step
#: 1).
MIN_FILE_BYTES: Final = HEADER_BYTES + ENTRY_BYTES

SIG_ID: Final = b"vllm-shs-vqf"  #: VQFSig.id of a signed file (spec/vqf.md §signature-block)
