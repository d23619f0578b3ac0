"""One edit per Qwen3.5 binder rule (`ninfer3.text.*`, `ninfer3.binder.*`) that a `.ninfer`
file can break (spec/ninfer3.md §binding, §use, §validation, §qwen35-config, §qwen35-names;
conformance/README.md "Model cases").

Each entry edits the directory of an unedited base file (`BASES`) so that the container stays
valid and the binder stops at exactly that rule; conformance.invalid_cases checks both. Rules
left out: `ninfer3.text.hf_*` (the importer's, about a transformers checkpoint, not a file);
`ninfer3.binder.component` and `component_target` (the text binder selects `text`, which a valid
container must have, ninfer3.components.text, and which targets nothing).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from weightfile.families.qwen35.conformance_files import (
    MIXERS,
    WIDE,
    Layout,
    TextDirectory,
    moe_ffn,
    parameters,
    text_config,
    text_directory,
)

Edit = Callable[[TextDirectory], None]
L0, L1 = "text/layers/0/", "text/layers/1/"  # layer 0 Gated DeltaNet, layer 1 full attention


#: The rejected files' models: narrower than the model cases' (~30 KB a file).
SMALL = {"dense": text_config(32, 8, MIXERS, {"intermediate_size": 8}, attention=(2, 1, 16),
                              gdn=(2, 8, 2, 8)),
         "moe": text_config(32, 8, MIXERS, moe_ffn(2, 1, 8, 8), attention=(2, 1, 16),
                            gdn=(2, 8, 2, 8)),
         "wide": WIDE}  # fmt: skip


def base_config(base: str) -> dict[str, Any]:
    return copy.deepcopy(SMALL[base])


@cache
def _params(base: str) -> dict[str, np.ndarray]:
    return parameters(base_config(base), 7)


def _base(base: str) -> Callable[[], TextDirectory]:
    def build() -> TextDirectory:
        return text_directory(base_config(base), _params(base), Layout("bf16"))

    return build


#: The unedited files: the dense and MoE two-layer models, and the 1024-wide one-layer model.
BASES: dict[str, Callable[[], TextDirectory]] = {b: _base(b) for b in ("dense", "moe", "wide")}


def set_config(*path: str, value: object) -> Edit:
    """Set (or with value None, delete) one member of the text config."""

    def edit(d: TextDirectory) -> None:
        *outer, key = path
        doc = d.config
        for k in outer:
            doc = doc[k]
        put(doc, key, value)

    return edit


def put(doc: dict[str, Any], key: str, value: object) -> None:
    """doc[key] = value, or delete doc[key] when value is None."""
    if value is None:
        del doc[key]
    else:
        doc[key] = value


def add_binding(d: TextDirectory) -> None:
    d.bindings["text/layers/9/input_norm"] = {"object": f"w.{L0}input_norm"}


def a_log_as_bf16(d: TextDirectory) -> None:
    name = L0 + "gdn/a_log"
    d.tensor(f"w.{name}", _params("dense")[name], "bf16")  # replaces the fp32 object


def edit_use(parameter: str, **changes: object) -> Edit:
    """Change (None: delete) members of the first Use of `parameter`."""

    def edit(d: TextDirectory) -> None:
        use = next(u for u in d.uses if u["parameter"] == parameter)
        for key, value in changes.items():
            put(use, key, value)

    return edit


def drop_use(parameter: str) -> Edit:
    def edit(d: TextDirectory) -> None:
        d.uses[:] = [u for u in d.uses if u["parameter"] != parameter]

    return edit


def drop_binding(name: str) -> Edit:
    def edit(d: TextDirectory) -> None:
        del d.bindings[name]
        drop_use(name)(d)

    return edit


def rebind(name: str, binding: dict[str, object]) -> Edit:
    return lambda d: d.bindings.__setitem__(name, binding)


def short_parts(name: str) -> Edit:
    """Bind `name` to all of its object but its last element, as parts."""

    def edit(d: TextDirectory) -> None:
        size = int(_params("dense")[name].size)
        d.bindings[name] = {"parts": [{"object": f"w.{name}", "range": [0, size - 1]}]}

    return edit


def drop_resource(d: TextDirectory) -> None:
    del d.resources["chat_template.jinja"]


def auxiliary(aux: dict[str, object], extra: tuple[str, np.ndarray, str] | None = None) -> Edit:
    """Give the output head's Use `aux`, after adding the tensor `extra` (id, values, format)."""

    def edit(d: TextDirectory) -> None:
        if extra is not None:
            d.tensor(*extra)
        use = next(u for u in d.uses if u["parameter"] == "text/output_head")
        use["auxiliaries"] = aux

    return edit


