"""External check: the Qwen3.5 reference against transformers' Qwen3_5ForCausalLM (fp32, CPU).

transformers is an independent implementation (torch kernels, libm, its chunked delta rule for
prefill), so the two agree only to rounding: logits within 1e-5 absolute and the same argmax at
every position. The tiny model has both layer types; the bf16 variant rounds every weight to
bf16 on both sides first, as a bf16-stored checkpoint would be.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35 import bf16_round, matrix_layout, text_file

from weightfile.families.qwen35.hf import canonical_from_hf, weights_from_hf
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.model import Qwen35Model

torch = pytest.importorskip("torch", reason="external check needs the 'external' extra (torch)")
transformers = pytest.importorskip(
    "transformers", reason="external check needs the 'external' extra (transformers)"
)

TIGHT = 2e-6
TOKENS = [3, 141, 59, 26, 5, 200, 97, 9, 223, 84, 17]
SIZES = dict(
    vocab_size=256,
    hidden_size=32,
    intermediate_size=48,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    linear_num_key_heads=2,
    linear_key_head_dim=8,
    linear_num_value_heads=4,
    linear_value_head_dim=8,
    linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
)


def build_hf(seed: int, tied: bool, moe: bool = False):
    torch.manual_seed(seed)
    rope = {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5}
    rope["mrope_section"] = [2, 1, 1]
    if moe:
        sizes = {k: v for k, v in SIZES.items() if k != "intermediate_size"}
        cfg = transformers.Qwen3_5MoeTextConfig(
            **sizes, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16,
            shared_expert_intermediate_size=24, rms_norm_eps=1e-6, rope_parameters=rope,
            tie_word_embeddings=tied, attn_implementation="eager",
        )  # fmt: skip
        model = transformers.Qwen3_5MoeForCausalLM(cfg).eval()
    else:
        cfg = transformers.Qwen3_5TextConfig(
            **SIZES, rms_norm_eps=1e-6, rope_parameters=rope, tie_word_embeddings=tied,
            attn_implementation="eager",
        )  # fmt: skip
        model = transformers.Qwen3_5ForCausalLM(cfg).eval()
    with torch.no_grad():  # move norms and gates off their neutral init so mistakes show
        for name, p in model.named_parameters():
            if "norm" in name or "dt_bias" in name:
                p.add_(0.2 * torch.randn_like(p))
            if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
                p.copy_(0.1 * torch.randn_like(p))  # fused MoE experts start uninitialised
    return model


def state_dict_f32(model) -> dict[str, np.ndarray]:
    return {k: v.detach().float().numpy() for k, v in model.state_dict().items()}


def compare(model, ours: Qwen35Model) -> float:
    with torch.no_grad():
        want = model(torch.tensor([TOKENS])).logits[0].float().numpy()
    got = ours.forward(TOKENS, ours.new_cache())
    assert got.shape == want.shape == (len(TOKENS), model.config.vocab_size)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    where = np.unravel_index(diff.argmax(), diff.shape)
    # The bound is 1e-5; we measure <= 3e-7 and hold 2e-6, so that a 0.1 % error in
    # the DeltaNet decay (a 1e-5 logit change on this model) fails too.
    assert diff.max() <= min(1e-5, TIGHT), f"max |logit diff| {diff.max():.3g} at {where}"
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert np.abs(want).max() > 0.1  # the logits are not trivially small
    return float(diff.max())


@pytest.mark.parametrize(("seed", "tied"), [(0, False), (1, True)])
def test_logits_match_transformers_fp32(seed: int, tied: bool) -> None:
    model = build_hf(seed, tied)
    config, weights = weights_from_hf(state_dict_f32(model), model.config.to_dict())
    assert config.layer_types == SIZES["layer_types"]
    compare(model, Qwen35Model(config, weights))


def test_logits_match_transformers_bf16_stored_weights() -> None:
    model = build_hf(2, False)
    with torch.no_grad():  # every weight rounded to bf16, then computed in fp32 on both sides
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).float())
    sd = state_dict_f32(model)
    assert all((bf16_round(v) == v).all() for v in sd.values())
    config, weights = weights_from_hf(sd, model.config.to_dict())
    compare(model, Qwen35Model(config, weights))


def test_moe_logits_match_transformers_fp32() -> None:
    model = build_hf(3, False, moe=True)
    config, weights = weights_from_hf(state_dict_f32(model), model.config.to_dict())
    assert config.is_moe
    compare(model, Qwen35Model(config, weights))


# HF tensors that are Use-consumed matrices in the file; everything else is stored direct (bf16,
# or fp32 for A_log / dt_bias). The quantized codecs work row by row, so rounding the HF matrix
# equals rounding the file's fused, row-reordered parents.
MATRIX_SUFFIXES = ("proj.weight", "in_proj_qkv.weight", "in_proj_z.weight", "in_proj_a.weight")
MATRIX_SUFFIXES += ("in_proj_b.weight", "lm_head.weight")


def as_stored(name: str, value, fmt: str):
    if name.endswith(("A_log", "dt_bias")):
        return value
    if not name.endswith(MATRIX_SUFFIXES) or fmt == "bf16":
        return bf16_round(value)
    codec = get_codec(fmt, matrix_layout(fmt))
    return codec.decode(codec.encode(value, value.shape), value.shape)


@pytest.mark.parametrize("fmt", ["bf16", "q8_g32_fp16", "q4_g64_fp16"])
def test_ninfer_file_matches_transformers_on_its_stored_weights(tmp_path, fmt: str) -> None:
    """HF weights -> canonical names -> a .ninfer file (fused parents, parts bindings) -> bind ->
    forward, against transformers running the same stored (rounded / de-quantized) weights."""
    model = build_hf(4, False)
    sd = state_dict_f32(model)
    config, _ = weights_from_hf(sd, model.config.to_dict())
    entry = text_file(config, canonical_from_hf(sd, config), fmt).write(tmp_path / "m.ninfer")
    with open_artifact(entry) as nf:
        bound_config, bound = bind_ninfer(nf)
    with torch.no_grad():
        for name, p in model.state_dict().items():
            p.copy_(torch.from_numpy(as_stored(name, sd[name], fmt)))
    compare(model, Qwen35Model(bound_config, bound))
