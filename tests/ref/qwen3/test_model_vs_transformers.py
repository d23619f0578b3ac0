"""External check: the reference decoder against transformers' Qwen3ForCausalLM (eager, fp32).

The oracle is an independent implementation (PyTorch kernels, libm, BLAS order), so the two
agree only to rounding: logits within 1e-5 absolute and the same argmax at every position.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from weightfile.families.qwen3.hf import weights_from_state_dict
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.numerics.matrix import DenseMatrix, QuantMatrix
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.spec.numerics.profile import CANONICAL, QuantizedMatmul

torch = pytest.importorskip("torch", reason="external check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="external check needs the 'external' extra (transformers)"
)

# spec/models.md §tiny-checkpoints's tiny oracle shape, tied and untied
SIZES = dict(
    vocab_size=512,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
)
TOKENS = [3, 141, 59, 26, 5, 358, 97, 9, 323, 84]


def build_hf(tied: bool, theta: float, seed: int):
    torch.manual_seed(seed)
    cfg = transformers.Qwen3Config(
        **SIZES,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": theta},
        tie_word_embeddings=tied,
        attn_implementation="eager",
    )
    model = transformers.Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():  # norms start at 1: perturb them so a missed norm weight shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    return model


def ours_from(model, tied: bool, theta: float) -> Qwen3Model:
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    if tied:
        sd.pop("lm_head.weight", None)  # tied: the file has no lm_head (spec/models.md §qwen3)
    config = Qwen3Config(**SIZES, rope_theta=theta, rms_norm_eps=1e-6, tie_word_embeddings=tied)
    return Qwen3Model(config, weights_from_state_dict(sd, SIZES["num_hidden_layers"]))


@pytest.mark.parametrize(("tied", "theta", "seed"), [(True, 1e6, 0), (False, 1e4, 1)])
def test_logits_match_transformers_eager_fp32(tied: bool, theta: float, seed: int) -> None:
    model = build_hf(tied, theta, seed)
    with torch.no_grad():
        want = model(torch.tensor([TOKENS])).logits[0].numpy()
    ours = ours_from(model, tied, theta)
    if not tied:
        assert isinstance(ours.weights.lm_head, DenseMatrix)
    got = ours.forward(TOKENS, ours.new_cache())
    assert got.shape == want.shape == (len(TOKENS), SIZES["vocab_size"])
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    assert diff.max() <= 1e-5, (
        f"max |logit diff| {diff.max():.3g} at {np.unravel_index(diff.argmax(), diff.shape)}"
    )
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert np.abs(want).max() > 0.1  # the logits are not trivially small


# --- quantized weights: transformers runs on the de-quantized values (issue 5 §6) ------------


def quantize_q8_0(w: np.ndarray) -> QuantMatrix:
    """Q8_0 words of a float32 [out, in] matrix: d = amax/127 per 32-block, codes rounded."""
    blocks = w.reshape(w.shape[0], -1, 32)
    d = (np.abs(blocks).max(axis=2) / 127).astype(np.float16)
    scale = d.astype(np.float32)[..., None]
    safe = np.where(scale == 0, 1, scale)
    codes = np.clip(np.rint(blocks / safe), -127, 127).astype(np.int8).reshape(w.shape)
    return QuantMatrix(codes, d.view(np.uint16))


def dequantize(m: QuantMatrix) -> np.ndarray:
    scale = m.scale_bits.view(np.float16).astype(np.float32).repeat(32, axis=1)
    return m.codes.astype(np.float32) * scale  # exact products (spec/numerics.md §f32-weights)


def quantized_pair(seed: int):
    """A transformers model whose projections hold de-quantized Q8_0 values, and ours on the
    same Q8_0 words (embedding and norms stay float32; the lm_head is tied)."""
    model = build_hf(True, 1e6, seed)
    words = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "proj" in name:
                words[name] = quantize_q8_0(p.detach().numpy())
                p.copy_(torch.from_numpy(dequantize(words[name])))
    ours = ours_from(model, True, 1e6)
    layers = []
    for i, lw in enumerate(ours.weights.layers):
        p = f"model.layers.{i}."
        q = {a: words[p + k + ".weight"] for a, k in _PROJ.items()}
        layers.append(replace(lw, **q))
    return model, replace(ours.weights, layers=tuple(layers)), ours.config


_PROJ = {
    "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj",
    "o_proj": "self_attn.o_proj", "gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj",
    "down_proj": "mlp.down_proj",
}  # fmt: skip


def test_q8_words_match_transformers_on_dequantized_weights() -> None:
    model, weights, config = quantized_pair(seed=2)
    with torch.no_grad():
        want = model(torch.tensor([TOKENS])).logits[0].numpy().astype(np.float64)
    f32w = Qwen3Model(config, weights, CANONICAL.with_quantized_matmul(QuantizedMatmul.F32_WEIGHTS))
    got = f32w.forward(TOKENS, f32w.new_cache())
    assert np.abs(got - want).max() <= 1e-5  # only float rounding differs
    # (spec/numerics.md §how-far)
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    # q8_activation adds the activation rounding of spec/numerics.md §q8-activation: each matvec
    # input moves by <= d/2 = amax/254 of its block (0.4 %), so the logits move by about that
    # fraction of their scale.
    eng = Qwen3Model(config, weights)
    act = eng.forward(TOKENS, eng.new_cache())
    scale = np.abs(want).max()
    assert 1e-5 < np.abs(act - want).max() <= 0.02 * scale


# --- Qwen3-VL text tower: interleaved MRoPE with image-like position ids (spec/models.md §qwen3-vl)
# -----


def test_qwen3_vl_text_tower_mrope_matches_transformers() -> None:
    from transformers.models.qwen3_vl import modeling_qwen3_vl

    torch.manual_seed(3)
    rope = {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [4, 2, 2]}
    cfg = transformers.Qwen3VLTextConfig(
        **SIZES,
        rms_norm_eps=1e-6,
        rope_parameters={**rope, "mrope_interleaved": True},
        attn_implementation="eager",
    )
    tower = modeling_qwen3_vl.Qwen3VLTextModel(cfg).eval()
    with torch.no_grad():
        for name, p in tower.named_parameters():
            if "norm" in name:
                p.add_(0.2 * torch.randn_like(p))
    sd = {"model." + k: v.numpy() for k, v in tower.state_dict().items()}
    config = Qwen3Config(**SIZES, rope_theta=5e6, rms_norm_eps=1e-6, mrope_section=(4, 2, 2))
    ours = Qwen3Model(config, weights_from_state_dict(sd, SIZES["num_hidden_layers"]))
    tokens = TOKENS[:7]
    t, h, w = [0, 1, 2, 3, 3, 3, 6], [0, 1, 2, 3, 4, 4, 6], [0, 1, 2, 3, 4, 5, 6]  # a 2x3 grid
    with torch.no_grad():
        ids = torch.tensor([t, h, w])[:, None, :]
        want = tower(input_ids=torch.tensor([tokens]), position_ids=ids).last_hidden_state[0]
    rec = TraceRecorder()
    ours.forward(tokens, ours.new_cache(), position_ids=list(zip(t, h, w, strict=True)), trace=rec)
    got = rec.arrays()["final_norm"]
    assert np.abs(got - want.numpy()).max() <= 1e-5
    text_only = TraceRecorder()
    ours.forward(tokens, ours.new_cache(), trace=text_only)  # plain positions must not match
    assert np.abs(text_only.arrays()["final_norm"] - want.numpy()).max() > 1e-2
