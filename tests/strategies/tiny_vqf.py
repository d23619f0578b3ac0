"""A tiny bindable VQF with a trained BPE tokenizer sidecar, for the run / trace tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, layer_tensor
from weightfile.families.qwen3.to_vqf import (
    VQF_NORMS,
    arch_from_config,
    build_tensors,
    directory_geometry,
)
from weightfile.fast.backend import FAST
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.vqf.encode import encode, file_flags
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import KINDS
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


# --- random model files for the fast == ref property
# (spec/vqf.md §flags, §encodings, §text-tensors, §arch-semantics) ---------------

#: (projection qtype, header flags) pairs: every layout a dense file's matrices can take.
MATRIX_FORMATS = {
    "q8_0": (QType.Q8_0, 0),
    "q8_0_8x8": (QType.Q8_0, VQFFlag.Q8_8X8),
    "g256": (QType.Q8_0, VQFFlag.G256),
    "g256_8x8": (QType.Q8_0, VQFFlag.G256 | VQFFlag.Q8_8X8),
    "q4i8": (QType.Q8_0, VQFFlag.Q8BUF_Q4),
    "q4_0": (QType.Q4_0, 0),
    "q4_0_4x4": (QType.Q4_0, VQFFlag.Q4_4X4),
    "f32": (QType.F32, 0),
    "f16": (QType.F16, 0),
}


@dataclass(frozen=True)
class ModelSpec:
    """What a random model file holds: its config, weight format, embedding and seed."""

    config: Qwen3Config
    matrix_format: str
    embed_f16: bool
    seed: int

    def describe(self) -> str:
        c = self.config
        return (
            f"{self.matrix_format} emb={'f16' if self.embed_f16 else 'f32'} d={c.hidden_size} "
            f"ffn={c.intermediate_size} L={c.num_hidden_layers} h={c.num_attention_heads}/"
            f"{c.num_key_value_heads}x{c.head_dim} V={c.vocab_size} tied={c.tie_word_embeddings} "
            f"mrope={c.mrope_section}"
        )


@st.composite
def model_specs(draw: st.DrawFn) -> ModelSpec:
    """A random dense Qwen3 (or Qwen3-VL text) geometry; projection widths are multiples of 32
    (quantized blocks) and of 8 (tiled row groups), vocab any size (a vocab that is not a whole
    row group keeps its lm_head untiled, spec/vqf.md §q8-tiled)."""
    head_dim = draw(st.sampled_from([8, 16, 32]))
    kv_heads = draw(st.integers(1, 2))
    heads = kv_heads * draw(st.integers(1, 3))
    while heads * head_dim % 32:
        heads *= 2
    sections = None
    if draw(st.booleans()):
        half = head_dim // 2
        t = draw(st.integers(0, half))
        h = draw(st.integers(0, half - t))
        sections = (t, h, half - t - h)
    config = Qwen3Config(
        vocab_size=draw(st.integers(8, 60)),
        hidden_size=32 * draw(st.integers(1, 2)),
        intermediate_size=32 * draw(st.integers(1, 3)),
        num_hidden_layers=draw(st.integers(1, 2)),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        rope_theta=draw(st.sampled_from([10000.0, 1000000.0, 5000.0])),
        rms_norm_eps=draw(st.sampled_from([1e-6, 1e-5])),
        tie_word_embeddings=draw(st.booleans()),
        mrope_section=sections,
    )
    return ModelSpec(
        config,
        draw(st.sampled_from(sorted(MATRIX_FORMATS))),
        draw(st.booleans()),
        draw(st.integers(0, 2**32 - 1)),
    )


def write_model_file(path: Path, spec: ModelSpec) -> Path:
    """Random weights (norms perturbed around 1) in the spec's formats; tied files have no lm."""
    c, rng = spec.config, np.random.default_rng(spec.seed)
    qtype, flags = MATRIX_FORMATS[spec.matrix_format]
    flags |= VQFFlag.EMB_F16 if spec.embed_f16 else 0
    d, hd, nl = c.hidden_size, c.head_dim, c.num_hidden_layers
    family = "q4" if qtype == QType.Q4_0 else "q8"
    g = directory_geometry(c)

    def values(*shape: int, base: float = 0.0, scale: float = 0.3) -> np.ndarray:
        return (base + scale * rng.standard_normal(shape)).astype(np.float32)

    embed = values(c.vocab_size, d, scale=1.0)
    if spec.embed_f16:
        emb = [TensorSource("token_embed", QType.F16, c.vocab_size, d, f16_words(embed))]
    else:
        emb = [TensorSource("token_embed", QType.F32, c.vocab_size, d, embed.tobytes())]
    norms = [TensorSource("final_norm", QType.F32, d, 1, values(d, base=1.0).tobytes())]
    for name in VQF_NORMS.values():
        n = hd if name in ("q_norm", "k_norm") else d
        norms.append(TensorSource(name, QType.F32, nl * n, 1, values(nl * n, base=1.0).tobytes()))
    shapes = {
        "q": (c.q_dim, d), "k": (c.kv_dim, d), "v": (c.kv_dim, d), "o": (d, c.q_dim),
        "gate": (c.intermediate_size, d), "up": (c.intermediate_size, d),
        "down": (d, c.intermediate_size),
    }  # fmt: skip
    if not c.tie_word_embeddings:
        shapes["lm"] = (c.vocab_size, d)
    mats = []
    for short, (rows, cols) in shapes.items():
        layers = 1 if short == "lm" else nl
        name = f"{family}_{short}"
        parts = [encode(qtype, flags, name, values(rows, cols), FAST) for _ in range(layers)]
        # the directory shape of spec/vqf.md §text-tensors (spec/vqf.md §geometry)
        mats.append(TensorSource(name, qtype, *KINDS[name].directory_shape(g), b"".join(parts)))
    hf = {"bos_token_id": 0, "eos_token_id": 0}
    arch = arch_from_config(hf, c)
    if c.mrope_section:
        arch |= {"has_mrope": 1, "mrope_n_sec": 3, "mrope_sections": [*c.mrope_section, 0]}
    return write_vqf(path, arch=arch, tensors=emb + norms + mats, flags=int(flags))


def f16_words(values: np.ndarray) -> bytes:
    """float32 -> binary16 words, round to nearest even (numpy's cast)."""
    return values.astype("<f2").tobytes()
