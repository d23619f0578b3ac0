"""The vision component of a Qwen3.5 `.ninfer` file: its closed config, its binder and the
multimodal model around the text model (spec/ninfer3.md §qwen35-vision-names, spec/models.md
§qwen35-vision).

Two stages, so that a run without images never reads the vision payload:

1. `check_vision(nf, text)` validates the whole vision inventory from the directory alone: the
   component and its target, the closed config, the resource roles, every parameter's binding
   and direct format, no stray `vision/` binding, the Uses. It returns a `VisionBinding`.
2. `vision_weights(binding, decoder)` decodes the parameters (only when images are given) into
   the Qwen3-VL tower's weight records, every matrix an F32 `DenseMatrix` (spec/models.md
   §qwen35-activations: activations stay binary32 at every Use), wrapped in a `HadamardMatrix`
   where its Use has hadamard_signs (W · H(x), spec/numerics.md §hadamard).

The tower is ref/qwen3_vl's, configured by `tower_config` with no DeepStack.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from weightfile.ref.layers.batch import PositionIds
from weightfile.ref.layers.trace import TraceHook
from weightfile.ref.ninfer3.bindings import ElementRange
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.records import Use
from weightfile.ref.ninfer3.require import require
from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix, RowStack
from weightfile.ref.qwen3_vl.config import (
    MergerWeights,
    SpecialIds,
    VisionBlockWeights,
    VisionConfig,
    VisionWeights,
)
from weightfile.ref.qwen3_vl.model import ImagePrompt
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionOutput
from weightfile.spec.ninfer3.text_config import U32_MAX
from weightfile.spec.ninfer3.text_names import TextParameter
from weightfile.spec.ninfer3.vision_names import (
    IN_CHANNELS,
    LAYERNORM_EPS,
    VISION_COMPONENT,
    VISION_CONFIG_KEYS,
    VISION_MODEL_TYPES,
    VISION_PREFIX,
    VISION_RESOURCE_ROLES,
    VISION_TOKENS,
    vision_parameters,
)

from .bind import ObjectDecoder, resolve
from .config import Qwen35Config

CONFIG_PATH = f"components.{VISION_COMPONENT}.config"


def has_vision(nf: Artifact) -> bool:
    return VISION_COMPONENT in nf.directory.components


# -- 1. the closed config ----------------------------------------------------------------------


def validate_vision_config(config: Mapping[str, Any], text: Qwen35Config) -> VisionConfig:
    """spec/ninfer3.md §qwen35-vision-names: the closed key set, model_type paired with the text
    architecture, positive u32 sizes, heads that split in four, a square position table."""
    for key in config:
        require(
            key in VISION_CONFIG_KEYS,
            "ninfer3.vision.key",
            f"{key!r:.60} is not a vision config key",
            f"{CONFIG_PATH}.{key}",
        )
    for key in VISION_CONFIG_KEYS:
        require(key in config, "ninfer3.vision.missing", f"no {key}", f"{CONFIG_PATH}.{key}")
    want = VISION_MODEL_TYPES[text.architectures[0]]
    require(
        config["model_type"] == want,
        "ninfer3.vision.model_type",
        f"model_type {config['model_type']!r:.40} beside {text.architectures[0]} (wants {want})",
        f"{CONFIG_PATH}.model_type",
    )
    for key in VISION_CONFIG_KEYS[1:]:
        v = config[key]
        require(
            type(v) is int and 1 <= v <= U32_MAX,
            "ninfer3.vision.value",
            f"{key} is not an integer in [1, 2^32-1]: {v!r:.40}",
            f"{CONFIG_PATH}.{key}",
        )
    w, heads = config["hidden_size"], config["num_heads"]
    require(
        w % heads == 0 and (w // heads) % 4 == 0,
        "ninfer3.vision.heads",
        f"hidden_size {w} over {heads} heads is not a head width that is a multiple of 4",
        f"{CONFIG_PATH}.num_heads",
    )
    n = config["num_position_embeddings"]
    require(
        math.isqrt(n) ** 2 == n,
        "ninfer3.vision.positions",
        f"{n} position rows are not a square",
        f"{CONFIG_PATH}.num_position_embeddings",
    )
    return tower_config(config, text.hidden_size)


def tower_config(config: Mapping[str, Any], text_hidden: int) -> VisionConfig:
    """The Qwen3-VL tower's configuration for a Qwen3.5 vision config (spec/models.md
    §vision-variants): no DeepStack, pre-regrouping merger norm, erf GELU in the merger."""
    return VisionConfig(
        depth=config["depth"],
        hidden_size=config["hidden_size"],
        num_heads=config["num_heads"],
        intermediate_size=config["intermediate_size"],
        out_hidden_size=text_hidden,
        num_position_embeddings=config["num_position_embeddings"],
        deepstack_visual_indexes=(),
        patch_size=config["patch_size"],
        temporal_patch_size=config["temporal_patch_size"],
        spatial_merge_size=config["spatial_merge_size"],
        in_channels=IN_CHANNELS,
        eps=LAYERNORM_EPS,
        merger_postshuffle_norm=False,
        merger_gelu="erf",
    )


# -- 1. the inventory, from the directory alone ------------------------------------------------


@dataclass(frozen=True)
class VisionBinding:
    """A checked vision component: the tower's config, the special ids, each parameter's element
    ranges (nothing decoded yet) and the hadamard_signs of the matrices read rotated."""

    config: VisionConfig
    ids: SpecialIds
    params: Mapping[str, TextParameter]
    ranges: Mapping[str, list[ElementRange]]
    signs: Mapping[str, np.ndarray] = field(default_factory=dict)


def special_ids(nf: Artifact) -> SpecialIds:
    """The image tokens' ids, by their text in the text component's tokenizer.json resource
    (its added tokens, else the model vocabulary); `ninfer3.vision.token` when one is absent."""
    doc = json.loads(bytes(nf.resource("tokenizer.json")))
    found = {t.get("content"): t.get("id") for t in doc.get("added_tokens") or []}
    vocab = (doc.get("model") or {}).get("vocab") or {}
    ids = {}
    for name, text in VISION_TOKENS.items():
        tid = found.get(text, vocab.get(text) if isinstance(vocab, dict) else None)
        require(
            type(tid) is int and tid >= 0,
            "ninfer3.vision.token",
            f"the tokenizer.json resource has no {text}",
            "components.text.resources.tokenizer.json",
        )
        ids[name] = tid
    return SpecialIds(**ids)


def check_use(nf: Artifact, use: Use, p: TextParameter) -> np.ndarray | None:
    """A vision Use: a declared input, a policy, valid auxiliaries (spec/ninfer3.md §use); its
    hadamard_signs as int8 ±1, or None (the layer then computes W · H(x), spec/numerics.md
    §hadamard; bad signs are `ninfer3.binder.hadamard`)."""
    require(
        use.input in p.inputs,
        "ninfer3.vision.use_unexpected",
        f"{use.parameter} is not consumed at {use.input!r}",
        f"uses[{use.index}].input",
    )
    require(
        use.activation_policy is not None,
        "ninfer3.vision.use_policy",
        f"{use.parameter} at {use.input} has no activation_policy",
        f"uses[{use.index}]",
    )
    nf.activation_divisor(use)
    signs = nf.hadamard_signs(use, p.shape)
    return None if signs is None else np.array(signs, dtype=np.int8)


def check_uses(nf: Artifact, params: Mapping[str, TextParameter]) -> dict[str, np.ndarray]:
    """Every declared input has a Use; no vision Use names another input. Returns parameter name
    -> the hadamard_signs of its Use."""
    rotated: dict[str, np.ndarray] = {}
    for use in nf.directory.uses:
        if use.parameter in params:
            signs = check_use(nf, use, params[use.parameter])
            if signs is not None:
                rotated[use.parameter] = signs
    declared = {(u.parameter, u.input) for u in nf.directory.uses}
    for p in params.values():
        for consumed in p.inputs:
            require(
                (p.name, consumed) in declared,
                "ninfer3.vision.use_missing",
                f"{p.name} has no Use at {consumed}",
                "uses",
            )
    return rotated


def check_vision(nf: Artifact, text: Qwen35Config) -> VisionBinding:
    """Stage 1 (module docstring): the whole vision inventory, reading no tensor payload."""
    component = nf.component(VISION_COMPONENT)  # present, targets text
    config = validate_vision_config(component.config, text)
    for role in VISION_RESOURCE_ROLES:
        require(
            role in component.resources,
            "ninfer3.binder.resource",
            f"vision has no resource {role!r}",
            f"components.{VISION_COMPONENT}.resources",
        )
        nf.object(component.resources[role])
    params = {p.name: p for p in vision_parameters(component.config, text.hidden_size)}
    ranges = {name: resolve(nf, p, "ninfer3.vision.direct_format") for name, p in params.items()}
    for name, binding in nf.directory.bindings.items():
        require(
            not name.startswith(VISION_PREFIX) or name in params,
            "ninfer3.vision.unexpected_parameter",
            f"binding {name!r} is no parameter of this vision config",
            binding.path,
        )
    signs = check_uses(nf, params)
    return VisionBinding(config, special_ids(nf), params, ranges, signs)


# -- 2. the weights, when images are given -----------------------------------------------------


Linear = DenseMatrix | HadamardMatrix | RowStack


def linear(parts: Sequence[tuple[np.ndarray, np.ndarray | None]]) -> Linear:
    """One tower linear from its parameters (values, signs or None) stacked by rows: a
    DenseMatrix, a HadamardMatrix when they share one set of signs (W · H(x), spec/numerics.md
    §hadamard), else a RowStack of each part's own product (a block's query, key and value read
    at one input with different signs)."""
    kinds = {None if s is None else s.tobytes() for _, s in parts}
    if len(kinds) == 1:
        m = DenseMatrix(np.ascontiguousarray(np.concatenate([v for v, _ in parts])))
        signs = parts[0][1]
        return m if signs is None else HadamardMatrix(m, signs)
    return RowStack(tuple(linear([part]) for part in parts))


def vision_weights(b: VisionBinding, decoder: ObjectDecoder) -> VisionWeights:
    """Stage 2: every parameter decoded to float32 and arranged as the tower's records, a
    matrix whose Use has hadamard_signs read rotated (`linear`)."""

    def get(name: str) -> np.ndarray:
        p = b.params[VISION_PREFIX + name]
        return decoder.parameter(b.ranges[p.name], p.shape)

    def dense(*names: str) -> Linear:
        return linear([(get(n), b.signs.get(VISION_PREFIX + n)) for n in names])

    def block(i: int) -> VisionBlockWeights:
        a = f"layers/{i}/attention/"
        m, n = f"layers/{i}/mlp/", f"layers/{i}/"
        return VisionBlockWeights(
            get(n + "norm1_weight"), get(n + "norm1_bias"),
            dense(a + "query", a + "key", a + "value"),
            np.concatenate([get(a + r + "_bias") for r in ("query", "key", "value")]),
            dense(a + "output"), get(a + "output_bias"),
            get(n + "norm2_weight"), get(n + "norm2_bias"),
            dense(m + "fc1"), get(m + "fc1_bias"), dense(m + "fc2"), get(m + "fc2_bias"),
        )  # fmt: skip

    merger = MergerWeights(
        get("merger/norm_weight"), get("merger/norm_bias"),
        dense("merger/fc1"), get("merger/fc1_bias"), dense("merger/fc2"), get("merger/fc2_bias"),
    )  # fmt: skip
    return VisionWeights(
        patch_embed=dense("patch_embedding"),
        patch_bias=get("patch_embedding_bias"),
        pos_embed=get("position_embedding"),
        blocks=tuple(block(i) for i in range(b.config.depth)),
        merger=merger,
        deepstack=(),
    )


# -- the multimodal model ----------------------------------------------------------------------


class Qwen35VLModel(ImagePrompt):
    """A Qwen3.5 text model (ref/qwen35, or any model with its `forward_rows`) and a
    vision tower (ref/qwen3_vl's VisionTower or fast/qwen3_vl's FastVisionTower) around the
    Qwen3-VL prompt logic (image tokens, MRoPE positions and δ, spec/models.md §qwen35-vision)."""

    def __init__(self, text: Any, vision: Any, ids: SpecialIds) -> None:
        self.text = text
        self.vision = vision
        self.ids = ids
        self.kernels = text.kernels  # the sampler draws with them
        self.start_images()

    def forward(
        self,
        token_ids: Sequence[int],
        cache: Any,
        position_ids: PositionIds | None = None,
        trace: TraceHook | None = None,
        images: Sequence[VisionInput] | None = None,
        vision_output: VisionOutput | None = None,
    ) -> np.ndarray:
        """Logits float32 [T, vocab] of an expanded prompt after `cache`: the image-token rows
        replaced by the merger rows in prompt order before layer 0."""
        slots, out, pos = self.image_prompt(
            token_ids, cache.length, position_ids, trace, images, vision_output
        )
        rows = {} if out is None else {s: list(out.embeds[r]) for r, s in enumerate(slots)}
        return self.text.forward_rows(token_ids, cache, pos, trace, rows)


def open_vision(
    nf: Artifact,
    text: Any,
    binding: VisionBinding,
    tower: Callable[..., Any],
    codec_for: Callable[[str, str], Any],
) -> Qwen35VLModel:
    """The multimodal model: the vision parameters decoded by `codec_for(format, layout)`'s
    codecs, `tower(config, weights)` the tower (reference or fast)."""
    weights = vision_weights(binding, ObjectDecoder(nf, codec_for))
    return Qwen35VLModel(text, tower(binding.config, weights), binding.ids)
