"""A llama.cpp GGUF Qwen3 file -> VQF, copying Q8_0/Q4_0 blocks (spec/vqf.md §converter).

The file is read with gguf-py's `GGUFReader` (memory-mapped). Its `qwen3.*` metadata gives the
Qwen3Config, its tensors are presented under the transformers names the importer reads
(`GGUFState`), and a projection whose GGUF type is the untiled base of the layout its VQF entry
takes (Q8_0 for q8_0 / q8_0_8x8, Q4_0 for q4_0 / q4_0_4x4) is copied block for block, tiled where
the flags say (a permutation of the same blocks, spec/vqf.md §q8-tiled, §q4-0) — never requantized.
F32/F16/BF16 tensors are quantized as a checkpoint's would be. Any other quantized projection
(K-quants, or Q8_0 into a q4 family) is dequantized and quantized again only with
`requantize=True`; otherwise `vqf.import.requantize`. The token embedding is always widened to
float (VQF stores it F16 or F32), so its type may change. The GGUF's vocabulary, merges and chat
template become the VQF's tokenizer sidecars (weightfile/convert/gguf_tokenizer.py).
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, LM_HEAD
from weightfile.ref.backend import Backend
from weightfile.spec.errors import InvalidError, MalformedError, NotFoundError, UnsupportedError

#: GGUF tensor name -> transformers name (llama.cpp's qwen3 names).
GGUF_NAMES: dict[str, str] = {
    "token_embd.weight": EMBED,
    "output_norm.weight": FINAL_NORM,
    "output.weight": LM_HEAD,
}
#: LayerWeights field -> the GGUF name after "blk.L.".
GGUF_LAYER: dict[str, str] = {
    "attn_norm": "attn_norm.weight",
    "q_proj": "attn_q.weight",
    "k_proj": "attn_k.weight",
    "v_proj": "attn_v.weight",
    "q_norm": "attn_q_norm.weight",
    "k_norm": "attn_k_norm.weight",
    "o_proj": "attn_output.weight",
    "ffn_norm": "ffn_norm.weight",
    "gate_proj": "ffn_gate.weight",
    "up_proj": "ffn_up.weight",
    "down_proj": "ffn_down.weight",
}
LAYER_NAME = re.compile(r"blk\.(\d+)\.(.+)")
#: The untiled VQF codec whose blocks a GGUF type's blocks are, byte for byte.
COPYABLE = {"Q8_0": "q8_0", "Q4_0": "q4_0"}
FLOAT_TYPES = ("F32", "F16", "BF16")


def hf_name(gguf_name: str) -> str | None:
    """The transformers name of a GGUF tensor, None for one the importer does not read."""
    if gguf_name in GGUF_NAMES:
        return GGUF_NAMES[gguf_name]
    m = LAYER_NAME.fullmatch(gguf_name)
    if m is None:
        return None
    field = next((f for f, g in GGUF_LAYER.items() if g == m.group(2)), None)
    return None if field is None else f"model.layers.{m.group(1)}.{LAYER_TENSORS[field]}"


class GGUFState(Mapping[str, np.ndarray]):
    """A GGUF file's tensors under transformers names: float32 values, or raw blocks."""

    def __init__(self, path: str | os.PathLike[str], *, requantize: bool = False) -> None:
        from gguf import GGUFReader

        try:
            self.reader = GGUFReader(path)
        except (ValueError, KeyError, IndexError, OSError) as exc:
            raise MalformedError("vqf.import.gguf", f"not a readable GGUF file: {exc}") from None
        self.requantize = requantize
        self.tensors = {}
        for t in self.reader.tensors:
            name = hf_name(t.name)
            if name is not None:
                self.tensors[name] = t

    def __iter__(self) -> Iterator[str]:
        return iter(self.tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def __contains__(self, key: object) -> bool:
        return key in self.tensors

    def type_name(self, key: str) -> str:
        return self.tensors[key].tensor_type.name

    def shape(self, key: str) -> tuple[int, ...]:
        """The transformers (row-major) shape: GGUF lists ne0 (the contiguous axis) first."""
        return tuple(int(n) for n in reversed(self.tensors[key].shape.tolist()))

    def __getitem__(self, key: str) -> np.ndarray:
        """float32 values; a quantized tensor other than the embedding only with requantize."""
        return self.rows(key, 0, self.shape(key)[0])

    def rows(self, key: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of `key` as float32 (the same refusal as `__getitem__`)."""
        from gguf.quants import dequantize

        t = self.tensors[key]
        kind = t.tensor_type.name
        if kind not in FLOAT_TYPES and key != EMBED and not self.requantize:
            raise UnsupportedError(
                "vqf.import.requantize",
                f"{t.name} is {kind}: copying it needs the same block type as its VQF entry; "
                "pass --requantize to dequantize and quantize it again",
                path=t.name,
            )
        part = self.row_view(t, start, stop)
        values = dequantize(np.asarray(part), t.tensor_type)
        shape = (stop - start, *self.shape(key)[1:])
        out = np.ascontiguousarray(values.reshape(shape), dtype=np.float32)
        self.release(part)
        return out

    def blocks(self, key: str, base: str, start: int = 0, stop: int | None = None) -> bytes | None:
        """The raw blocks of rows [start, stop) of `key` when its GGUF type is the VQF codec
        `base`, else None."""
        t = self.tensors.get(key)
        if t is None or COPYABLE.get(t.tensor_type.name) != base:
            return None
        part = self.row_view(t, start, self.shape(key)[0] if stop is None else stop)
        raw = np.asarray(part).tobytes()
        self.release(part)
        return raw

    @staticmethod
    def row_view(t: Any, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of a tensor's mapped data: gguf-py gives quantized tensors as
        [rows, bytes per row] and plain ones as [rows, cols], so rows are the first axis
        (a vector is one row)."""
        data = t.data
        return data.reshape(-1, data.shape[-1])[start:stop] if data.ndim > 2 else data[start:stop]

    def release(self, part: np.ndarray) -> None:
        """Drop the mapped pages under `part` (copied out already) from this process: the file
        stays in the page cache, but a whole-file pass keeps one tensor resident, not the file."""
        mapping = getattr(self.reader.data, "_mmap", None)
        if mapping is None or not hasattr(mmap, "MADV_DONTNEED") or part.nbytes == 0:
            return
        base = self.reader.data.ctypes.data
        begin = part.ctypes.data - base
        page = mmap.PAGESIZE
        lo, hi = -(-begin // page) * page, (begin + part.nbytes) // page * page
        if lo < hi:
            mapping.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


#: The per-layer projection weights of llama.cpp's qwen3 and qwen3moe files.
PROJECTION = re.compile(r"blk\.\d+\.(attn_(q|k|v|output)|ffn_(gate|up|down)(_exps)?)\.weight")
#: The weight mode whose blocks a GGUF type's blocks are (COPYABLE's targets).
WMODE_OF_TYPE = {"Q4_0": "q4", "Q8_0": "q8"}


def natural_wmode(path: str | os.PathLike[str]) -> str:
    """The weight mode a GGUF file's blocks copy into (spec/vqf.md §converter): q4 when most of
    its per-layer projections are Q4_0, q8 when Q8_0, else q8 (whose blocks then need
    --requantize). The lm head and embedding do not decide: llama-quantize often gives them
    another type."""
    from collections import Counter

    state = GGUFState(path)
    types = Counter(
        t.tensor_type.name for t in state.reader.tensors if PROJECTION.fullmatch(t.name)
    )
    most = types.most_common(1)[0][0] if types else None
    return WMODE_OF_TYPE.get(most, "q8")


def metadata(reader: Any) -> dict[str, Any]:
    """Scalar and string metadata fields by key."""
    out: dict[str, Any] = {}
    for key, field in reader.fields.items():
        try:
            out[key] = field.contents()
        except (ValueError, IndexError, TypeError):  # an unreadable field: leave it out
            continue
    return out


def hf_config(state: GGUFState, want: str = "qwen3") -> dict[str, Any]:
    """A transformers-style config.json of a qwen3 (or qwen3moe) GGUF file (llama.cpp's
    metadata keys); a qwen3moe file adds the expert sizes under the transformers names."""
    meta = metadata(state.reader)
    arch = meta.get("general.architecture")
    if arch != want:
        raise UnsupportedError(
            "vqf.import.source", f"GGUF architecture {arch!r}: this converter takes {want}"
        )

    def key(name: str, default: Any = None) -> Any:
        value = meta.get(f"{want}.{name}", default)
        if value is None:
            raise InvalidError("vqf.import.config", f"GGUF metadata {want}.{name} is missing")
        return value

    if EMBED not in state:
        raise NotFoundError("vqf.import.missing_tensor", "token_embd.weight is missing")
    vocab, hidden = state.shape(EMBED)
    heads = int(key("attention.head_count"))
    return {
        "model_type": "qwen3" if want == "qwen3" else "qwen3_moe",
        "vocab_size": int(meta.get(f"{want}.vocab_size", vocab)),
        "hidden_size": int(key("embedding_length")),
        "intermediate_size": int(key("feed_forward_length")),
        "num_hidden_layers": int(key("block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(key("attention.head_count_kv", heads)),
        "head_dim": int(key("attention.key_length", hidden // heads)),
        "rope_theta": float(key("rope.freq_base", 10000.0)),
        "rms_norm_eps": float(key("attention.layer_norm_rms_epsilon", 1e-6)),
        "max_position_embeddings": int(key("context_length", 8192)),
        "bos_token_id": int(meta.get("tokenizer.ggml.bos_token_id", 0)),
        "eos_token_id": int(meta.get("tokenizer.ggml.eos_token_id", 0)),
        "tie_word_embeddings": LM_HEAD not in state,
    } | (
        {}
        if want == "qwen3"
        else {
            "num_experts": int(key("expert_count")),
            "num_experts_per_tok": int(key("expert_used_count")),
            "moe_intermediate_size": int(key("expert_feed_forward_length")),
            "norm_topk_prob": True,  # llama.cpp's qwen3moe always renormalises, as VQF v3
        }
    )


def import_gguf(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    plan: Any,
    overwrite: bool = False,
    backend: Backend,
    requantize: bool = False,
    passphrase: bytes | None = None,
    sign_key: bytes | None = None,
    progress: Any = None,
) -> Path:
    """Write the VQF of a qwen3 GGUF file (module docstring); returns the path."""
    from weightfile.convert.gguf_tokenizer import write_gguf_sidecars
    from weightfile.families.qwen3.to_vqf import write_planned

    state = GGUFState(src, requantize=requantize)
    cfg = hf_config(state)
    path = write_planned(
        state, cfg, out, plan=plan, overwrite=overwrite, backend=backend, passphrase=passphrase,
        sign_key=sign_key, progress=progress, blocks=state.blocks,
    )  # fmt: skip
    write_gguf_sidecars(metadata(state.reader), path)  # the GGUF's tokenizer, as a VQF's
    return path
