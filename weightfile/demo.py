"""`weightfile demo`: the whole pipeline on a tiny model built here, in a few seconds.

1. Train a byte-level BPE tokenizer with `tokenizers` on weightfile/data/demo_corpus.txt.
2. Build Qwen3-architecture weights: a bigram model of the corpus fitted in closed form (the
   embedding is seeded noise, the lm_head the least-squares fit of the corpus' next-token
   frequencies (scaled) from the normed embedding), with small seeded attention and MLP weights so
   every operation of the decoder takes part. Values are rounded to a 2⁻¹⁰ grid before
   quantization, so last-bit differences between BLAS libraries cannot change the file.
3. Write it as VQF (Q8_0, 8×8 tiled, F16 embedding), verify it with the strict validator.
4. Run a prompt greedily with the reference decoder and print the tokens.

The model and tokenizer are cached in demo/<key> of the one cache folder (ref/user_cache.py:
$WEIGHTFILE_CACHE, else $XDG_CACHE_HOME/weightfile, else ~/.cache/weightfile), the key a hash of
the corpus and every build parameter, so a second run reuses them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import (
    EMBED,
    FINAL_NORM,
    LAYER_TENSORS,
    LM_HEAD,
    layer_tensor,
)
from weightfile.families.qwen3.to_vqf import arch_from_config, build_tensors
from weightfile.fast.backend import FAST
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.staging import staged_folder, sweep
from weightfile.ref.user_cache import cache_root
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.errors import InvalidError
from weightfile.spec.vqf.qtypes import QType

CORPUS_PATH = Path(__file__).with_name("data") / "demo_corpus.txt"
BUILD_VERSION = 2  # bump when the construction below changes (2: spec gate/up/down shapes)
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
DEFAULT_PROMPT = "The weight file"


@dataclass(frozen=True)
class DemoSizes:
    vocab: int = 640  # the tokenizer's target (about one token per corpus word)
    hidden: int = 128
    intermediate: int = 256
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 32
    seed: int = 2026
    logit_scale: float = 12.0


def cache_key(corpus: str, sizes: DemoSizes) -> str:
    """Hash of everything the build reads: the corpus, the sizes and the build version."""
    blob = json.dumps({"corpus": corpus, "sizes": asdict(sizes), "v": BUILD_VERSION})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def train_tokenizer(lines: list[str], vocab: int) -> Tokenizer:
    """A byte-level BPE tokenizer trained on `lines` (every byte is in the alphabet)."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=list(SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer)
    return tok


def bigram_freq(lines: list[str], tok: Tokenizer, vocab: int) -> np.ndarray:
    """Next-token frequencies (add-0.01 smoothed), rows = current token; a line ends in eos."""
    eos = tok.token_to_id(SPECIAL[0])
    counts = np.full((vocab, vocab), 0.01)
    for line in lines:
        ids = [*tok.encode(line).ids, eos]
        for a, b in itertools.pairwise(ids):
            counts[a, b] += 1.0
    return counts / counts.sum(axis=1, keepdims=True)


def on_grid(x: np.ndarray) -> np.ndarray:
    """Round to multiples of 2⁻¹⁰ (float32), hiding last-bit BLAS differences."""
    return (np.round(np.asarray(x, dtype=np.float64) * 1024.0) / 1024.0).astype(np.float32)


def demo_state_dict(hf: dict, target: np.ndarray, s: DemoSizes) -> dict[str, np.ndarray]:
    """transformers-named weights of the bigram model (see the module docstring)."""
    c = config_from_hf(hf)
    rng = np.random.default_rng(s.seed)
    d = c.hidden_size
    embed = on_grid(rng.standard_normal((c.vocab_size, d)) * 0.5)
    normed = embed / np.sqrt(np.mean(embed.astype(np.float64) ** 2, axis=1, keepdims=True))
    head, *_ = np.linalg.lstsq(normed, target * s.logit_scale, rcond=None)
    sd = {EMBED: embed, LM_HEAD: on_grid(head.T), FINAL_NORM: np.ones(d, np.float32)}
    shapes = {
        "q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
        "o_proj": (d, c.q_dim), "gate_proj": (c.intermediate_size, d),
        "up_proj": (c.intermediate_size, d), "down_proj": (d, c.intermediate_size),
    }  # fmt: skip
    for i in range(c.num_hidden_layers):
        for f in LAYER_TENSORS:
            if f.endswith("norm"):
                n = c.head_dim if f in ("q_norm", "k_norm") else d
                sd[layer_tensor(i, f)] = np.ones(n, np.float32)
            else:
                sd[layer_tensor(i, f)] = on_grid(rng.standard_normal(shapes[f]) * 0.02)
    return sd


def build(folder: Path, corpus: str, s: DemoSizes) -> Path:
    """Write demo.vqf and its tokenizer sidecar into `folder`; returns the model path."""
    lines = [ln for ln in corpus.splitlines() if ln.strip()]
    tok = train_tokenizer(lines, s.vocab)
    # padded: tiled matrices need whole tiles (spec/vqf.md §repack-gates)
    v = -(-tok.get_vocab_size() // 32) * 32
    hf = dict(
        vocab_size=v, hidden_size=s.hidden, intermediate_size=s.intermediate,
        num_hidden_layers=s.layers, num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
        head_dim=s.head_dim, rope_theta=1000000.0, rms_norm_eps=1e-6, max_position_embeddings=512,
        bos_token_id=tok.token_to_id(SPECIAL[0]), eos_token_id=tok.token_to_id(SPECIAL[0]),
        tie_word_embeddings=False,
    )  # fmt: skip
    c = config_from_hf(hf)
    sd = demo_state_dict(hf, bigram_freq(lines, tok, v), s)
    flags = file_flags(QType.Q8_0, "tiled")
    path = folder / "demo.vqf"
    tensors = build_tensors(sd, c, QType.Q8_0, flags, FAST)
    write_vqf(path, arch=arch_from_config(hf, c), tensors=tensors, flags=flags)
    tok.save(str(sidecar_path(path)))
    return path


def verify(path: Path) -> None:
    """The strict validator (checksum included) must find nothing."""
    problems = validate(path, checksum=True)
    if problems:
        raise InvalidError("demo.verify", f"the demo file breaks {problems[0]}", path=str(path))


def demo_model(sizes: DemoSizes | None = None, root: Path | None = None) -> tuple[Path, bool]:
    """The cached demo model (built on first use) and whether this call built it."""
    s = sizes or DemoSizes()
    corpus = CORPUS_PATH.read_text(encoding="utf-8")
    final = (root or cache_root()) / "demo" / cache_key(corpus, s)
    model = final / "demo.vqf"
    if model.is_file() and sidecar_path(model).is_file():
        return model, False
    final.parent.mkdir(parents=True, exist_ok=True)
    # The build folder is a writer's staging folder (ref/staging.py): locked while this build
    # lives, so a build killed with -9 leaves a folder the next call's sweep removes, and a
    # live concurrent build's folder is left alone.
    sweep(final.parent)
    with staged_folder(final) as work:  # removed on failure; renamed away on success
        verify(build(work, corpus, s))
        if final.exists():  # a half-built or concurrent entry: replace it
            shutil.rmtree(final, ignore_errors=True)
        os.replace(work, final)
    return model, True
