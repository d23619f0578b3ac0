"""A dense Qwen3 VQF file -> a VQF file of another weight mode or layout, and -> a Hugging Face
checkpoint folder (spec/vqf.md §converter, issue 34 item 13).

The Hugging Face export (`export_hf`) writes the dequantized weights as float32 under the names
transformers' Qwen3ForCausalLM loads (model.safetensors, streamed a band of rows at a time), its
config.json from the arch, and the tokenizer sidecars as tokenizer.json / chat_template.jinja.
Each file follows the output policy (ref/staging.py); the folder is made if missing.

`VQFState` presents a VQF file's tensors under the transformers names the importer reads (as
`GGUFState` does for a GGUF file): float32 values decoded one layer's matrix at a time, or raw
untiled blocks. Re-encoding to VQF goes through the one planner (to_vqf.write_planned): a
projection whose source codec is the untiled base of its new entry's layout (Q8_0 for
q8_0 / q8_0_8x8, Q4_0 for q4_0 / q4_0_4x4, G256 for g256 / g256_8x8) is copied block for block
and re-tiled — a relayout changes no value. Anything else (Q8_0 -> Q4_0, Q4I8 -> Q4_0, ...) is
dequantized and quantized again only with `requantize=True`, as for a GGUF source; otherwise
`vqf.import.requantize` names the tensor. Dequantizing to the reference-precision modes (f32,
f16) is exact and needs no flag. Norms are F32 already; the embedding is widened to float and
encoded again (F16 -> F16 gives the same words back).

A file with an x8_* or a second projection set reads the q8_* set for values (the more precise)
and whichever set has the needed blocks for copying. MoE (version 3), VISION and encrypted files
are refused (`vqf.import.source`): decrypt first; the family converters of those files take
Hugging Face folders and GGUF files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for, payload_size
from weightfile.spec.errors import UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import KINDS, Geometry

#: LayerWeights field -> VQF projection short name and norm name (spec/vqf.md §text-tensors).
PROJECTIONS = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o",
               "gate_proj": "gate", "up_proj": "up", "down_proj": "down"}  # fmt: skip
NORMS = ("attn_norm", "ffn_norm", "q_norm", "k_norm")


class VQFState(Mapping[str, np.ndarray]):
    """A dense Qwen3 VQF file's tensors under transformers names (module docstring)."""

    def __init__(self, vqf: Any, *, lossy_ok: bool, backend: Any) -> None:
        self.vqf = vqf  # an open ref VQFFile, kept open by the caller
        self.lossy_ok = lossy_ok
        self.backend = backend  # whose codecs decode and untile
        self.geometry = Geometry.from_arch(vqf.header.arch)
        present = {e.name for e in vqf.entries}
        sets = [s for s in ("q8", "q4") if f"{s}_q" in present]
        if not sets:
            raise UnsupportedError("vqf.import.source", "no q8_* or q4_* projections", path="q8_q")
        # where each transformers name lives: (VQF tensor names to read from, layer or None)
        self.where: dict[str, tuple[tuple[str, ...], int | None]] = {
            EMBED: (("token_embed",), None),
            FINAL_NORM: (("final_norm",), None),
            LM_HEAD: (tuple(f"{s}_lm" for s in sets), None),
        }
        for i in range(self.geometry.nl):
            for field in NORMS:
                if field in present:
                    self.where[layer_tensor(i, field)] = ((field,), i)
            for field, short in PROJECTIONS.items():
                self.where[layer_tensor(i, field)] = (tuple(f"{s}_{short}" for s in sets), i)

    def __iter__(self) -> Iterator[str]:
        return iter(self.where)

    def __len__(self) -> int:
        return len(self.where)

    def __contains__(self, key: object) -> bool:
        return key in self.where

    def matrices(self, name: str) -> tuple[int, int, int]:
        """(count, out, in) of the matrices stacked in entry `name` (spec/vqf.md
        §text-tensors), or 1 × rows × cols."""
        e = self.vqf.entry(name)
        kind = KINDS.get(name)
        if kind is not None and kind.elements(self.geometry) == e.rows * e.cols:
            return kind.physical(self.geometry)
        return (1, e.rows, e.cols)

    def layout(self, name: str) -> str:
        _, rows, cols = self.matrices(name)
        e = self.vqf.entry(name)
        return codec_for(e.qtype, self.vqf.header.flags, name, shape=(rows, cols))

    def shape(self, key: str) -> tuple[int, ...]:
        """The transformers shape of `key`: [out, in], or [n] for a norm vector."""
        _, rows, cols = self.matrices(self.where[key][0][0])
        return (cols,) if rows == 1 else (rows, cols)

    def __getitem__(self, key: str) -> np.ndarray:
        """float32 values; a quantized projection only when lossy re-encoding is allowed."""
        return self.rows(key, 0, self.matrices(self.where[key][0][0])[1])

    def rows(self, key: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of `key` as float32, decoded alone (every layout is row-local in
        whole row groups, and the planner's bands are multiples of them)."""
        names, layer = self.where[key]
        name = names[0]  # q8 before q4: the more precise values
        layout = self.layout(name)
        if CODECS[layout].block is not None and not self.lossy_ok:
            raise UnsupportedError(
                "vqf.import.requantize",
                f"{name} is {layout}: copying it needs the same block type as its new entry; "
                "pass --requantize to dequantize and quantize it again",
                path=name,
            )
        raw, n, cols = self.payload_rows(name, layout, layer, start, stop)
        values = self.backend.vqf_codecs.codec(layout).decode(raw, n, cols)
        shape = (n, cols) if len(self.shape(key)) == 2 else (cols,)
        return np.ascontiguousarray(np.asarray(values).reshape(shape), dtype=np.float32)

    def payload_rows(
        self, name: str, layout: str, layer: int | None, start: int, stop: int
    ) -> tuple[bytes, int, int]:
        """The stored bytes of rows [start, stop) of matrix `layer` of entry `name`."""
        _, rows, cols = self.matrices(name)
        at = (layer or 0) * payload_size(layout, rows, cols)
        per_row = payload_size(layout, rows, cols) // max(rows, 1)
        payload = self.vqf.payload(name)
        return bytes(payload[at + start * per_row : at + stop * per_row]), stop - start, cols

    def blocks(self, key: str, base: str, start: int = 0, stop: int | None = None) -> bytes | None:
        """The untiled blocks of rows [start, stop) of `key` when a source tensor's layout has
        the untiled base `base`, else None."""
        if key not in self.where:
            return None
        names, layer = self.where[key]
        for name in names:
            layout = self.layout(name)
            if CODECS[layout].base != base:
                continue
            _, rows, cols = self.matrices(name)
            stop = rows if stop is None else stop
            raw, n, _ = self.payload_rows(name, layout, layer, start, stop)
            if layout != base:  # tiled row groups lie inside [start, stop)
                raw = self.backend.vqf_codecs.codec(layout).untile(raw, n, cols)
            return raw
        return None


def hf_config_of(vqf: Any) -> dict[str, Any]:
    """The transformers config.json of a dense Qwen3 VQF file's arch (spec/vqf.md
    §arch-semantics), the inverse of to_vqf.arch_from_config."""
    a = vqf.header.arch
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": int(a["vocab_size"]),
        "hidden_size": int(a["dim"]),
        "intermediate_size": int(a["ffn_dim"]),
        "num_hidden_layers": int(a["n_layers"]),
        "num_attention_heads": int(a["n_heads"]),
        "num_key_value_heads": int(a["n_kv_heads"]),
        "head_dim": int(a["head_dim"]),
        "rope_theta": float(a["rope_theta"]),
        "rope_parameters": {"rope_type": "default", "rope_theta": float(a["rope_theta"])},
        "rms_norm_eps": float(a["norm_eps"]),
        "max_position_embeddings": int(a["max_seq_len"]),
        "bos_token_id": int(a["bos_id"]),
        "eos_token_id": int(a["eos_id"]),
        "tie_word_embeddings": False,  # VQF stores its own *_lm
        "hidden_act": "silu",
        "attention_bias": False,
        "torch_dtype": "float32",
    }


def wmode_of(src: str | os.PathLike[str]) -> str:
    """The weight mode a VQF file was written in (spec/vqf.md §weight-modes): its projection
    sets, the Q8BUF_Q4 and G256 flags, or the reference precision of its q8_q."""
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.vqf.qtypes import QType

    with open_vqf(src, check_ranges=False) as vqf:
        flags = vqf.header.flags
        qtypes = {e.name: e.qtype for e in vqf.entries}
    if "q8_q" in qtypes and "q4_q" in qtypes:
        return "dual"
    if "q8_q" not in qtypes:
        return "q4"
    if qtypes["q8_q"] in (QType.F32, QType.F16):
        return "f32" if qtypes["q8_q"] == QType.F32 else "f16"
    return "q4i" if flags & VQFFlag.Q8BUF_Q4 else "g256" if flags & VQFFlag.G256 else "q8"


def open_dense(src: str | os.PathLike[str]) -> Any:
    """The VQF file at `src`, refused unless it is a plaintext dense Qwen3 file."""
    from weightfile.ref.vqf.read import open_vqf

    vqf = open_vqf(src)
    flags, arch = vqf.header.flags, vqf.header.arch
    why = None
    if flags & VQFFlag.ENC:
        why = "it is encrypted (weightfile decrypt it first)"
    elif flags & VQFFlag.VISION or arch.get("vis_depth"):
        why = "it is a VISION (Qwen3-VL) file"
    elif flags & VQFFlag.MOE or arch.get("n_experts"):
        why = "it is a Qwen3-MoE file"
    if why is not None:
        vqf.close()
        raise UnsupportedError(
            "vqf.import.source", f"{Path(src).name}: converts dense Qwen3 VQF files; {why}"
        )
    return vqf


def convert_vqf(
    src: str | os.PathLike[str], out: str | os.PathLike[str], *, plan: Any, overwrite: bool,
    backend: Any, requantize: bool, passphrase: bytes | None, sign_key: bytes | None,
    progress: Any,
) -> Path:  # fmt: skip
    """Write `src` again as a VQF file by `plan` (module docstring); its tokenizer and chat
    template sidecars go along. Returns the path."""
    from weightfile.families.qwen3.to_vqf import check_destinations, write_planned

    check_destinations(out, overwrite)
    with open_dense(src) as vqf:
        lossy_ok = requantize or plan.wmode in ("f32", "f16")
        state = VQFState(vqf, lossy_ok=lossy_ok, backend=backend)
        path = write_planned(
            state, hf_config_of(vqf), out, plan=plan, overwrite=overwrite, backend=backend,
            passphrase=passphrase, sign_key=sign_key, progress=progress, blocks=state.blocks,
        )  # fmt: skip
    copy_sidecars(Path(src), path)
    return path


def copy_sidecars(src: Path, dst: Path) -> None:
    """The tokenizer and chat-template sidecars of `src`, published beside `dst`."""
    from weightfile.frontend.chat import chat_template_path
    from weightfile.frontend.tokenizer import sidecar_path
    from weightfile.ref.staging import write_output

    for side in (sidecar_path, chat_template_path):
        if side(src).is_file():
            write_output(side(dst), side(src).read_bytes(), overwrite=True)


def export_hf(
    src: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool, backend: Any,
    progress: Any = None,
) -> list[Path]:  # fmt: skip
    """Write `src` as a Hugging Face Qwen3 checkpoint folder at `out` (module docstring);
    returns the files written, model.safetensors first."""
    import json

    from weightfile.convert.checkpoint import safetensors_header
    from weightfile.families.qwen3.to_vqf import row_bands
    from weightfile.frontend.chat import chat_template_path
    from weightfile.frontend.tokenizer import sidecar_path
    from weightfile.ref.staging import check_output, staged, write_output

    folder = Path(out)
    sides = {"tokenizer.json": sidecar_path(Path(src)),
             "chat_template.jinja": chat_template_path(Path(src))}  # fmt: skip
    names = ["model.safetensors", "config.json"] + [n for n, p in sides.items() if p.is_file()]
    if folder.exists() or folder.is_symlink():
        check_folder(folder)
        for name in names:  # before the work: an existing file only with --force
            check_output(folder / name, overwrite, "vqf.writer.destination")
    with open_dense(src) as vqf:
        state = VQFState(vqf, lossy_ok=True, backend=backend)
        config = hf_config_of(vqf)
        shapes = {key: state.shape(key) for key in state}
        header = safetensors_header(shapes, {"format": "pt", "source": Path(src).name})
        folder.mkdir(exist_ok=True)
        with staged(folder / "model.safetensors", overwrite) as fh:
            fh.write(header)
            for key, shape in shapes.items():
                for start, stop in row_bands(*shape) if len(shape) == 2 else [(0, 0)]:
                    part = state.rows(key, start, stop) if len(shape) == 2 else state[key]
                    fh.write(memoryview(np.ascontiguousarray(part, dtype="<f4")).cast("B"))
                if progress is not None:
                    progress(key, len(shapes))
    write_output(folder / "config.json", json.dumps(config, indent=2).encode(), overwrite)
    for name, side in sides.items():
        if side.is_file():
            write_output(folder / name, side.read_bytes(), overwrite)
    return [folder / name for name in names]


def check_folder(folder: Path) -> None:
    """An existing destination must be a real folder (never a symlink to one)."""
    import stat

    from weightfile.spec.errors import FileAccessError

    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        raise FileAccessError(
            "format.file.destination",
            "a Hugging Face export goes into a folder; this is not one (or a symlink)",
            path=str(folder),
        )
