"""The in-memory weights of a Qwen3.5 text model, keyed by canonical names (spec/ninfer3.md
§qwen35-names).

Every source -- a `.ninfer` file through its bindings, or a transformers state dict -- first
becomes one float32 array per canonical parameter name; `weights_from_parameters` checks the
set and the shapes against `text_parameters(config)` and arranges them per layer. Projections
are `DenseMatrix` (values decoded from any format: the reference multiplies decoded weights,
spec/models.md §qwen35-activations); norms, gates, the convolution and the embedding stay float32
arrays, stored as the file stores them (the zero-centred norms keep w, and the model adds 1).
A projection whose Use carries hadamard_signs is a `HadamardMatrix` around its stored (rotated)
values: the model computes W · H(x) (spec/ninfer3.md §use, spec/numerics.md §hadamard).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, layer_prefix, text_parameters

from .config import Qwen35Config

#: A projection: its decoded values, possibly with its input rotated first.
Linear = DenseMatrix | HadamardMatrix


@dataclass(frozen=True)
class AttentionWeights:
    """Gated full attention: query/gate [Q,H], key/value [Kw,H], norms [D], output [H,Q]."""

    query: Linear
    key: Linear
    gate: Linear
    value: Linear
    query_norm: np.ndarray  # zero-centred: the model scales by 1 + w
    key_norm: np.ndarray
    output: Linear


@dataclass(frozen=True)
class GdnWeights:
    """Gated DeltaNet: projections, fp32 gates, conv [kernel, 2Kg+Vg], gated norm [Dv], output."""

    query: Linear
    key: Linear
    value: Linear
    z: Linear
    a_projection: Linear
    b_projection: Linear
    a_log: np.ndarray
    dt_bias: np.ndarray
    convolution: np.ndarray
    norm: np.ndarray  # NOT zero-centred (spec/models.md §qwen35): used as stored
    output: Linear


@dataclass(frozen=True)
class FfnWeights:
    """A SwiGLU FFN: the dense mlp, one routed expert or the shared expert."""

    gate: Linear
    up: Linear
    down: Linear


@dataclass(frozen=True)
class MoeWeights:
    """Router [E,H], shared-expert score [1,H], E routed experts and the shared expert."""

    router: Linear
    shared_score: Linear
    experts: tuple[FfnWeights, ...]
    shared: FfnWeights


@dataclass(frozen=True)
class LayerWeights:
    input_norm: np.ndarray
    mixer: AttentionWeights | GdnWeights
    post_attention_norm: np.ndarray
    ffn: FfnWeights | MoeWeights


@dataclass(frozen=True)
class Qwen35Weights:
    token_embedding: np.ndarray  # float32 [V, H]
    layers: tuple[LayerWeights, ...]
    final_norm: np.ndarray
    output_head: Linear  # [V, H]; with tied embeddings the file binds the same values


def check_parameter_set(config: Qwen35Config, params: Mapping[str, np.ndarray]) -> None:
    """Exactly the canonical names, each with its shape; ValueError names every difference."""
    want = {p.name: p.shape for p in text_parameters(config.json)}
    missing = sorted(set(want) - set(params))
    unexpected = sorted(set(params) - set(want))
    misshaped = [
        f"{n} {params[n].shape} != {shape}"
        for n, shape in want.items()
        if n in params and params[n].shape != shape
    ]
    if missing or unexpected or misshaped:
        raise ValueError(f"missing {missing}; unexpected {unexpected}; mis-shaped {misshaped}")


def weights_from_parameters(
    config: Qwen35Config,
    params: Mapping[str, np.ndarray],
    signs: Mapping[str, np.ndarray] | None = None,
) -> Qwen35Weights:
    """Arrange canonical float32 parameters into per-layer weights (spec/ninfer3.md
    §qwen35-names); `signs` maps a projection's name to the ±1 hadamard_signs of its Use."""
    check_parameter_set(config, params)
    signs = signs or {}

    def f32(name: str) -> np.ndarray:
        return np.ascontiguousarray(params[name], dtype=np.float32)

    def mat(name: str) -> Linear:
        m = DenseMatrix(f32(name))
        if name in signs:
            return HadamardMatrix(m, np.asarray(signs[name], dtype=np.int8))
        return m

    def ffn(p: str) -> FfnWeights:
        return FfnWeights(mat(p + "gate"), mat(p + "up"), mat(p + "down"))

    layers = []
    for i, kind in enumerate(config.json["layer_types"]):
        p = layer_prefix(i)
        mixer: AttentionWeights | GdnWeights
        if kind == FULL_ATTENTION:
            a = p + "attention/"
            mixer = AttentionWeights(
                mat(a + "query"), mat(a + "key"), mat(a + "gate"), mat(a + "value"),
                f32(a + "query_norm"), f32(a + "key_norm"), mat(a + "output"),
            )  # fmt: skip
        else:
            g = p + "gdn/"
            mixer = GdnWeights(
                mat(g + "query"), mat(g + "key"), mat(g + "value"), mat(g + "z"),
                mat(g + "a_projection"), mat(g + "b_projection"), f32(g + "a_log"),
                f32(g + "dt_bias"), f32(g + "convolution"), f32(g + "norm"), mat(g + "output"),
            )  # fmt: skip
        block: FfnWeights | MoeWeights
        if config.is_moe:
            m = p + "moe/"
            experts = tuple(ffn(f"{m}experts/{e}/") for e in range(config.json["num_experts"]))
            block = MoeWeights(
                mat(m + "router"), mat(m + "shared_score"), experts, ffn(m + "shared/")
            )
        else:
            block = ffn(p + "mlp/")
        layers.append(
            LayerWeights(f32(p + "input_norm"), mixer, f32(p + "post_attention_norm"), block)
        )
    return Qwen35Weights(
        f32(TEXT_PREFIX + "token_embedding"),
        tuple(layers),
        f32(TEXT_PREFIX + "final_norm"),
        mat(TEXT_PREFIX + "output_head"),
    )
