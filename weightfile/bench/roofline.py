"""The decode roofline: weight bytes read per token ÷ memory read bandwidth (issue 6).

Decoding one token reads, once each, every projection matrix of every layer and the lm_head of
the projection set the decoder binds (q4 in a dual file, spec/vqf.md §weight-modes), the norm
weights, and one row of the token embedding (a lookup, not a product). Vision tensors and the
unbound projection set are not read. At batch 1 that traffic, not arithmetic, bounds the speed:
tokens/s ≤ bandwidth / bytes.
"""

from __future__ import annotations

from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.vqf.qtypes import tensor_bytes

from .engines import projection_set_of

EMBED = "token_embed"
NORMS = ("final_norm", "attn_norm", "ffn_norm", "q_norm", "k_norm")


def weight_bytes_per_token(vqf: VQFFile) -> int:
    """Norms and the bound family's matrices (spec/vqf.md §text-tensors), plus one embedding row."""
    prefix = projection_set_of(vqf) + "_"
    total = sum(e.bytes for e in vqf.entries if e.name in NORMS or e.name.startswith(prefix))
    embed = next((e for e in vqf.entries if e.name == EMBED), None)
    if embed is not None:
        total += tensor_bytes(embed.qtype, int(vqf.header.arch["dim"]))
    return total


def roofline_tokens_per_s(bytes_per_token: int, bytes_per_second: float) -> float:
    """The most tokens per second a machine reading `bytes_per_second` can decode."""
    return bytes_per_second / bytes_per_token
