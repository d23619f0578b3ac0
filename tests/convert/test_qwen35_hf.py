"""transformers names to canonical names without torch: a hand-laid state dict whose values
are their own flat indices, so every row selection, split and transpose can be checked by
arithmetic (spec/models.md §qwen35 / §tiny-checkpoints names and layouts), and every bad source has
a typed error."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from strategies.ninfer3 import raises_rule
from strategies.qwen35 import tiny_config, tiny_config_json

from weightfile.families.qwen35.hf import canonical_from_hf, text_config_from_hf, weights_from_hf
from weightfile.ref.qwen35.config import validate_text_config
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


E, MI, SI = 4, 16, 24  # strategies.qwen35.MOE_KEYS: experts, expert and shared widths


def moe_state_dict(fused: bool) -> dict[str, np.ndarray]:
    """The dense dict with each mlp replaced by a MoE block: hub per-expert tensors, or the
    transformers 5.x in-memory fusion (gate_up [E, 2I, H] = gate rows then up; down [E, H, I])."""
    sd = {k: v for k, v in hf_state_dict().items() if ".mlp." not in k}
    for i in range(len(CFG["layer_types"])):
        m = f"model.layers.{i}.mlp."
        sd[m + "gate.weight"] = counting(E, H)
        sd[m + "shared_expert_gate.weight"] = counting(1, H)
        sd |= {f"{m}shared_expert.{r}_proj.weight": counting(SI, H) for r in ("gate", "up")}
        sd[m + "shared_expert.down_proj.weight"] = counting(H, SI)
        gates = [counting(MI, H) + 1000 * e for e in range(E)]
        ups = [counting(MI, H) - 1000 * e for e in range(E)]
        downs = [counting(H, MI) + 0.5 * e for e in range(E)]
        if fused:
            sd[m + "experts.gate_up_proj"] = np.stack(
                [np.concatenate([g, u]) for g, u in zip(gates, ups, strict=True)]
            )
            sd[m + "experts.down_proj"] = np.stack(downs)
        else:
            for e in range(E):
                sd[f"{m}experts.{e}.gate_proj.weight"] = gates[e]
                sd[f"{m}experts.{e}.up_proj.weight"] = ups[e]
                sd[f"{m}experts.{e}.down_proj.weight"] = downs[e]
    return sd


def test_moe_hub_and_fused_experts_give_the_same_parameters() -> None:
    config = tiny_config(moe=True)
    hub = moe_state_dict(fused=False)
    from_hub = canonical_from_hf(hub, config)
    from_fused = canonical_from_hf(moe_state_dict(fused=True), config)
    assert from_hub.keys() == from_fused.keys()
    for name, values in from_hub.items():
        assert values.tobytes() == from_fused[name].tobytes(), name
    for e, role in ((0, "gate"), (3, "up"), (2, "down")):
        hf = hub[f"model.layers.1.mlp.experts.{e}.{role}_proj.weight"]
        assert (from_fused[f"text/layers/1/moe/experts/{e}/{role}"] == hf).all()
    assert (from_hub["text/layers/0/moe/router"] == hub["model.layers.0.mlp.gate.weight"]).all()


def test_fused_experts_of_another_count_are_refused() -> None:
    sd = moe_state_dict(fused=True)
    name = "model.layers.2.mlp.experts.gate_up_proj"
    sd[name] = np.concatenate([sd[name], sd[name][:1]])  # one expert too many
    with raises_rule(InvalidError, "ninfer3.text.hf_shape") as info:
        canonical_from_hf(sd, tiny_config(moe=True))
    assert info.value.path == name


def test_a_conv1d_that_is_not_depthwise_is_refused() -> None:
    sd = hf_state_dict()
    name = "model.layers.0.linear_attn.conv1d.weight"
    sd[name] = counting(2 * KG + VG, 2, K)  # [C, 2, K]: channel 0 alone would fit [K, C]
    with raises_rule(InvalidError, "ninfer3.text.hf_shape") as info:
        canonical_from_hf(sd, tiny_config())
    assert info.value.path == name


def test_a_stored_head_is_not_read_when_tied() -> None:
    sd = hf_state_dict()
    sd["lm_head.weight"] = counting(1)  # would be mis-shaped if it were read
    config = tiny_config_json() | {"tie_word_embeddings": True}
    out = canonical_from_hf(sd, validate_text_config(config))
    assert (out["text/output_head"] == sd["model.embed_tokens.weight"]).all()
