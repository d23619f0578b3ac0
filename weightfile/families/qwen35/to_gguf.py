"""A Qwen3.5 `.ninfer` file (text, and MTP when present) -> a llama.cpp `qwen35` / `qwen35moe`
GGUF file, with llama.cpp's converter transforms applied (spec/ninfer3.md §qwen35-gguf).

Blocks are copied where both containers share them: `q8_g32_fp16` -> Q8_0, `bf16` -> BF16
(gguf_blocks.py); any other matrix format is refused unless `requantize` (then its values are
quantised to Q8_0 by gguf-py). Vectors, the convolution, the norms (w + 1) and ssm_a (−exp A_log)
are F32. The vision component is not exported (llama.cpp keeps the tower in a separate mmproj
file). The file is published atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.backend import REFERENCE
from weightfile.ref.staging import check_output, staged_path
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.ninfer3.mtp_names import mtp_parameters
from weightfile.spec.ninfer3.qwen35_gguf import (
    DENSE_ARCH,
    EXPERT_TENSORS,
    LAYER_TENSORS,
    MOE_ARCH,
    NEXTN_TENSORS,
    TOP_TENSORS,
    Transform,
    conv_channels,
    forward_columns,
    forward_rows,
    tiled_heads,
)
from weightfile.spec.ninfer3.text_config import FULL_ATTENTION, LINEAR_ATTENTION
from weightfile.spec.ninfer3.text_names import text_parameters

from .gguf_blocks import Q8_GROUP, REQUANTIZE_RULE, Stored, gguf_array, stack, stack_experts


class Source:
    """The `.ninfer` parameters as the exporter reads them: each object decoded once (values or
    words) by the backend's codecs, each parameter's rows cut from its parents."""

    def __init__(self, artifact: Any, config: Mapping[str, Any], requantize: bool) -> None:
        self.artifact, self.requantize = artifact, requantize
        self.names = set(artifact.directory.bindings)
        params = text_parameters(config) + (mtp_parameters(config) if "mtp" in
                                            artifact.directory.components else [])  # fmt: skip
        self.shapes = {p.name: p.shape for p in params}
        self.cache: dict[tuple[str, bool], Any] = {}

    def _object(self, object_id: str, words: bool) -> Any:
        key = (object_id, words)
        if key not in self.cache:
            o = self.artifact.object(object_id)
            codec = REFERENCE.ninfer_codecs.get_codec(o.format, o.layout)
            payload = self.artifact.object_bytes(object_id)
            self.cache[key] = (codec.decode_words if words else codec.decode)(payload, o.shape)
        return self.cache[key]

    def _cut(self, name: str, words: bool) -> Any:
        """The parameter's values (its shape), or its words (row-wise arrays of its rows)."""
        shape = self.shapes[name]
        pieces = []
        for r in self.artifact.bind(name, shape):
            whole = self._object(r.object_id, words)
            if not words:
                pieces.append(np.asarray(whole).reshape(-1)[r.begin : r.end])
                continue
            o = self.artifact.object(r.object_id)
            width = o.shape[-1] if len(o.shape) > 1 else 1
            pieces.append({k: v[r.begin // width : r.end // width] if v.ndim > 1 else
                           v.reshape(-1)[r.begin : r.end] for k, v in whole.items()})  # fmt: skip
        if not words:
            return np.concatenate(pieces).reshape(shape)
        return {k: np.concatenate([p[k] for p in pieces]) for k in pieces[0]}

    def format_of(self, name: str) -> str:
        return self.artifact.object(self.artifact.bind(name, self.shapes[name])[0].object_id).format

    def f32(self, name: str) -> np.ndarray:
        return np.asarray(self._cut(name, False), dtype=np.float32)

    def stored(self, name: str) -> Stored:
        """One parameter's blocks (module docstring)."""
        fmt = self.format_of(name)
        if fmt == "q8_g32_fp16" and self.shapes[name][-1] % Q8_GROUP == 0:
            words = self._cut(name, True)
            return Stored("q8", words["codes"], words["scales"].astype(np.uint16))
        if fmt == "bf16":
            codes = self._cut(name, True)["codes"]
            return Stored("bf16", codes.astype(np.uint16).reshape(self.shapes[name]))
        values = self.f32(name)
        if fmt != "fp32" and values.ndim > 1 and not self.requantize:
            raise UnsupportedError(
                REQUANTIZE_RULE,
                f"{name} is {fmt} {list(values.shape)}: no GGUF type shares its blocks (Q8_0 "
                "needs q8_g32_fp16 rows of a multiple of 32): give --requantize",
                path=name,
            )
        return Stored("f32", values)  # a matrix is quantised to Q8_0 when written


def transformed(src: Source, names: list[str], t: Transform, config: Mapping[str, Any]) -> Stored:
    """One GGUF tensor from its parameters (spec/ninfer3.md §qwen35-gguf)."""
    nk, nv = config.get("linear_num_key_heads", 1), config.get("linear_num_value_heads", 1)
    if t is Transform.PLUS_ONE:
        return Stored("f32", (src.f32(names[0]).astype(np.float64) + 1).astype(np.float32))
    if t is Transform.NEG_EXP:
        a = -np.exp(src.f32(names[0]).astype(np.float64))
        return Stored("f32", a[tiled_heads(nk, nv, 1)].astype(np.float32))
    if t is Transform.CONV:
        conv = src.f32(names[0]).T  # [channel, tap]
        return Stored("f32", np.ascontiguousarray(conv[conv_channels(config, conv.shape[0])]))
    parts = [src.stored(n) for n in names]
    if parts[0].data.ndim == 1:
        whole = Stored("f32", np.concatenate([p.values() for p in parts]))
        return whole.vector(tiled_heads(nk, nv, 1)) if t is Transform.V_ROWS else whole
    whole = stack(parts)
    index = forward_rows(t, [p.data.shape[0] for p in parts], dict(config))
    if index is not None:
        whole = whole.rows(index)
    columns = forward_columns(t, whole.data.shape[-1], dict(config))
    return whole if columns is None else whole.columns(columns, names[0])


def layer_jobs(
    src: Source, config: Mapping[str, Any], prefix: str, block: int
) -> list[tuple[str, Callable[[], Stored]]]:
    """The GGUF tensors of one block (`prefix` is `text/layers/{i}/` or `mtp/layers/0/`)."""
    jobs: list[tuple[str, Callable[[], Stored]]] = []
    for gguf_name, (subs, t) in LAYER_TENSORS.items():
        names = [prefix + s for s in subs]
        if all(n in src.names for n in names):
            jobs.append(
                (f"blk.{block}.{gguf_name}", lambda n=names, t=t: transformed(src, n, t, config))
            )
    experts = config.get("num_experts", 0)
    for gguf_name, sub in EXPERT_TENSORS.items():
        names = [prefix + sub.format(e=e) for e in range(experts)]
        if names and all(n in src.names for n in names):
            jobs.append((f"blk.{block}.{gguf_name}",
                         lambda n=names: stack_experts([src.stored(x) for x in n])))  # fmt: skip
    return jobs


def all_jobs(src: Source, config: Mapping[str, Any]) -> list[tuple[str, Callable[[], Stored]]]:
    """Every GGUF tensor, in llama.cpp's order: top-level, each layer, the MTP block."""
    jobs: list[tuple[str, Callable[[], Stored]]] = []
    for gguf_name, (name, t) in TOP_TENSORS.items():
        if name == "text/output_head" and config["tie_word_embeddings"]:
            continue  # llama.cpp falls back to token_embd
        jobs.append((gguf_name, lambda n=name, t=t: transformed(src, [n], t, config)))
    n_layer = config["num_hidden_layers"]
    for i in range(n_layer):
        jobs += layer_jobs(src, config, f"text/layers/{i}/", i)
    if "mtp/input_projection" in src.names:
        for gguf_name, (name, t) in NEXTN_TENSORS.items():
            jobs.append((f"blk.{n_layer}.{gguf_name}",
                         lambda n=name, t=t: transformed(src, [n], t, config)))  # fmt: skip
        jobs += layer_jobs(src, config, "mtp/layers/0/", n_layer)
    return jobs


def add_metadata(w: Any, config: Mapping[str, Any], mtp: bool) -> None:
    """llama.cpp's qwen35 hyper-parameter keys (its converter's names, spec/ninfer3.md
    §qwen35-gguf)."""
    n = config["num_hidden_layers"]
    rope = config["rope_parameters"]
    w.add_name("weightfile export")
    w.add_context_length(int(config["max_position_embeddings"]))
    w.add_embedding_length(int(config["hidden_size"]))
    w.add_block_count(n + int(mtp))
    w.add_head_count(int(config["num_attention_heads"]))
    w.add_head_count_kv(int(config["num_key_value_heads"]))
    w.add_key_length(int(config["head_dim"]))
    w.add_value_length(int(config["head_dim"]))
    w.add_rope_freq_base(float(rope["rope_theta"]))
    w.add_rope_dimension_count(int(config["head_dim"] * rope["partial_rotary_factor"]))
    w.add_rope_dimension_sections([*rope["mrope_section"], 0])
    w.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
    w.add_ssm_conv_kernel(int(config["linear_conv_kernel_dim"]))
    w.add_ssm_state_size(int(config["linear_key_head_dim"]))
    w.add_ssm_group_count(int(config["linear_num_key_heads"]))
    w.add_ssm_time_step_rank(int(config["linear_num_value_heads"]))
    w.add_ssm_inner_size(int(config["linear_value_head_dim"] * config["linear_num_value_heads"]))
    recurrent = [t == LINEAR_ATTENTION for t in config["layer_types"]] + [False] * mtp
    w.add_array(f"{w.arch}.attention.recurrent_layers", recurrent)  # older gguf-py has no helper
    full = [i for i, t in enumerate(config["layer_types"]) if t == FULL_ATTENTION]
    w.add_full_attention_interval(full[0] + 1 if full else n)
    if mtp:
        w.add_nextn_predict_layers(1)
    if "num_experts" in config:
        w.add_expert_count(int(config["num_experts"]))
        w.add_expert_used_count(int(config["num_experts_per_tok"]))
        w.add_expert_feed_forward_length(int(config["moe_intermediate_size"]))
        w.add_expert_shared_feed_forward_length(int(config["shared_expert_intermediate_size"]))
    else:
        w.add_feed_forward_length(int(config["intermediate_size"]))


def add_resources(w: Any, artifact: Any, config: Mapping[str, Any]) -> None:
    """The tokenizer (llama.cpp's gpt2-style keys), EOS and chat template from the resources."""
    from weightfile.convert.gguf_tokenizer import add_tokenizer

    text = artifact.directory.components["text"]
    data = {r: bytes(artifact.object_bytes(o)) for r, o in text.resources.items()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.json"
        path.write_bytes(data["tokenizer.json"])
        add_tokenizer(w, path, {"vocab_size": config["vocab_size"]})
    eos = json.loads(data["generation_config.json"]).get("eos_token_id")
    if eos is not None:
        w.add_eos_token_id(int(eos[0] if isinstance(eos, list) else eos))
    w.add_chat_template(data["chat_template.jinja"].decode("utf-8"))


def write_jobs(w: Any, jobs: list[tuple[str, Callable[[], Stored]]]) -> None:
    import gguf

    for name, make in jobs:
        s = make()
        if (
            s.kind == "f32"
            and s.data.ndim >= 2
            and name.endswith(".weight")
            and "conv1d" not in name
        ):
            s_bytes = gguf.quants.quantize(s.data, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, s_bytes, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            continue
        array, kind = gguf_array(s)
        raw = None if kind == "F32" else gguf.GGMLQuantizationType[kind]
        w.add_tensor(name, array, raw_dtype=raw)


def export_gguf(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    requantize: bool = False,
) -> Path:
    """Write the GGUF of the `.ninfer` file `src` (module docstring); returns its path."""
    import gguf

    from weightfile.ref.ninfer3.read import open_artifact

    out = check_output(out, overwrite, "format.file.exists")
    with open_artifact(src) as artifact:
        comps = artifact.directory.components
        config = comps["text"].config
        mtp = "mtp" in comps
        jobs = all_jobs(Source(artifact, config, requantize), config)
        with staged_path(out, overwrite, exists_rule="format.file.exists") as tmp:
            w = gguf.GGUFWriter(tmp, MOE_ARCH if "num_experts" in config else DENSE_ARCH)
            add_metadata(w, config, mtp)
            add_resources(w, artifact, config)
            write_jobs(w, jobs)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
    return Path(out)