SIGNS = np.where(np.arange(1024) % 3 == 0, np.float32(-1.0), np.float32(1.0))
HALF_SIGNS = SIGNS * np.float32(0.5)

#: rule -> (what the file does, base file, edit)
MUTATIONS: dict[str, tuple[str, str, Edit]] = {
    "ninfer3.text.key": ("config member hidden_act", "dense",
                         set_config("hidden_act", value="silu")),
    "ninfer3.text.missing": ("no rms_norm_eps", "dense", set_config("rms_norm_eps", value=None)),
    "ninfer3.text.value": ("vocab_size 0", "dense", set_config("vocab_size", value=0)),
    "ninfer3.text.architecture": ("architectures [LlamaForCausalLM]", "dense",
                                  set_config("architectures", value=["LlamaForCausalLM"])),
    "ninfer3.text.layer_types": ("one layer type for two layers", "dense",
                                 set_config("layer_types", value=["full_attention"])),
    "ninfer3.text.heads": ("2 attention heads over 3 KV heads", "dense",
                           set_config("num_key_value_heads", value=3)),
    "ninfer3.text.rope": ("partial_rotary_factor 0", "dense",
                          set_config("rope_parameters", "partial_rotary_factor", value=0)),
    "ninfer3.text.mrope_section": ("mrope_section [2, 2, 1] wider than the rotary half", "dense",
                                   set_config("rope_parameters", "mrope_section",
                                              value=[2, 2, 1])),
    "ninfer3.text.experts": ("3 experts per token of 2", "moe",
                             set_config("num_experts_per_tok", value=3)),
    "ninfer3.text.unexpected_parameter": ("a binding text/layers/9/input_norm", "dense",
                                          add_binding),
    "ninfer3.text.direct_format": ("layer 0 a_log stored as bf16", "dense", a_log_as_bf16),
    "ninfer3.text.use_missing": ("layer 0 mlp/down has no Use", "dense", drop_use(L0 + "mlp/down")),
    "ninfer3.text.use_policy": ("layer 1 attention/query's Use has no policy", "dense",
                                edit_use(L1 + "attention/query", activation_policy=None)),
    "ninfer3.text.use_unexpected": ("layer 0 mlp/down used at the FFN input", "dense",
                                    edit_use(L0 + "mlp/down", input=L0 + "ffn_input")),
    "ninfer3.binder.parameter": ("no binding for layer 1 attention/key_norm", "dense",
                                 drop_binding(L1 + "attention/key_norm")),
    "ninfer3.binder.shape": ("layer 0 input_norm bound to a [16] object", "dense",
                             rebind(L0 + "input_norm", {"object": f"w.{L1}attention/key_norm"})),
    "ninfer3.binder.coverage": ("final_norm's parts cover 31 of 32 elements", "dense",
                                short_parts("text/final_norm")),
    "ninfer3.binder.resource": ("no chat_template.jinja resource", "dense", drop_resource),
    "ninfer3.binder.auxiliary_role": ("an auxiliary role activation_scale", "dense",
                                      auxiliary({"activation_scale": {"object": "w.divisor"}},
                                                ("w.divisor", np.float32([0.25]), "fp32"))),
    "ninfer3.binder.divisor": ("activation_input_divisor -1", "dense",
                               auxiliary({"activation_input_divisor": {"object": "w.divisor"}},
                                         ("w.divisor", np.array(-1.0, dtype=np.float32), "fp32"))),
    "ninfer3.binder.hadamard": ("hadamard_signs of 0.5 and -0.5", "wide",
                                auxiliary({"hadamard_signs": {"object": "w.signs"}},
                                          ("w.signs", HALF_SIGNS, "bf16"))),
}  # fmt: skip
