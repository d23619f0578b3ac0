"""The Qwen3.5 text binder: an opened `.ninfer` file to (config, weights) (spec/ninfer3.md
§validation, §qwen35-text).

The binder's checks, in this order, each one function:
1. the text component exists and its config is the closed spec/ninfer3.md §qwen35-config set
   (`validate_text_config`);
2. the four text resource roles are present (spec/ninfer3.md §qwen35-names resource roles);
3. every canonical spec/ninfer3.md §qwen35-names parameter resolves through its binding -- whole
   object with the exact shape, or ordered parts covering exactly its elements (spec/ninfer3.md
   §binding) -- and a direct parameter's objects have its exact format in `contiguous_le_v1` (bf16,
   fp32 for a_log / dt_bias);
4. no `text/` binding is left over that no layer declares;
5. every declared (parameter, input) has a Use with an activation policy, no Use of a text parameter
   names an undeclared input, and every Use's auxiliaries are valid (spec/ninfer3.md §use); the
   hadamard_signs of the Uses the text model consumes are kept.
Then every parameter is decoded with its objects' codecs, its element ranges concatenated in
order, and the weights arranged (`weights_from_parameters`), a projection with signs computing
W · H(x) (spec/numerics.md §hadamard).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.bindings import ElementRange
from weightfile.ref.ninfer3.read import Artifact
from weightfile.ref.ninfer3.records import Use
from weightfile.ref.ninfer3.require import require
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT, TEXT_RESOURCE_ROLES
from weightfile.spec.ninfer3.domains import elements
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter, text_parameters

from .config import Qwen35Config, validate_text_config
from .weights import Qwen35Weights, weights_from_parameters

DIRECT_LAYOUT = "contiguous_le_v1"
OUTPUT_HEAD = TEXT_PREFIX + "output_head"
FINAL_HIDDEN = "/final_hidden"


def bind_config(nf: Artifact) -> Qwen35Config:
    """Step 1: the text component and its closed config."""
    return validate_text_config(nf.component(TEXT_COMPONENT).config)


def check_resources(nf: Artifact) -> None:
    """Step 2: every required text resource role names a resource object (spec/ninfer3.md
    §qwen35-names)."""
    resources = nf.component(TEXT_COMPONENT).resources
    for role in TEXT_RESOURCE_ROLES:
        require(
            role in resources,
            "ninfer3.binder.resource",
            f"text has no resource {role!r}",
            f"components.{TEXT_COMPONENT}.resources",
        )
        # its deferred checks: encoding raw_bytes_v1 (spec/ninfer3.md §validation)
        nf.object(resources[role])


def resolve(
    nf: Artifact, p: TextParameter, rule: str = "ninfer3.text.direct_format"
) -> list[ElementRange]:
    """Step 3: the parameter's element ranges; a direct one's objects have its exact format
    (else `rule`: the text's, or the vision component's own)."""
    ranges = nf.bind(p.name, p.shape)
    if p.direct_format is not None:
        for r in ranges:
            o = nf.object(r.object_id)
            require(
                o.format == p.direct_format and o.layout == DIRECT_LAYOUT,
                rule,
                f"{p.name} reads {o.id} as {o.format}/{o.layout}, needs {p.direct_format}/"
                f"{DIRECT_LAYOUT}",
                nf.directory.bindings[p.name].path,
            )
    return ranges


def check_unexpected(nf: Artifact, params: Mapping[str, TextParameter]) -> None:
    """Step 4: every `text/` binding is a parameter of this config (spec/ninfer3.md
    §qwen35-names)."""
    for name, binding in nf.directory.bindings.items():
        require(
            not name.startswith(TEXT_PREFIX) or name in params,
            "ninfer3.text.unexpected_parameter",
            f"binding {name!r} is no parameter of this text config",
            binding.path,
        )


def allowed_inputs(nf: Artifact, p: TextParameter) -> set[str]:
    """The inputs a Use of `p` may name: its declared ones, and for the output head also
    `<component>/final_hidden` of any other component in the file (spec/ninfer3.md
    §qwen35-names)."""
    allowed = set(p.inputs)
    if p.name == OUTPUT_HEAD:
        allowed |= {c + FINAL_HIDDEN for c in nf.directory.components if c != TEXT_COMPONENT}
    return allowed


def check_use(nf: Artifact, use: Use, shape: tuple[int, ...]) -> np.ndarray | None:
    """Auxiliaries (spec/ninfer3.md §use): accepted roles, a valid divisor, valid Hadamard signs,
    returned as int8 ±1 (None without). The reference keeps activations in float32
    (spec/models.md §qwen35-activations), so a divisor changes nothing; signs make the product
    W · H(x)."""
    nf.activation_divisor(use)
    signs = nf.hadamard_signs(use, shape)
    return None if signs is None else np.array(signs, dtype=np.int8)


def check_uses(nf: Artifact, params: Mapping[str, TextParameter]) -> dict[str, np.ndarray]:
    """Step 5: each declared input has a Use with a policy; no undeclared input is used. Returns
    parameter name -> hadamard_signs of its Uses at the text model's own inputs (an output head
    Use at another component's final_hidden is checked, not consumed here)."""
    rotated: dict[str, np.ndarray] = {}
    for use in nf.directory.uses:
        p = params.get(use.parameter)
        if p is None:
            continue  # another component's parameter: not the text binder's to check
        require(
            use.input in allowed_inputs(nf, p),
            "ninfer3.text.use_unexpected",
            f"{use.parameter} is not consumed at {use.input!r}",
            f"uses[{use.index}].input",
        )
        require(
            use.activation_policy is not None,
            "ninfer3.text.use_policy",
            f"{use.parameter} at {use.input} has no activation_policy",
            f"uses[{use.index}]",
        )
        signs = check_use(nf, use, p.shape)
        if signs is not None and use.input in p.inputs:
            rotated[p.name] = signs
    declared = {(u.parameter, u.input) for u in nf.directory.uses}
    for p in params.values():
        for consumed in p.inputs:
            require(
                (p.name, consumed) in declared,
                "ninfer3.text.use_missing",
                f"{p.name} has no Use at {consumed}",
                "uses",
            )
    return rotated


