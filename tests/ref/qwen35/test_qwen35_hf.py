"""transformers names to canonical names without torch: a hand-laid state dict whose values
are their own flat indices, so every row selection, split and transpose can be checked by
arithmetic (qwen-math §1.4 / §2 names and layouts), and every bad source has a typed error."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from strategies.ninfer3 import raises_rule
from strategies.qwen35 import tiny_config, tiny_config_json

from weightfile.ref.qwen35.hf import canonical_from_hf, text_config_from_hf, weights_from_hf
from weightfile.spec.errors import InvalidError, NotFoundError, UnsupportedError

CFG = tiny_config_json()
H, D, HEADS, KV = CFG["hidden_size"], CFG["head_dim"], 4, 2
KG, VG, NV, K = 2 * 8, 4 * 8, 4, CFG["linear_conv_kernel_dim"]


def counting(*shape: int) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)


def hf_config() -> dict[str, Any]:
    """The tiny config as transformers writes it: extra keys, rope_type, no architectures."""
    raw = copy.deepcopy(CFG)
    del raw["architectures"]
    raw["rope_parameters"]["rope_type"] = "default"
    return raw | {"hidden_act": "silu", "attention_bias": False, "architectures": None}


def hf_state_dict() -> dict[str, np.ndarray]:
    sd = {
        "model.embed_tokens.weight": counting(CFG["vocab_size"], H),
        "model.norm.weight": counting(H),
        "lm_head.weight": counting(CFG["vocab_size"], H) + 0.5,
    }
    for i, kind in enumerate(CFG["layer_types"]):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = counting(H)
        sd[p + "post_attention_layernorm.weight"] = counting(H)
        for role, rows in (("gate", 48), ("up", 48)):
            sd[f"{p}mlp.{role}_proj.weight"] = counting(rows, H)
        sd[p + "mlp.down_proj.weight"] = counting(H, 48)
        if kind == "full_attention":
            a = p + "self_attn."
            sd[a + "q_proj.weight"] = counting(2 * HEADS * D, H)
            sd[a + "k_proj.weight"] = counting(KV * D, H)
            sd[a + "v_proj.weight"] = counting(KV * D, H)
            sd[a + "o_proj.weight"] = counting(H, HEADS * D)
            sd[a + "q_norm.weight"] = counting(D)
            sd[a + "k_norm.weight"] = counting(D)
        else:
            g = p + "linear_attn."
            sd[g + "in_proj_qkv.weight"] = counting(2 * KG + VG, H)
            sd[g + "in_proj_z.weight"] = counting(VG, H)
            sd[g + "in_proj_a.weight"] = counting(NV, H)
            sd[g + "in_proj_b.weight"] = counting(NV, H)
            sd[g + "conv1d.weight"] = counting(2 * KG + VG, 1, K)
            sd[g + "A_log"] = counting(NV)
            sd[g + "dt_bias"] = counting(NV)
            sd[g + "norm.weight"] = counting(8)
            sd[g + "out_proj.weight"] = counting(H, VG)
    return sd


def test_config_is_normalised_to_the_closed_set() -> None:
    assert text_config_from_hf(hf_config()) == CFG
    vl = {"model_type": "qwen3_5", "text_config": hf_config()}
    assert text_config_from_hf(vl) == CFG


def test_layer_types_default_from_full_attention_interval() -> None:
    raw = hf_config()
    del raw["layer_types"]
    raw["full_attention_interval"] = 2
    want = ["linear_attention", "full_attention", "linear_attention"]
    assert text_config_from_hf(raw)["layer_types"] == want


def test_names_splits_and_transposes() -> None:
    sd = hf_state_dict()
    out = canonical_from_hf(sd, tiny_config())
    q_proj = sd["model.layers.1.self_attn.q_proj.weight"]
    for h in range(HEADS):  # per head: D query rows, then D gate rows
        rows = slice(h * D, (h + 1) * D)
        assert (
            out["text/layers/1/attention/query"][rows] == q_proj[2 * h * D : (2 * h + 1) * D]
        ).all()
        assert (
            out["text/layers/1/attention/gate"][rows] == q_proj[(2 * h + 1) * D : (2 * h + 2) * D]
        ).all()
    qkv = sd["model.layers.0.linear_attn.in_proj_qkv.weight"]
    assert (out["text/layers/0/gdn/key"] == qkv[KG : 2 * KG]).all()
    assert (out["text/layers/0/gdn/value"] == qkv[2 * KG :]).all()
    conv = sd["model.layers.0.linear_attn.conv1d.weight"]
    assert out["text/layers/0/gdn/convolution"].shape == (K, 2 * KG + VG)
    assert out["text/layers/0/gdn/convolution"][3, 5] == conv[5, 0, 3]
    assert (out["text/output_head"] == sd["lm_head.weight"]).all()


def test_tied_head_is_the_embedding_and_vl_prefix_is_accepted() -> None:
    sd = {k.replace("model.", "model.language_model.", 1): v for k, v in hf_state_dict().items()}
    del sd["lm_head.weight"]
    raw = hf_config() | {"tie_word_embeddings": True}
    config, weights = weights_from_hf(sd, raw)
    assert config.tie_word_embeddings is True
    assert (weights.output_head.values == weights.token_embedding).all()


def test_missing_tensor() -> None:
    sd = hf_state_dict()
    del sd["model.layers.2.linear_attn.dt_bias"]
    with raises_rule(NotFoundError, "ninfer3.text.hf_tensor") as info:
        weights_from_hf(sd, hf_config())
    assert info.value.path == "model.layers.2.linear_attn.dt_bias"


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("model.layers.0.linear_attn.conv1d.weight", (2 * KG + VG, K)),  # rank 2, not [C, 1, K]
        ("model.layers.1.self_attn.q_proj.weight", (HEADS * D, H)),  # no gate half
        ("model.layers.0.mlp.down_proj.weight", (48, H)),  # transposed
    ],
)
def test_misshaped_tensor(name: str, shape: tuple[int, ...]) -> None:
    sd = hf_state_dict()
    sd[name] = counting(*shape)
    with raises_rule(InvalidError, "ninfer3.text.hf_shape"):
        weights_from_hf(sd, hf_config())


def test_not_a_qwen35_config() -> None:
    with raises_rule(InvalidError, "ninfer3.text.hf_config") as info:
        text_config_from_hf({"model_type": "qwen3", "num_hidden_layers": 2})
    assert info.value.path == "model_type"
    with raises_rule(InvalidError, "ninfer3.text.hf_config"):
        text_config_from_hf(hf_config() | {"num_hidden_layers": "3"})


def test_scaled_rope_is_unsupported() -> None:
    raw = hf_config()
    raw["rope_parameters"]["rope_type"] = "yarn"
    with raises_rule(UnsupportedError, "ninfer3.text.hf_rope"):
        text_config_from_hf(raw)
