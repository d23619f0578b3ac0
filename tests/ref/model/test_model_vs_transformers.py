"""External check: the reference decoder against transformers' Qwen3ForCausalLM (eager, fp32).

The oracle is an independent implementation (PyTorch kernels, libm, BLAS order), so the two
agree only to rounding: logits within 1e-5 absolute and the same argmax at every position.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.model import weights_from_state_dict

from weightfile.ref.model.config import Qwen3Config
from weightfile.ref.model.decoder import Qwen3Model
from weightfile.ref.numerics.matrix import DenseMatrix

torch = pytest.importorskip("torch", reason="external check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="external check needs the 'external' extra (transformers)"
)

# qwen-math §2's tiny oracle shape, tied and untied
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
        sd.pop("lm_head.weight", None)  # tied: the file has no lm_head (qwen-math §1.1)
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