class ObjectDecoder:
    """Decodes each object once with its (format, layout) codec, as float32 (spec/ninfer3.md
    §formats, §layouts).

    `codec_for` defaults to the reference codecs; `weightfile.fast.codecs.ninfer3.codec.
    get_codec` decodes the same values bit for bit (tests/differential), only faster.
    """

    def __init__(self, nf: Artifact, codec_for: Callable[[str, str], Any] = get_codec) -> None:
        self.nf = nf
        self.codec_for = codec_for
        self.decoded: dict[str, np.ndarray] = {}

    def flat(self, object_id: str) -> np.ndarray:
        if object_id not in self.decoded:
            o = self.nf.object(object_id)
            assert o.shape is not None and o.format is not None and o.layout is not None
            codec = self.codec_for(o.format, o.layout)
            values = codec.decode(bytes(self.nf.object_bytes(object_id)), o.shape)
            self.decoded[object_id] = np.asarray(values, dtype=np.float32).reshape(-1)
        return self.decoded[object_id]

    def parameter(self, ranges: list[ElementRange], shape: tuple[int, ...]) -> np.ndarray:
        """The ranges' elements concatenated in order, as the parameter's C-order array
        (spec/ninfer3.md §binding)."""
        values = np.concatenate([self.flat(r.object_id)[r.begin : r.end] for r in ranges])
        assert values.size == elements(shape)
        return values.reshape(shape)


def bind_ninfer(
    nf: Artifact, codec_for: Callable[[str, str], Any] = get_codec
) -> tuple[Qwen35Config, Qwen35Weights]:
    """Bind the text component of an opened `.ninfer` file (`weightfile.ref.ninfer3.read`).

    `codec_for(format, layout)` picks the decoder (reference codecs unless told otherwise).
    """
    config = bind_config(nf)
    check_resources(nf)
    params = {p.name: p for p in text_parameters(config.json)}
    ranges = {name: resolve(nf, p) for name, p in params.items()}
    check_unexpected(nf, params)
    signs = check_uses(nf, params)
    decoder = ObjectDecoder(nf, codec_for)
    values = {name: decoder.parameter(ranges[name], p.shape) for name, p in params.items()}
    return config, weights_from_parameters(config, values, signs)
