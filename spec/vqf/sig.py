"""VQFSig: the 200-byte SM2 signature block (spec/vqf.md §signature-block, §sm2-signature). All zero
unless SIGNED."""

from __future__ import annotations

from construct import Bytes, Default, Int32ul, Struct

VQFSig = Struct(
    "pub" / Default(Bytes(64), bytes(64)) * "signer SM2 public key x||y, 32 B each, big-endian",
    "r" / Default(Bytes(32), bytes(32)) * "SM2 signature r, big-endian",
    "s" / Default(Bytes(32), bytes(32)) * "SM2 signature s, big-endian",
    "digest" / Default(Bytes(32), bytes(32)) * "the signed digest D = SM3(H'' || dir || data)",
    "id" / Default(Bytes(32), bytes(32)) * 'ASCII "vllm-shs-vqf", zero padded',
    "id_len" / Default(Int32ul, 0) * "12 when signed",
    "rsvd" / Default(Int32ul, 0) * "0",
)
