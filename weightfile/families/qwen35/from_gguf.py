"""A llama.cpp `qwen35` / `qwen35moe` GGUF file -> a Qwen3.5 `.ninfer` file (text, and MTP when the
file has a NextN block), undoing llama.cpp's converter transforms (spec/ninfer3.md §qwen35-gguf).

The closed text config comes from the GGUF hyper-parameters; the four text resources from its
tokenizer keys (weightfile/convert/gguf_tokenizer.py), EOS id and chat template. Q8_0 blocks are
copied into `q8_g32_fp16` and BF16 words into `bf16` (gguf_blocks.py); any other matrix type is
refused unless `requantize` (then its values, dequantised by gguf-py, are encoded `q8_g32_fp16`).
Norms come back as `(stored − 1)` rounded to bf16, `a_log` as `log(−ssm_a)` in binary64 rounded
to binary32, every vector and the convolution from F32. Each parameter is a parent of its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import ArtifactWriter
from weightfile.ref.qwen35.config import validate_text_config
from weightfile.spec.errors import InvalidError, MalformedError, UnsupportedError
from weightfile.spec.ninfer3.mtp_names import mtp_config, mtp_head_use, mtp_parameters
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
from weightfile.spec.ninfer3.text_config import (
    DENSE_ARCHITECTURE,
    FULL_ATTENTION,
    LINEAR_ATTENTION,
    MODEL_TYPES,
    MOE_ARCHITECTURE,
)
from weightfile.spec.ninfer3.text_names import TextParameter, text_parameters

from .gguf_blocks import REQUANTIZE_RULE, Stored, from_q8_0, round_bf16
from .to_ninfer_plan import ACTIVATION_POLICY, CONTIGUOUS, ROW_SPLIT

RULE = "qwen35.gguf.config"


def f32_text(x: float) -> float:
    """A binary32 hyper-parameter as the shortest decimal that reads back to it (1e-06)."""
    return float(str(np.float32(x)))


def config_from_gguf(meta: Mapping[str, Any], vocab: int, tied: bool) -> dict[str, Any]:
    """The closed spec/ninfer3.md §qwen35-config object from llama.cpp's keys."""
    arch = meta.get("general.architecture")
    if arch not in (DENSE_ARCH, MOE_ARCH):
        raise UnsupportedError(
            "qwen35.gguf.architecture", f"architecture {arch!r} is not qwen35/qwen35moe",
            path="general.architecture",
        )  # fmt: skip
    k = {key.removeprefix(f"{arch}."): v for key, v in meta.items()}
    try:
        n = int(k["block_count"]) - int(k.get("nextn_predict_layers", 0))
        recurrent = list(k["attention.recurrent_layers"])[:n]
        head_dim = int(k["attention.key_length"])
        model = MOE_ARCHITECTURE if arch == MOE_ARCH else DENSE_ARCHITECTURE
        config: dict[str, Any] = {
            "architectures": [model], "model_type": MODEL_TYPES[model],
            "hidden_size": int(k["embedding_length"]), "vocab_size": vocab,
            "num_hidden_layers": n, "max_position_embeddings": int(k["context_length"]),
            "tie_word_embeddings": tied,
            "rms_norm_eps": f32_text(k["attention.layer_norm_rms_epsilon"]),
            "layer_types": [LINEAR_ATTENTION if r else FULL_ATTENTION for r in recurrent],
            "num_attention_heads": int(k["attention.head_count"]),
            "num_key_value_heads": int(k["attention.head_count_kv"]), "head_dim": head_dim,
            "rope_parameters": {
                "rope_theta": f32_text(k["rope.freq_base"]),
                "partial_rotary_factor": f32_text(int(k["rope.dimension_count"]) / head_dim),
                "mrope_section": [int(s) for s in list(k["rope.dimension_sections"])[:3]],
            },
            "linear_num_key_heads": int(k["ssm.group_count"]),
            "linear_key_head_dim": int(k["ssm.state_size"]),
            "linear_num_value_heads": int(k["ssm.time_step_rank"]),
            "linear_value_head_dim": int(k["ssm.inner_size"]) // int(k["ssm.time_step_rank"]),
            "linear_conv_kernel_dim": int(k["ssm.conv_kernel"]),
        }  # fmt: skip
        if arch == MOE_ARCH:
            config |= {
                "num_experts": int(k["expert_count"]),
                "num_experts_per_tok": int(k["expert_used_count"]),
                "moe_intermediate_size": int(k["expert_feed_forward_length"]),
                "shared_expert_intermediate_size": int(k["expert_shared_feed_forward_length"]),
            }
        else:
            config["intermediate_size"] = int(k["feed_forward_length"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        raise InvalidError(RULE, f"missing or bad qwen35 key: {exc}", path=str(exc)) from None
    validate_text_config(config)
    return config


class GGUFTensors:
    """The file's tensors by name, as `Stored` blocks (Q8_0, BF16) or float32 values."""

    def __init__(self, reader: Any, requantize: bool) -> None:
        self.by_name = {t.name: t for t in reader.tensors}
        self.requantize = requantize

    def stored(self, name: str) -> Stored:
        import gguf

        t = self.by_name.get(name)
        if t is None:
            raise InvalidError("qwen35.gguf.tensor", f"the file has no {name}", path=name)
        shape = tuple(int(x) for x in reversed(t.shape))
        kind = t.tensor_type
        if kind == gguf.GGMLQuantizationType.Q8_0:
            return from_q8_0(np.asarray(t.data), shape)
        if kind == gguf.GGMLQuantizationType.BF16:
            return Stored("bf16", np.asarray(t.data).view(np.uint16).reshape(shape))
        if kind == gguf.GGMLQuantizationType.F32 or self.requantize or len(shape) == 1:
            values = gguf.quants.dequantize(np.asarray(t.data), kind).reshape(shape)
            return Stored("f32", values.astype(np.float32))
        raise UnsupportedError(
            REQUANTIZE_RULE, f"{name} is {kind.name}: no .ninfer format shares its blocks: "
            "give --requantize", path=name,
        )  # fmt: skip

    def f32(self, name: str) -> np.ndarray:
        return self.stored(name).values()


def gguf_home(config: Mapping[str, Any], name: str) -> tuple[str, tuple[str, ...], Transform]:
    """(GGUF tensor, its canonical members, transform) of canonical parameter `name`."""
    n = config["num_hidden_layers"]
    for gguf_name, (param, t) in {**TOP_TENSORS, **{
        f"blk.{n}.{g}": v for g, v in NEXTN_TENSORS.items()
    }}.items():  # fmt: skip
        if param == name:
            return gguf_name, (name,), t
    if name.startswith("mtp/layers/0/"):
        block, sub = n, name.removeprefix("mtp/layers/0/")
        prefix = "mtp/layers/0/"
    else:
        _, _, sub = name.split("/", 2)
        block, sub = int(sub.split("/", 1)[0]), sub.split("/", 1)[1]
        prefix = f"text/layers/{block}/"
    for gguf_name, (subs, t) in LAYER_TENSORS.items():
        if sub in subs:
            return f"blk.{block}.{gguf_name}", tuple(prefix + s for s in subs), t
    for gguf_name, pattern in EXPERT_TENSORS.items():
        head, tail = pattern.split("{e}")
        if sub.startswith(head) and sub.endswith(tail):
            return f"blk.{block}.{gguf_name}", (name,), Transform.NONE
    raise InvalidError("qwen35.gguf.tensor", f"no GGUF tensor holds {name}", path=name)


def undone(
    tensors: GGUFTensors, config: Mapping[str, Any], p: TextParameter, shapes: Mapping[str, Any]
) -> Stored:
    """Parameter `p` from its GGUF tensor, the converter's transform undone."""
    gguf_name, members, t = gguf_home(config, p.name)
    if t is Transform.PLUS_ONE:
        values = tensors.f32(gguf_name).astype(np.float64) - 1
        return Stored("bf16", round_bf16(values.astype(np.float32)))
    if t is Transform.NEG_EXP:
        a = np.empty(p.shape, np.float64)
        nk, nv = config["linear_num_key_heads"], config["linear_num_value_heads"]
        a[tiled_heads(nk, nv, 1)] = tensors.f32(gguf_name)
        return Stored("f32", inverse_neg_exp(a.astype(np.float32)))
    if t is Transform.CONV:
        conv = tensors.f32(gguf_name)
        out = np.empty_like(conv)
        out[conv_channels(dict(config), conv.shape[0])] = conv
        return Stored("bf16", round_bf16(np.ascontiguousarray(out.T)))
    whole = tensors.stored(gguf_name)
    if "/moe/experts/" in p.name:
        e = int(p.name.split("/moe/experts/")[1].split("/")[0])
        return Stored(whole.kind, whole.data[e], None if whole.scales is None else whole.scales[e])
    rows = [shapes[m][0] for m in members]
    if whole.data.ndim == 1:
        order = forward_rows(t, rows, dict(config))
        v = whole.values()
        if order is not None:
            v = v[np.argsort(order)]
        return Stored("f32", v)
    order = forward_rows(t, rows, dict(config))
    if order is not None:
        whole = whole.rows(np.argsort(order))
    columns = forward_columns(t, whole.data.shape[-1], dict(config))
    if columns is not None:
        whole = whole.columns(np.argsort(columns), gguf_name)
    start = sum(rows[: members.index(p.name)])
    return whole.rows(np.arange(start, start + rows[members.index(p.name)]))


def inverse_neg_exp(a: np.ndarray) -> np.ndarray:
    """A_log from ssm_a = binary32(−exp(A_log)) (spec/ninfer3.md §qwen35-gguf): among the binary32
    values within 8 ulps of log(−a) that the exporter maps to a, the one with the most trailing
    zero bits (a bf16 value first), then the nearest; log(−a) when none maps back."""
    guess = np.log(-a.astype(np.float64)).astype(np.float32)
    out = guess.copy()
    bits = guess.view(np.int32)
    for i in range(a.size):
        cands = (bits[i] + np.arange(-8, 9, dtype=np.int32)).view(np.float32)
        back = (-np.exp(cands.astype(np.float64))).astype(np.float32)
        ok = cands[back == a[i]]
        if ok.size:
            zeros = [(int(c.view(np.uint32)) & -int(c.view(np.uint32))).bit_length() for c in ok]
            best = max(
                range(ok.size), key=lambda j: (zeros[j], -abs(float(ok[j]) - float(guess[i])))
            )
            out[i] = ok[best]
    return out


def encode(p: TextParameter, s: Stored, backend: Backend) -> tuple[str, str, bytes]:
    """(format, layout, bytes) of one parameter's object."""
    codecs = backend.ninfer_codecs
    if p.direct_format == "fp32":
        return "fp32", CONTIGUOUS, codecs.get_codec("fp32", CONTIGUOUS).encode(s.values(), p.shape)
    if s.kind == "q8" and not p.is_direct:
        words = {"codes": s.data, "scales": s.scales}
        data = codecs.get_codec("q8_g32_fp16", ROW_SPLIT).encode_words(words, p.shape)
        return "q8_g32_fp16", ROW_SPLIT, data
    if s.kind == "f32" and not p.is_direct:  # --requantize
        codec = codecs.get_codec("q8_g32_fp16", ROW_SPLIT)
        return "q8_g32_fp16", ROW_SPLIT, codec.encode(s.values().reshape(p.shape), p.shape)
    words = s.data if s.kind == "bf16" else round_bf16(s.values())
    codec = codecs.get_codec("bf16", CONTIGUOUS)
    return "bf16", CONTIGUOUS, codec.encode_words({"codes": words.reshape(p.shape)}, p.shape)


def gguf_resources(meta: Mapping[str, Any]) -> dict[str, bytes]:
    """The four text resources from the tokenizer keys, EOS id and chat template."""
    from weightfile.convert.gguf_tokenizer import tokenizer_json

    text, reason = tokenizer_json(meta)
    template = meta.get("tokenizer.chat_template")
    if text is None or not template:
        raise UnsupportedError(
            "qwen35.gguf.tokenizer", f"no tokenizer.json or chat template to rebuild ({reason})",
            path="tokenizer",
        )  # fmt: skip
    eos = meta.get("tokenizer.ggml.eos_token_id")
    gen = {"eos_token_id": int(eos)} if eos is not None else {}
    return {
        "tokenizer.json": text.encode("utf-8"),
        "tokenizer_config.json": json.dumps({"model_max_length": 0}).encode("utf-8"),
        "chat_template.jinja": str(template).encode("utf-8"),
        "generation_config.json": json.dumps(gen).encode("utf-8"),
    }


def import_gguf(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    backend: Backend = REFERENCE,
    requantize: bool = False,
    overwrite: bool = False,
) -> list[Path]:
    """Write the `.ninfer` file of the GGUF file `src` (module docstring)."""
    from gguf import GGUFReader

    from weightfile.families.qwen3.from_gguf import metadata

    from .to_ninfer import resource_id

    try:
        reader = GGUFReader(src)
    except (ValueError, KeyError, IndexError, OSError) as exc:
        raise MalformedError("qwen35.gguf.file", f"not a readable GGUF file: {exc}") from None
    meta = metadata(reader)
    tensors = GGUFTensors(reader, requantize)
    embd = tensors.by_name.get("token_embd.weight")
    if embd is None:
        raise InvalidError("qwen35.gguf.tensor", "the file has no token_embd.weight")
    tied = "output.weight" not in tensors.by_name
    config = config_from_gguf(meta, int(embd.shape[1]), tied)
    mtp = int(meta.get(f"{meta['general.architecture']}.nextn_predict_layers", 0)) > 0
    params = text_parameters(config) + (mtp_parameters(config) if mtp else [])
    shapes = {p.name: p.shape for p in params}
    resources = gguf_resources(meta)
    encoded = {p.name: encode(p, undone(tensors, config, p, shapes), backend) for p in params
               if not (tied and p.name == "text/output_head")}  # fmt: skip
    objects: list[Any] = [ResourceSpec(resource_id(r), len(b)) for r, b in resources.items()]
    objects += [TensorSpec("w." + n, shapes[n], f, lay) for n, (f, lay, _) in encoded.items()]
    bindings = {n: {"object": "w." + n} for n in encoded}
    if tied:
        bindings["text/output_head"] = {"object": "w.text/token_embedding"}
    uses = [{"parameter": p.name, "input": i, "activation_policy": ACTIVATION_POLICY}
            for p in params for i in p.inputs]  # fmt: skip
    components: dict[str, Any] = {"text": {"config": config, "resources": {
        r: resource_id(r) for r in resources}}}  # fmt: skip
    if mtp:
        head, at = mtp_head_use()
        uses.append({"parameter": head, "input": at, "activation_policy": ACTIVATION_POLICY})
        components["mtp"] = {"config": mtp_config("num_experts" in config), "target": "text"}
    provenance = {"converter": "weightfile import", "source": "gguf"}
    with ArtifactWriter(out, overwrite=overwrite, objects=objects, components=components,
                        bindings=bindings, uses=uses, metadata={"name": Path(src).stem},
                        provenance=provenance) as w:  # fmt: skip
        for role, data in resources.items():
            w.write(resource_id(role), data)
        for name, (_, _, data) in encoded.items():
            w.write("w." + name, data)
        return w.finish()
