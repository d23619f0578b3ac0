"""A Qwen3 VQF file -> a llama.cpp qwen3 GGUF file (a version-3 MoE file -> qwen3moe), written
with gguf-py's GGUFWriter (spec/vqf.md §converter).

Every q8_*/q4_* matrix is untiled back to its plain blocks and written as GGUF Q8_0 / Q4_0, one
layer's slice per `blk.L.*` tensor: the bytes are not requantized, so a GGUF -> VQF -> GGUF round
trip gives the projections' blocks back unchanged. Q4I8 and G256 payloads are Q8_0 blocks already
(spec/vqf.md §q4i8, §g256) and are copied as Q8_0. The embedding stays F16 (or F32), the norms F32;
the lm_head is `output.weight` (absent when the file ties it to the embedding). A dual file holds
two projection sets and a GGUF file one: it is refused unless the caller names the set
(`projection_set`, `convert --wmode q4|q8`), never picked silently. `general.file_type` is
llama.cpp's LlamaFileType of the set (MOSTLY_Q4_0 or MOSTLY_Q8_0) and
`general.quantization_version` gguf-py's GGML_QUANT_VERSION; the `<file>.chat_template.jinja`
sidecar becomes `tokenizer.chat_template`. The tokenizer
comes from the `<file>.tokenizer.json` sidecar (a byte-level BPE: tokens, types, merges, bos/eos),
as llama.cpp's qwen3 loader needs it; without one the GGUF names llama.cpp's `none` tokenizer model
with the vocabulary size, which llama.cpp loads and runs on token ids. A MoE file's router and
experts become llama.cpp's ffn_gate_inp and ffn_{gate,up,down}_exps, blocks copied
(`expert_jobs`). Tensors are written one at a time, the large ones a band of rows at a time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.convert.gguf_tokenizer import add_tokenizer
from weightfile.families.qwen3.from_gguf import GGUF_LAYER
from weightfile.families.qwen3.to_vqf import row_bands
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.staging import check_output, staged_path
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: VQF projection short name -> LayerWeights field (the GGUF_LAYER key).
FIELDS = {
    "q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "o_proj",
    "gate": "gate_proj", "up": "up_proj", "down": "down_proj",
}  # fmt: skip


def export_gguf(
    src: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    backend: Backend = REFERENCE,
    passphrase: bytes | None = None,
    progress: Callable[[str, int], None] | None = None,
    projection_set: str | None = None,
    mmproj: bool = False,
) -> Path:
    """Write the GGUF of the VQF file `src` (module docstring), published atomically;
    `progress(name, total)` is told of every tensor written; `projection_set` (q4 or q8) chooses
    the set of a dual file, and must be the file's own set otherwise. A VISION file exports its
    text tower only when `mmproj` says its vision tower goes to a projector file
    (weightfile/convert/vqf_mmproj.py)."""
    import gguf

    from weightfile.frontend.chat import chat_template_path
    from weightfile.ref.vqf.read import open_vqf

    out = check_output(out, overwrite, "vqf.writer.destination")  # before any work
    with open_vqf(src, passphrase=passphrase) as vqf:
        flags, a = vqf.header.flags, vqf.header.arch
        if flags & VQFFlag.VISION and not mmproj:
            raise UnsupportedError(
                "vqf.import.source",
                "a VISION file exports to two GGUF files: llama.cpp keeps the vision tower in a "
                "separate mmproj (clip) GGUF; pass --mmproj PATH to write it there",
            )
        chosen = choose_projection_set({e.name for e in vqf.entries}, projection_set, src)
        # the one output policy (ref/staging.py): gguf writes our locked temporary file
        with staged_path(out, overwrite, exists_rule="vqf.writer.destination") as tmp:
            moe = bool(flags & VQFFlag.MOE)
            w = gguf.GGUFWriter(tmp, "qwen3moe" if moe else "qwen3")
            add_metadata(w, a, moe)
            file_type = "MOSTLY_Q4_0" if chosen == "q4" else "MOSTLY_Q8_0"
            w.add_file_type(int(gguf.LlamaFileType[file_type]))
            w.add_quantization_version(gguf.GGML_QUANT_VERSION)
            add_tokenizer(w, sidecar_path(src), a)
            template = chat_template_path(src)
            if template.is_file():
                w.add_chat_template(template.read_text(encoding="utf-8"))
            add_tensors(w, vqf, a, flags, chosen, backend, progress)
            w.close()
    return out


def choose_projection_set(names: set[str], wanted: str | None, src: str | os.PathLike[str]) -> str:
    """The projection set to export: the file's only one, or the one `wanted` names; a dual
    file without a choice, or a choice the file does not hold, is refused (vqf.import.option)."""
    held = [s for s in ("q8", "q4") if f"{s}_q" in names] or ["q8"]
    name = Path(src).name
    if wanted is None and len(held) > 1:
        raise UnsupportedError(
            "vqf.import.option",
            f"{name} is a dual file (q8_* and q4_* projections) and a GGUF file holds one set: "
            "pass --wmode q8 or --wmode q4 to choose which one to export",
            path="wmode",
        )
    if wanted is not None and wanted not in held:
        raise UnsupportedError(
            "vqf.import.option",
            f"{name} holds only the {held[0]}_* projections: --wmode {wanted} would need them "
            "quantized again, which the GGUF export does not do",
            path="wmode",
        )
    return wanted or held[0]


def export_notes(flags: int) -> list[str]:
    """What the export writes differently from the VQF file, said once (the `convert` line):
    G256 and Q4I8 payloads are exported as the Q8_0 blocks they are (spec/vqf.md §g256, §q4i8)."""
    notes = []
    for flag, mode in ((VQFFlag.G256, "g256"), (VQFFlag.Q8BUF_Q4, "q4i")):
        if flags & flag:
            notes.append(
                f"the {mode} matrices are written as GGUF Q8_0 blocks: the same values (a {mode} "
                f"payload is Q8_0 blocks), but GGUF has no {mode} type, so converting the GGUF "
                f"back to --wmode {mode} needs --requantize"
            )
    return notes


def add_metadata(w: Any, a: dict[str, Any], moe: bool = False) -> None:
    """llama.cpp's qwen3 (qwen3moe) hyper-parameter keys from the arch (spec/vqf.md
    §arch-semantics)."""
    w.add_name("weightfile export")
    w.add_context_length(int(a["max_seq_len"]))
    w.add_embedding_length(int(a["dim"]))
    w.add_block_count(int(a["n_layers"]))
    w.add_feed_forward_length(int(a["ffn_dim"]))
    w.add_head_count(int(a["n_heads"]))
    w.add_head_count_kv(int(a["n_kv_heads"]))
    w.add_key_length(int(a["head_dim"]))
    w.add_value_length(int(a["head_dim"]))
    w.add_rope_freq_base(float(a["rope_theta"]))
    w.add_layer_norm_rms_eps(float(a["norm_eps"]))
    w.add_bos_token_id(int(a["bos_id"]))
    w.add_eos_token_id(int(a["eos_id"]))
    if moe:  # a version-3 file: softmax router, top-k renormalised (llama.cpp's qwen3moe too)
        w.add_expert_count(int(a["n_experts"]))
        w.add_expert_used_count(int(a["top_k"]))
        w.add_expert_feed_forward_length(int(a["moe_ffn"]))


@dataclass(frozen=True)
class Job:
    """One GGUF tensor: its info for the header, and how to make its bytes when written."""

    name: str
    shape: tuple[int, ...]  # numpy shape: values, or [rows, bytes per row] of blocks
    dtype: Any  # numpy dtype of `make()`'s array
    raw: Any  # GGMLQuantizationType of blocks, None for plain values
    make: Callable[[], Banded]
    region: tuple[int, int]  # the VQF file bytes it reads, released once it is written

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


class Banded:
    """One tensor's bytes as bands made one at a time: what `GGUFWriter.write_tensor_data` takes
    of an array (`nbytes`, `tofile`), so a large tensor is never whole in memory. Each band's
    mapped VQF pages are released once it is written (spec/vqf.md §converter)."""

    def __init__(
        self, nbytes: int, bands: list[tuple[Callable[[], Any], tuple[int, int]]], vqf: Any
    ) -> None:
        self.nbytes, self.bands, self.vqf = nbytes, bands, vqf

    def tofile(self, fout: Any) -> None:
        written = 0
        for make, region in self.bands:
            band = memoryview(make()).cast("B")
            fout.write(band)
            written += len(band)
            del band
            self.vqf.release_pages(*region)
        if written != self.nbytes:
            raise InvalidError(
                "vqf.import.shape", f"a tensor gave {written} bytes, its info says {self.nbytes}"
            )


def add_tensors(
    w: Any,
    vqf: Any,
    a: dict[str, Any],
    flags: int,
    projection_set: str,
    backend: Backend,
    progress: Callable[[str, int], None] | None = None,
) -> None:
    """The llama.cpp qwen3 tensors, streamed (spec/vqf.md §converter): every tensor's info goes into
    the header first, then each tensor's bytes are made, written and dropped in turn, and the
    VQF pages it read are released, so memory holds one tensor, not the model."""
    jobs = tensor_jobs(vqf, a, flags, projection_set, backend)
    for j in jobs:
        w.add_tensor_info(j.name, j.shape, np.dtype(j.dtype), j.nbytes, raw_dtype=j.raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for j in jobs:
        w.write_tensor_data(j.make())
        vqf.release_pages(*j.region)
        if progress is not None:
            progress(j.name, len(jobs))


def tensor_jobs(
    vqf: Any, a: dict[str, Any], flags: int, projection_set: str, backend: Backend
) -> list[Job]:
    """The GGUF tensors of a dense Qwen3 VQF file in llama.cpp's order, none made yet."""
    import gguf

    d, nl, hd, V = int(a["dim"]), int(a["n_layers"]), int(a["head_dim"]), int(a["vocab_size"])
    qo, ko, ff = int(a["n_heads"]) * hd, int(a["n_kv_heads"]) * hd, int(a["ffn_dim"])
    Q = gguf.GGMLQuantizationType

    def values(entry: Any, dtype: Any, shape: tuple[int, ...], i: int = 0, n: int = 1) -> Job:
        # layer i of n equal slices, written a band of rows at a time from the map
        step = entry.bytes // n
        lo = entry.offset + i * step

        def make() -> Banded:
            per_row = step // shape[0]
            width = per_row // np.dtype(dtype).itemsize
            base = i * step
            return Banded(step, [
                (lambda a=a, b=b: vqf.payload(entry)[base + a * per_row : base + b * per_row],
                 (lo + a * per_row, lo + b * per_row))
                for a, b in row_bands(shape[0], width)
            ], vqf)  # fmt: skip

        return Job("", shape, dtype, None, make, (lo, lo + step))

    def named(name: str, job: Job) -> Job:
        return replace(job, name=name)

    emb = vqf.entry("token_embed")
    jobs = [
        named("token_embd.weight", values(emb, np.float16 if emb.qtype == QType.F16
                                          else np.float32, (V, d))),
        named("output_norm.weight", values(vqf.entry("final_norm"), np.float32, (d,))),
    ]  # fmt: skip
    for field, n in (("attn_norm", d), ("ffn_norm", d), ("q_norm", hd), ("k_norm", hd)):
        e = vqf.entry(field)
        for i in range(nl):
            jobs.append(named(f"blk.{i}.{GGUF_LAYER[field]}", values(e, np.float32, (n,), i, nl)))

    def blocks(name: str, e: Any, rows: int, cols: int, i: int = 0, n: int = 1) -> Job:
        if e.qtype not in (QType.Q4_0, QType.Q8_0):
            raise UnsupportedError(
                "vqf.import.source", f"{e.name} has qtype {e.qtype:#04x}: only quantized files "
                "export"
            )  # fmt: skip
        step = e.bytes // n
        lo = e.offset + i * step

        def make() -> Banded:
            per_row = step // rows

            def band(a: int, b: int) -> np.ndarray:
                part = vqf.payload(e)[i * step + a * per_row : i * step + b * per_row]
                return plain_blocks(e.qtype, flags, e.name, part, rows, cols, backend, (a, b))[0]

            bands = row_bands(rows, cols) if n == 1 else [(0, rows)]  # a layer is small
            return Banded(step, [
                (lambda a=a, b=b: band(a, b), (lo + a * per_row, lo + b * per_row))
                for a, b in bands
            ], vqf)  # fmt: skip

        kind = Q.Q4_0 if e.qtype == QType.Q4_0 else Q.Q8_0
        return Job(name, (rows, step // rows), np.uint8, kind, make, (lo, lo + step))

    shapes = {"q": (qo, d), "k": (ko, d), "v": (ko, d), "o": (d, qo),
              "gate": (ff, d), "up": (ff, d), "down": (d, ff)}  # fmt: skip
    moe = bool(flags & VQFFlag.MOE)
    for short, (rows, cols) in shapes.items():
        if moe and short in ("gate", "up", "down"):
            continue
        e = vqf.entry(f"{projection_set}_{short}")
        for i in range(nl):
            jobs.append(blocks(f"blk.{i}.{GGUF_LAYER[FIELDS[short]]}", e, rows, cols, i, nl))
    if moe:
        jobs += expert_jobs(vqf, a, flags, projection_set, backend, values)
    if f"{projection_set}_lm" in {e.name for e in vqf.entries}:
        jobs.append(blocks("output.weight", vqf.entry(f"{projection_set}_lm"), V, d))
    return jobs


def expert_jobs(
    vqf: Any,
    a: dict[str, Any],
    flags: int,
    projection_set: str,
    backend: Backend,
    values: Callable[..., Job],
) -> list[Job]:
    """llama.cpp's qwen3moe tensors of a version-3 file, blocks copied (spec/vqf.md §text-tensors
    MoE stacking): per layer the router rows (F32 [E, d]), gate and up as [E, Ie, d] (expert e owns
    rows [e·Ie, (e+1)·Ie) of the layer's matrix: the same blocks in the same order once
    untiled), and down as [E, d, Ie] (expert e owns columns [e·Ie, (e+1)·Ie) of every row: whole
    blocks, regrouped expert by expert)."""
    import gguf

    d, nl = int(a["dim"]), int(a["n_layers"])
    ne, ie = int(a["n_experts"]), int(a["moe_ffn"])
    Q = gguf.GGMLQuantizationType
    jobs = []
    router = vqf.entry("moe_router")
    for i in range(nl):
        job = values(router, np.float32, (ne, d), i, nl)
        jobs.append(replace(job, name=f"blk.{i}.ffn_gate_inp.weight"))

    def experts(role: str, i: int) -> Job:
        e = vqf.entry(f"{projection_set}_{role}")
        rows, cols = (ne * ie, d) if role != "down" else (d, ne * ie)
        step = e.bytes // nl
        lo = e.offset + i * step

        def make() -> np.ndarray:
            part = vqf.payload(e)[i * step : (i + 1) * step]
            plain = plain_blocks(e.qtype, flags, e.name, part, rows, cols, backend)[0]
            if role != "down":
                return plain.reshape(ne, ie, -1)
            return np.ascontiguousarray(plain.reshape(d, ne, -1).transpose(1, 0, 2))

        kind = Q.Q4_0 if e.qtype == QType.Q4_0 else Q.Q8_0
        per_row = step // rows
        shape = (ne, ie, per_row) if role != "down" else (ne, d, per_row // ne)
        return Job(f"blk.{i}.ffn_{role}_exps.weight", shape, np.uint8, kind, make, (lo, lo + step))

    for role in ("gate", "up", "down"):
        jobs += [experts(role, i) for i in range(nl)]
    return jobs


def plain_blocks(
    qtype: int,
    flags: int,
    name: str,
    payload: Any,
    rows: int,
    cols: int,
    backend: Backend,
    band: tuple[int, int] | None = None,
) -> tuple[np.ndarray, Any]:
    """One matrix (or the rows `band` of it, whose bytes `payload` is) as GGUF Q8_0 / Q4_0 blocks
    [rows, bytes per row], untiled where it was tiled; the layout is the whole matrix's."""
    import gguf

    if qtype not in (QType.Q4_0, QType.Q8_0):
        raise UnsupportedError(
            "vqf.import.source", f"{name} has qtype {qtype:#04x}: only quantized files export"
        )
    layout = codec_for(qtype, flags, name, shape=(rows, cols))
    n = rows if band is None else band[1] - band[0]
    raw = bytes(payload)
    if CODECS[layout].tiling is not None:
        raw = backend.vqf_codecs.codec(layout).untile(raw, n, cols)
    Q = gguf.GGMLQuantizationType
    kind = Q.Q4_0 if qtype == QType.Q4_0 else Q.Q8_0
    return np.frombuffer(raw, np.uint8).reshape(n, -1), kind
