"""How a Qwen3.5 `.ninfer` file's parameters become llama.cpp `qwen35` / `qwen35moe` GGUF tensors
and back (spec/ninfer3.md §qwen35-gguf), as data and pure index arithmetic.

`LAYER_TENSORS` maps a GGUF tensor (under `blk.{i}.`) to the canonical layer-relative parameters
it is made of, stacked by rows in order, and the transform llama.cpp's converter applies
(`Transform`). The MTP block is `blk.{n_layer}.` with the same layer names plus `NEXTN_TENSORS`.
`tiled_heads` is the value-head permutation of a Gated DeltaNet layer.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

DENSE_ARCH, MOE_ARCH = "qwen35", "qwen35moe"


class Transform(Enum):
    """What the converter does to a parameter's values on the way to GGUF."""

    NONE = "none"
    PLUS_ONE = "w + 1"  # every RMSNorm weight except the GDN gated norm
    NEG_EXP = "-exp(w)"  # A_log -> ssm_a; also value heads tiled
    QUERY_GATE = "per head: D query rows, then D gate rows"  # full-attention attn_q
    V_ROWS = "value heads tiled (rows)"  # z, a, b, dt_bias, the v rows of attn_qkv
    V_COLUMNS = "value heads tiled (columns)"  # ssm_out
    CONV = "transposed to [channel, tap], value channels tiled"  # ssm_conv1d


T = Transform
#: GGUF name under `blk.{i}.` -> (canonical sub-names stacked by rows, transform)
LAYER_TENSORS: dict[str, tuple[tuple[str, ...], Transform]] = {
    "attn_norm.weight": (("input_norm",), T.PLUS_ONE),
    "post_attention_norm.weight": (("post_attention_norm",), T.PLUS_ONE),
    "attn_q.weight": (("attention/query", "attention/gate"), T.QUERY_GATE),
    "attn_k.weight": (("attention/key",), T.NONE),
    "attn_v.weight": (("attention/value",), T.NONE),
    "attn_output.weight": (("attention/output",), T.NONE),
    "attn_q_norm.weight": (("attention/query_norm",), T.PLUS_ONE),
    "attn_k_norm.weight": (("attention/key_norm",), T.PLUS_ONE),
    "attn_qkv.weight": (("gdn/query", "gdn/key", "gdn/value"), T.V_ROWS),
    "attn_gate.weight": (("gdn/z",), T.V_ROWS),
    "ssm_alpha.weight": (("gdn/a_projection",), T.V_ROWS),
    "ssm_beta.weight": (("gdn/b_projection",), T.V_ROWS),
    "ssm_a": (("gdn/a_log",), T.NEG_EXP),
    "ssm_dt.bias": (("gdn/dt_bias",), T.V_ROWS),
    "ssm_conv1d.weight": (("gdn/convolution",), T.CONV),
    "ssm_norm.weight": (("gdn/norm",), T.NONE),
    "ssm_out.weight": (("gdn/output",), T.V_COLUMNS),
    "ffn_gate.weight": (("mlp/gate",), T.NONE),
    "ffn_up.weight": (("mlp/up",), T.NONE),
    "ffn_down.weight": (("mlp/down",), T.NONE),
    "ffn_gate_inp.weight": (("moe/router",), T.NONE),
    "ffn_gate_inp_shexp.weight": (("moe/shared_score",), T.NONE),
    "ffn_gate_shexp.weight": (("moe/shared/gate",), T.NONE),
    "ffn_up_shexp.weight": (("moe/shared/up",), T.NONE),
    "ffn_down_shexp.weight": (("moe/shared/down",), T.NONE),
}
#: GGUF expert tensors [E, rows, K] under `blk.{i}.` -> the per-expert sub-name ({e} the expert)
EXPERT_TENSORS = {
    "ffn_gate_exps.weight": "moe/experts/{e}/gate",
    "ffn_up_exps.weight": "moe/experts/{e}/up",
    "ffn_down_exps.weight": "moe/experts/{e}/down",
}
#: the MTP block's own tensors under `blk.{n_layer}.` -> `mtp/` parameter
NEXTN_TENSORS: dict[str, tuple[str, Transform]] = {
    "nextn.eh_proj.weight": ("mtp/input_projection", T.NONE),
    "nextn.enorm.weight": ("mtp/embedding_norm", T.PLUS_ONE),
    "nextn.hnorm.weight": ("mtp/hidden_norm", T.PLUS_ONE),
    "nextn.shared_head_norm.weight": ("mtp/final_norm", T.PLUS_ONE),
}
#: top-level GGUF tensors -> text parameter
TOP_TENSORS: dict[str, tuple[str, Transform]] = {
    "token_embd.weight": ("text/token_embedding", T.NONE),
    "output_norm.weight": ("text/final_norm", T.PLUS_ONE),
    "output.weight": ("text/output_head", T.NONE),
}


def tiled_heads(key_heads: int, value_heads: int, width: int) -> np.ndarray:
    """Index array: GGUF position -> canonical position of the value channels. Canonical order
    groups the value heads by key head (key head k owns heads k·r … k·r + r − 1, r = value/key);
    llama.cpp's is tiled (all key heads' first value head, then all their second, ...); `width`
    channels per head."""
    r = value_heads // key_heads
    heads = np.arange(value_heads).reshape(key_heads, r).T.reshape(-1)  # tiled -> grouped
    return (heads[:, None] * width + np.arange(width)[None, :]).reshape(-1)


def forward_rows(t: Transform, rows: list[int], config: dict) -> np.ndarray | None:
    """For a row transform of members with `rows` rows each (stacked), the index array: GGUF row
    n is stacked canonical row `index[n]`; None when the rows keep their order."""
    nk = config.get("linear_num_key_heads", 1)
    nv = config.get("linear_num_value_heads", 1)
    if t is Transform.QUERY_GATE:
        d, q = config["head_dim"], rows[0]
        h = np.arange(q // d)[:, None] * d + np.arange(d)
        return np.concatenate([h, q + h], axis=1).reshape(-1)
    if t is Transform.V_ROWS:
        head = np.arange(sum(rows) - rows[-1])
        return np.concatenate([head, head.size + tiled_heads(nk, nv, rows[-1] // nv)])
    return None


def forward_columns(t: Transform, columns: int, config: dict) -> np.ndarray | None:
    """The column index array of a column transform (the GDN output), else None."""
    if t is not Transform.V_COLUMNS:
        return None
    nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
    return tiled_heads(nk, nv, columns // nv)


def conv_channels(config: dict, channels: int) -> np.ndarray:
    """The convolution's channel index array: q and k channels kept, the value ones tiled."""
    nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
    vg = nv * config["linear_value_head_dim"]
    head = np.arange(channels - vg)
    return np.concatenate([head, head.size + tiled_heads(nk, nv, vg // nv)])
