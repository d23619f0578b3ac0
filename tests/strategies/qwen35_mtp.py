"""Tiny Qwen3.5 `.ninfer` files with an MTP component (and optionally a proposal head) for the
speculative-decoding tests (spec/models.md §qwen35-mtp).

`mtp_file(seed, moe, agree, proposal)` writes a small dense or MoE model. `agree` in [0, 1] pulls
the model towards one whose MTP head always drafts the target's next token: with agree = 1 every
target layer's output projections (attention output, GDN output, FFN down) are zero, so the
target's hidden state at position t is its token's embedding and its next token a function
f(x_t) of the current token alone (the final norm and head of the embedding row); the MTP's
input projection is [I 0] (the embedding half), its block's output projections are zero (the
block passes u through its residuals), its embedding norm is w = 0 and its final norm the text
final norm, so d = on(on(embed(x_{t+1}))) and the draft is f(x_{t+1}) = x_{t+2} — the target's
next token, up to the rounding of the second norm. Between 0 and 1 those matrices are scaled by
1 − agree: drafts are right often but not always, so rounds accept partial prefixes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.families.qwen35.mtp_files import agreeing
from weightfile.ref.qwen35.config import Qwen35Config, validate_text_config

from .qwen35 import add_mtp, add_proposal, random_mtp_parameters, random_parameters, text_file

SMALL: dict[str, Any] = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "hidden_size": 16,
    "vocab_size": 48,
    "num_hidden_layers": 2,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "rms_norm_eps": 1e-6,
    "layer_types": ["linear_attention", "full_attention"],
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 8,
    "rope_parameters": {
        "rope_theta": 10000,
        "partial_rotary_factor": 0.5,
        "mrope_section": [1, 1, 0],
    },
    "linear_num_key_heads": 1,
    "linear_key_head_dim": 4,
    "linear_num_value_heads": 2,
    "linear_value_head_dim": 4,
    "linear_conv_kernel_dim": 4,
    "intermediate_size": 16,
}
SMALL_MOE = {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "model_type": "qwen3_5_moe_text",
    "num_experts": 3,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 8,
    "shared_expert_intermediate_size": 8,
}


def small_config(moe: bool) -> Qwen35Config:
    doc = copy.deepcopy(SMALL)
    if moe:
        del doc["intermediate_size"]
        doc |= SMALL_MOE
    return validate_text_config(doc)


def mtp_file(
    path: Path, seed: int, moe: bool = False, agree: float = 0.0, proposal: int = 0
) -> Path:
    """A small model with MTP written to `path` (bf16 weights); `proposal` > 0 adds an indexed
    proposal head of that many rows (the output head's rows of a seeded choice of ids)."""
    config = small_config(moe)
    params = random_parameters(config, seed)
    mtp = random_mtp_parameters(config, seed + 1)
    agreeing(params, mtp, agree)
    tf = text_file(config, params, "bf16")
    add_mtp(tf, mtp)
    if proposal:
        ids = np.random.default_rng(seed).permutation(config.vocab_size)[:proposal]
        add_proposal(tf, params["text/output_head"][ids], ids)
    return tf.write(path)
