"""The trailer at file_len (spec/vqf.md §file-layout, §fnv-trailer, §sm4-hmac)."""

from __future__ import annotations

from construct import Bytes, Int64ul, Struct

VQFTrailerFNV = Struct(
    "fnv1a64" / Int64ul * "FNV-1a-64 of directory || data region; plaintext files",
)

VQFTrailerTag = Struct(
    "hmac_sm3" / Bytes(32) * "HMAC-SM3 over H' || directory || ciphertext; ENC files",
)
