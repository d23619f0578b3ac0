"""A tiny bindable VQF with a trained BPE tokenizer sidecar, for the run / trace tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.model.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, layer_tensor
from weightfile.ref.vqf.import_hf import (
    arch_from_config,
    build_tensors,
    config_from_hf,
    file_flags,
)
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.qtypes import QType

TEXT = [
    "the small model reads a short line and writes another one",
    "a line of text becomes tokens and the tokens become text again",
] * 3


def bpe_tokenizer(vocab: int = 300) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXT, trainer)
    return tok


def write_tiny_model(folder: Path, qtype: QType = QType.Q8_0, seed: int = 0) -> Path:
    """m.vqf (random weights, vocab = the tokenizer's) and m.vqf.tokenizer.json in `folder`."""
    tok = bpe_tokenizer()
    hf = dict(
        vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        rope_theta=10000.0, rms_norm_eps=1e-6, bos_token_id=0, eos_token_id=0,
        tie_word_embeddings=True,
    )  # fmt: skip
    c = config_from_hf(hf)
    rng = np.random.default_rng(seed)
    sd = {EMBED: rng.standard_normal((c.vocab_size, c.hidden_size)).astype(np.float32)}
    sd[FINAL_NORM] = np.ones(c.hidden_size, np.float32)
    shapes = {
        "attn_norm": (c.hidden_size,), "ffn_norm": (c.hidden_size,), "q_norm": (c.head_dim,),
        "k_norm": (c.head_dim,), "q_proj": (c.q_dim, c.hidden_size),
        "k_proj": (c.kv_dim, c.hidden_size), "v_proj": (c.kv_dim, c.hidden_size),
        "o_proj": (c.hidden_size, c.q_dim), "gate_proj": (c.intermediate_size, c.hidden_size),
        "up_proj": (c.intermediate_size, c.hidden_size),
        "down_proj": (c.hidden_size, c.intermediate_size),
    }  # fmt: skip
    for i in range(c.num_hidden_layers):
        for f in LAYER_TENSORS:
            scale = 1.0 if f.endswith("norm") else 0.3
            base = 1.0 if f.endswith("norm") else 0.0
            sd[layer_tensor(i, f)] = (base + scale * rng.standard_normal(shapes[f])).astype(
                np.float32
            )
    flags = file_flags(qtype, "legacy")
    path = folder / "m.vqf"
    write_vqf(path, arch=arch_from_config(hf, c), tensors=build_tensors(sd, c, qtype, flags),
              flags=flags)  # fmt: skip
    tok.save(str(sidecar_path(path)))
    return path
