"""The decode roofline: weight bytes read per token ÷ memory read bandwidth (issue 6).

Decoding one token reads every matrix of every layer and the lm_head once, the norm weights,
and one row of the token embedding (a lookup, not a product). At batch 1 that traffic, not
arithmetic, bounds the speed: tokens/s ≤ bandwidth / weight bytes per token.
"""

from __future__ import annotations

from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.vqf.qtypes import tensor_bytes

EMBED = "token_embed"


def weight_bytes_per_token(vqf: VQFFile) -> int:
    """Every tensor's bytes except the embedding, plus one embedding row (vqf.md §7.1)."""
    total = sum(e.bytes for e in vqf.entries if e.name != EMBED)
    embed = next((e for e in vqf.entries if e.name == EMBED), None)
    if embed is not None:
        total += tensor_bytes(embed.qtype, int(vqf.header.arch["dim"]))
    return total


def roofline_tokens_per_s(bytes_per_token: int, bytes_per_second: float) -> float:
    """The most tokens per second a machine reading `bytes_per_second` can decode."""
    return bytes_per_second / bytes_per_token
