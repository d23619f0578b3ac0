"""A Hugging Face Qwen3 checkpoint folder -> a VQF file (spec/vqf.md §text-tensors,
§arch-semantics).

The arch comes from config.json (spec/vqf.md §arch-semantics); the tensors follow the spec/vqf.md
§text-tensors inventory, every per-layer matrix stacked layer after layer, each layer encoded by the
codec that the flags and the matrix shape select (`weightfile.ref.vqf.encode`), so what the importer
writes is exactly what the binder reads back. Tensors are read from the checkpoint one at a time
(`checkpoint.Checkpoint`).

qtype picks the projection set: q8_0 -> q8_* (wmode q8), q4_0 -> q4_* (wmode q4). f32 and f16 are
*reference-precision* files for diffing against transformers: the projections are stored under the
q8_* names with qtype F32 / F16, which the engine does not read and the strict validator reports
(vqf.directory.qtype); ref/qwen3/bind_vqf.py binds them as float32 matrices. The token embedding is
F16 (EMB_F16, truncating like the engine writer, spec/vqf.md §f16) except at f32. lm_head is always
written: the checkpoint's lm_head, or the tied embedding (spec/vqf.md §text-tensors table).

The checkpoint's tokenizer.json is copied to `<out>.tokenizer.json` and its chat template (if
any) to `<out>.chat_template.jinja`: a VQF carries neither, and the frontend looks for both
there (the paths are the frontend's own, so the two cannot disagree).

With a passphrase and/or a private key the published file is the protected one
(spec/vqf.md §protected): the plaintext file is written into a private (mode 0700) folder beside
`out`, encrypted and/or signed from there by `protect_vqf`, and the folder is removed whatever
happens, so `out` only ever holds the finished protected file and no plaintext copy is left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.convert.checkpoint import Checkpoint, CheckpointRules, chat_template, read_json
from weightfile.convert.vqf_plan import VQFPlan, plan_flags
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LM_HEAD, layer_tensor
from weightfile.fast.vqf.write import write_vqf  # the C FNV where it builds (issue 14)
from weightfile.frontend.chat import chat_template_path
from weightfile.frontend.tokenizer import sidecar_path
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.qwen3.config import Qwen3Config
from weightfile.ref.staging import check_output, staged_folder, unnamed_file, write_output
from weightfile.ref.vqf.encode import encode
from weightfile.ref.vqf.write import TensorSource, iter_payload, vqf_emitter
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for, payload_size
from weightfile.spec.errors import (
    InvalidError,
    NotFoundError,
    UnsupportedError,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import KINDS, Geometry
from weightfile.spec.vqf.qtypes import QType

#: The rule ids the checkpoint reader raises for this importer (spec/vqf/rules.py).
RULES = CheckpointRules(
    missing_file="vqf.import.missing_file",
    config="vqf.import.config",
    safetensors="vqf.import.safetensors",
    dtype="vqf.import.dtype",
    duplicate="vqf.import.duplicate",
    missing_tensor="vqf.import.missing_tensor",
)
QTYPES = {"f32": QType.F32, "f16": QType.F16, "q8_0": QType.Q8_0, "q4_0": QType.Q4_0}
#: `import --qtype` as a weight mode (spec/vqf.md §converter): q8_0 is wmode q8, q4_0 wmode q4.
WMODE_OF_QTYPE = {QType.F32: "f32", QType.F16: "f16", QType.Q8_0: "q8", QType.Q4_0: "q4"}
MAX_SEQ_LEN = 8192  # converters clamp max_seq_len (spec/vqf.md §arch-semantics)
LAYOUTS = ("legacy", "tiled")  # the layouts of the family importers (Qwen3-MoE, Qwen3-VL)

#: The VQF per-layer stacked name (spec/vqf.md §text-tensors) of each LayerWeights projection,
#: without its projection-set prefix.
VQF_PROJECTIONS: dict[str, str] = {
    "q_proj": "q",
    "k_proj": "k",
    "v_proj": "v",
    "o_proj": "o",
    "gate_proj": "gate",
    "up_proj": "up",
    "down_proj": "down",
}
#: ... and of each per-layer norm vector.
VQF_NORMS: dict[str, str] = {
    "attn_norm": "attn_norm",
    "ffn_norm": "ffn_norm",
    "q_norm": "q_norm",
    "k_norm": "k_norm",
}

# `tokenizer_sidecar` is the importer's name for the frontend's sidecar path.
tokenizer_sidecar = sidecar_path


def first_id(value: Any) -> int:
    """A token id from config.json; a list gives its first (the engine's parse gives 0)."""
    if isinstance(value, list):
        value = value[0] if value else 0
    return int(value) if isinstance(value, int) else 0


def arch_sizes(c: Qwen3Config) -> dict[str, int]:
    """The arch fields that size the tensors (spec/vqf.md §arch-semantics)."""
    return {
        "dim": c.hidden_size,
        "n_layers": c.num_hidden_layers,
        "n_heads": c.num_attention_heads,
        "n_kv_heads": c.num_key_value_heads,
        "head_dim": c.head_dim,
        "ffn_dim": c.intermediate_size,
        "vocab_size": c.vocab_size,
    }


def arch_from_config(cfg: Mapping[str, Any], c: Qwen3Config) -> dict[str, Any]:
    """spec/vqf.md §arch-semantics: the text-core arch fields of a dense Qwen3 (has_q_norm = 1,
    head_dim_full = head_dim)."""
    return {
        **arch_sizes(c),
        "max_seq_len": min(int(cfg.get("max_position_embeddings") or MAX_SEQ_LEN), MAX_SEQ_LEN),
        "rope_theta": c.rope_theta,
        "norm_eps": c.rms_norm_eps,
        "bos_id": first_id(cfg.get("bos_token_id")),
        "eos_id": first_id(cfg.get("eos_token_id")),
        "has_q_norm": 1,
        "head_dim_full": c.head_dim,
    }


def require(sd: Mapping[str, np.ndarray], name: str, shape: tuple[int, ...]) -> np.ndarray:
    """The tensor `name` with `shape`, or a typed error naming it."""
    if name not in sd:
        raise NotFoundError(RULES.missing_tensor, f"{name} is missing", path=name)
    t = sd[name]
    if tuple(t.shape) != shape:
        raise InvalidError("vqf.import.shape", f"{name}: shape {t.shape}, want {shape}", path=name)
    return np.ascontiguousarray(t, dtype=np.float32)


def build_tensors(
    sd: Mapping[str, np.ndarray],
    c: Qwen3Config,
    qtype: QType,
    flags: int,
    backend: Backend = REFERENCE,
) -> list[TensorSource]:
    """The spec/vqf.md §text-tensors inventory of wmode q8 (or q4) from a transformers-named state
    dict, every payload encoded now (the demo, the conformance models and the test strategies)."""
    p = VQFPlan(wmode=WMODE_OF_QTYPE[qtype], layout="legacy")
    return [
        TensorSource(t.name, t.qtype, t.rows, t.cols, b"".join(t.data))  # type: ignore[arg-type]
        for t in plan_tensors(sd, c, p, flags, backend)
    ]


def require_tileable(c: Qwen3Config, qtype: QType, layout: str) -> None:
    """Tiled files need every matrix to be whole row groups (8 rows Q8, 4 rows Q4;
    spec/vqf.md §repack-gates). The Qwen3-VL importer refuses such a model; `convert`'s dense plan
    instead leaves the tiling off per the engine's repack gates (weightfile/convert/vqf_plan.py)."""
    group = {QType.Q8_0: 8, QType.Q4_0: 4}.get(qtype)
    if layout != "tiled" or group is None:
        return
    rows = {"vocab": c.vocab_size, "q": c.q_dim, "kv": c.kv_dim, "hidden": c.hidden_size,
            "intermediate": c.intermediate_size}  # fmt: skip
    for what, n in rows.items():
        if n % group:
            raise UnsupportedError(
                "vqf.import.geometry",
                f"{what} size {n} is not a multiple of {group}: use --layout legacy (§7.5)",
                path="layout",
            )


def projection_set_qtype(projection_set: str, wmode: str) -> QType:
    """The directory qtype of a projection set in a weight mode (spec/vqf.md §text-tensors,
    §weight-modes)."""
    if projection_set == "x8":
        return QType.Q4_8X8L
    if projection_set == "q4":
        return QType.Q4_0
    return {"f32": QType.F32, "f16": QType.F16}.get(wmode, QType.Q8_0)


def plan_tensors(
    sd: Mapping[str, np.ndarray],
    c: Qwen3Config,
    p: VQFPlan,
    flags: int,
    backend: Backend = REFERENCE,
    blocks: BlockSource | None = None,
) -> list[TensorSource]:
    """The spec/vqf.md §directory-order directory of plan `p`, each payload a generator that reads
    and encodes one layer's matrix when the writer asks for it (spec/vqf.md §converter): only one
    float32 matrix is in memory at a time, so `sd` (a `Checkpoint`) must stay open while writing."""
    d, hd, nl, V = c.hidden_size, c.head_dim, c.num_hidden_layers, c.vocab_size
    mode = None if p.wmode in ("f32", "f16") else p.quantizer
    g = directory_geometry(c)

    def embedding() -> Iterator[bytes]:
        f16 = backend.vqf_codecs.codec("f16")
        for chunk in row_chunks(sd, EMBED, (V, d)):
            if p.embedding == "f32":
                yield chunk.tobytes()
            else:
                yield f16.encode(chunk, len(chunk), d, mode="trunc_ftz")

    def final_norm() -> Iterator[bytes]:
        yield require(sd, FINAL_NORM, (d,)).tobytes()

    def norms(field: str, n: int) -> Iterator[bytes]:
        for i in range(nl):
            yield require(sd, layer_tensor(i, field), (n,)).tobytes()

    def matrix(name: str, qtype: QType, source: str, shape: tuple[int, int]) -> bytes:
        copied = copy_blocks(blocks, qtype, flags, name, source, shape, backend)
        if copied is not None:
            return copied
        return encode(qtype, flags, name, require(sd, source, shape), backend, mode)

    def layers(name: str, qtype: QType, field: str, shape: tuple[int, int]) -> Iterator[bytes]:
        for i in range(nl):
            yield matrix(name, qtype, layer_tensor(i, field), shape)

    def x8_layers(q4_name: str, field: str, shape: tuple[int, int]) -> Iterator[bytes]:
        # the engine shuffles the bytes q4_* holds, 4x4 when Q4_4X4 (spec/vqf.md §decisions item 14)
        shuffle = backend.vqf_codecs.codec("q4_0_8x8l")
        for q4 in layers(q4_name, QType.Q4_0, field, shape):
            yield shuffle.tile(q4, *shape)

    def lm_head(name: str, qtype: QType) -> Iterator[bytes]:
        # the largest matrix, so read, encode and write it a band of rows at a time: the layout
        # is chosen for the whole [V, d], and every layout is row-local in whole row groups
        source = LM_HEAD if LM_HEAD in sd else EMBED
        layout = layout_of(qtype, flags, name, (V, d))
        codec = backend.vqf_codecs.codec(layout)
        for start, stop in row_bands(V, d):
            copied = copy_blocks(blocks, qtype, flags, name, source, (V, d), backend, (start, stop))
            if copied is not None:
                yield copied
                continue
            chunk = np.ascontiguousarray(rows_of(sd, source, (V, d), start, stop))
            if mode is None or qtype in (QType.F32, QType.F16):
                yield codec.encode(chunk, stop - start, d)
            else:
                yield codec.encode(chunk, stop - start, d, mode=mode)

    emb_qtype = QType.F32 if p.embedding == "f32" else QType.F16
    out = [
        TensorSource("token_embed", emb_qtype, V, d, embedding()),
        TensorSource("final_norm", QType.F32, d, 1, final_norm()),
    ]
    for field, vqf_name in VQF_NORMS.items():
        n = hd if field in ("q_norm", "k_norm") else d
        out.append(TensorSource(vqf_name, QType.F32, nl * n, 1, norms(field, n)))
    shapes = {
        "q_proj": (c.q_dim, d), "k_proj": (c.kv_dim, d), "v_proj": (c.kv_dim, d),
        "o_proj": (d, c.q_dim), "gate_proj": (c.intermediate_size, d),
        "up_proj": (c.intermediate_size, d), "down_proj": (d, c.intermediate_size),
    }  # fmt: skip
    projection_sets = list(p.projection_sets) + (["x8"] if flags & VQFFlag.X8 else [])
    for projection_set in projection_sets:
        qtype = projection_set_qtype(projection_set, p.wmode)
        for field, short in VQF_PROJECTIONS.items():
            name = f"{projection_set}_{short}"
            rows, cols = shapes[field]
            if projection_set == "x8":
                data = x8_layers(f"q4_{short}", field, (rows, cols))
            else:
                data = layers(name, qtype, field, (rows, cols))
            # the directory shape of spec/vqf.md §text-tensors, as the engine's writer records
            # it: q/k/v/o nl·in × out, gate/up/down nl·out × in (spec/vqf.md §geometry)
            out.append(TensorSource(name, qtype, *KINDS[name].directory_shape(g), data))
        if projection_set != "x8":
            lm = f"{projection_set}_lm"
            out.append(TensorSource(lm, qtype, V, d, lm_head(lm, qtype)))
    return out


def directory_geometry(c: Qwen3Config) -> Geometry:
    """The spec/vqf.md §inventory symbols of a text model, for its directory shapes."""
    return Geometry.from_arch(arch_sizes(c))


#: (source tensor name, untiled codec name, first row, end row) -> the raw blocks of those rows
#: when it holds that codec's blocks, else None.
BlockSource = Callable[[str, str, int, int], "bytes | None"]


def copy_blocks(
    blocks: BlockSource | None,
    qtype: QType,
    flags: int,
    name: str,
    source: str,
    shape: tuple[int, int],
    backend: Backend,
    band: tuple[int, int] | None = None,
) -> bytes | None:
    """The entry's payload (or the rows `band` of it) from ready untiled blocks, tiled as its
    layout asks (a permutation of the same blocks, spec/vqf.md §q8-tiled, §q4-0); None when there
    are none of that codec."""
    if blocks is None or qtype in (QType.F32, QType.F16):
        return None
    layout = codec_for(qtype, flags, name, shape=shape)
    start, stop = (0, shape[0]) if band is None else band
    raw = blocks(source, CODECS[layout].base, start, stop)
    if raw is None:
        return None
    if len(raw) != payload_size(layout, stop - start, shape[1]):
        raise InvalidError("vqf.import.shape", f"{source}: {len(raw)} bytes of blocks", path=source)
    return (
        raw
        if layout == CODECS[layout].base
        else backend.vqf_codecs.codec(layout).tile(raw, stop - start, shape[1])
    )


#: Rows of a band of the [V, d] tensors (embedding, lm_head) are a multiple of this: every
#: tiled layout's row group (4 or 8, spec/vqf.md §q8-tiled, §q4-0) divides it.
BAND_ROW_MULTIPLE = 64
#: About how many float32 bytes one band holds (the peak it adds, spec/vqf.md §converter).
BAND_BYTES = 16 << 20


def row_bands(rows: int, cols: int, band_bytes: int | None = None) -> list[tuple[int, int]]:
    """[start, stop) row bands covering `rows`, each a multiple of BAND_ROW_MULTIPLE rows (the
    last one the remainder) and about `band_bytes` of float32."""
    per = (BAND_BYTES if band_bytes is None else band_bytes) // (4 * max(cols, 1))
    step = max(BAND_ROW_MULTIPLE, per // BAND_ROW_MULTIPLE * BAND_ROW_MULTIPLE)
    return [(a, min(a + step, rows)) for a in range(0, rows, step)]


def rows_of(
    sd: Mapping[str, np.ndarray], name: str, shape: tuple[int, int], start: int, stop: int
) -> np.ndarray:
    """Rows [start, stop) of `name` as float32, read alone where the source can (a checkpoint,
    a GGUF file: `rows(name, start, stop)`), else sliced from the held array."""
    if not hasattr(sd, "rows"):
        return require(sd, name, shape)[start:stop]
    if name not in sd:
        raise NotFoundError(RULES.missing_tensor, f"{name} is missing", path=name)
    have = tuple(sd.shape(name))  # type: ignore[attr-defined]
    if have != shape:
        raise InvalidError("vqf.import.shape", f"{name}: shape {have}, want {shape}", path=name)
    return sd.rows(name, start, stop)  # type: ignore[attr-defined]


def row_chunks(sd: Mapping[str, np.ndarray], name: str, shape: tuple[int, int]) -> Iterator[Any]:
    """`name` as float32 bands of rows (row_bands), read one at a time."""
    for start, stop in row_bands(*shape):
        yield np.ascontiguousarray(rows_of(sd, name, shape, start, stop), dtype=np.float32)


def layout_of(qtype: QType, flags: int, name: str, shape: tuple[int, int]) -> str:
    """The codec an entry of `qtype` takes (`encode`'s choice, spec/vqf.md §encodings,
    §text-tensors)."""
    if qtype == QType.F32:
        return "f32"
    if qtype == QType.F16:
        return "f16"
    return codec_for(qtype, flags, name, shape=shape)


def with_progress(tensors: list[TensorSource], progress: Any) -> list[TensorSource]:
    """The same sources; `progress(name, total)` is called as the writer finishes each one (one
    step per directory entry, `total` of them)."""

    def counted(t: TensorSource) -> Iterator[bytes]:
        yield from iter_payload(t.data)
        progress(t.name, len(tensors))

    return [TensorSource(t.name, t.qtype, t.rows, t.cols, counted(t)) for t in tensors]


def read_config(src: Path) -> tuple[dict[str, Any], Qwen3Config]:
    """config.json and its Qwen3Config, or the importer's typed errors (spec/vqf.md
    §arch-semantics)."""
    cfg = read_json(src, "config.json", RULES)
    return cfg, checked_config(cfg)


def checked_config(cfg: Mapping[str, Any]) -> Qwen3Config:
    """The Qwen3Config of a config.json dict, refusing what VQF cannot hold (spec/vqf.md
    §arch-semantics)."""
    try:
        c = config_from_hf(cfg)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidError(
            "vqf.import.config", f"not a Qwen3 config: {exc}", path="config.json"
        ) from None
    if c.hidden_size % 32 or c.intermediate_size % 32 or c.q_dim % 32:
        raise UnsupportedError(
            "vqf.import.geometry", "hidden, intermediate and q sizes must be multiples of 32"
        )
    return c


def import_checkpoint(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    qtype: str | None = None,
    layout: str = "tiled",
    overwrite: bool = False,
    backend: Backend = REFERENCE,
    passphrase: bytes | None = None,
    sign_key: bytes | None = None,
    plan: VQFPlan | None = None,
    progress: Any = None,
) -> Path:
    """Write the VQF of the checkpoint in `folder` to `out`; copy its tokenizer.json beside it.

    `plan` gives every option of spec/vqf.md §converter; without one, `qtype` (f32|f16|q8_0|q4_0,
    default q8_0) and `layout` make it, as `weightfile import` always did. `passphrase` publishes
    the file encrypted, `sign_key` (a 32-byte SM2 private key) signed, both encrypted then signed
    (spec/vqf.md §sm4-hmac, §sm2-signature); see the module docstring for the staging.
    `progress(name, total)` is told of every tensor written.
    """
    if plan is None:
        qtype = "q8_0" if qtype is None else qtype
        if qtype not in QTYPES:
            raise UnsupportedError("vqf.import.qtype", f"qtype {qtype!r}", path="qtype")
        plan = VQFPlan(wmode=WMODE_OF_QTYPE[QTYPES[qtype]], layout=layout)
    check_destinations(out, overwrite)  # before converting, not after
    src = Path(folder)
    cfg, _ = read_config(src)
    with Checkpoint(src, RULES) as checkpoint:
        checkpoint.require_float_dtypes()  # a tensor of another dtype refuses the checkpoint
        path = write_planned(
            checkpoint, cfg, out, plan=plan, overwrite=overwrite, backend=backend,
            passphrase=passphrase, sign_key=sign_key, progress=progress,
        )  # fmt: skip
    write_sidecars(src, path)
    return path


def check_destinations(out: str | os.PathLike[str], overwrite: bool) -> None:
    """OUT and its sidecars (tokenizer, chat template) by the output policy (ref/staging.py,
    spec/ninfer3.md §safe-files), before any conversion: a sidecar belongs to OUT and is
    replaced, but never through a symlink, nor into a FIFO, a device or a directory."""
    check_output(out, overwrite, "vqf.writer.destination")
    for side in (sidecar_path(Path(out)), chat_template_path(Path(out))):
        check_output(side, True)


def write_sidecars(src: Path, path: Path) -> None:
    """The checkpoint's tokenizer.json and chat template beside the VQF at `path` (the frontend's
    sidecar names), each published by the output policy (ref/staging.py `write_output`)."""
    tok = src / "tokenizer.json"
    if tok.is_file():
        write_output(sidecar_path(path), tok.read_bytes(), overwrite=True)
    template = chat_template(src)
    if template is not None:
        write_output(chat_template_path(path), template.encode("utf-8"), overwrite=True)


def write_planned(
    sd: Mapping[str, np.ndarray],
    cfg: Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    plan: VQFPlan,
    overwrite: bool,
    backend: Backend,
    passphrase: bytes | None,
    sign_key: bytes | None,
    progress: Any,
    blocks: BlockSource | None = None,
) -> Path:
    """Write the VQF of a config.json dict and its tensors `sd` by `plan` (spec/vqf.md §converter);
    `blocks` may supply ready untiled blocks (a GGUF source) instead of quantizing."""
    check_output(out, overwrite, "vqf.writer.destination")  # before converting, not after
    c = checked_config(cfg)
    flags = plan_flags(c, plan)
    arch = arch_from_config(cfg, c)
    tensors = plan_tensors(sd, c, plan, flags, backend, blocks)
    if progress is not None:
        tensors = with_progress(tensors, progress)
    if passphrase is None and sign_key is None:
        return write_vqf(out, arch=arch, tensors=tensors, flags=flags, overwrite=overwrite)
    return publish_protected(out, arch, tensors, flags, overwrite, passphrase, sign_key)


def publish_protected(
    out: str | os.PathLike[str],
    arch: dict[str, Any],
    tensors: list[TensorSource],
    flags: int,
    overwrite: bool,
    passphrase: bytes | None,
    sign_key: bytes | None,
) -> Path:
    """Write the plaintext file privately, publish only its protected form at `out`.

    The plaintext goes into a file no name points to (ref/staging.py `unnamed_file`, mode 0600,
    beside `out`): a kill at any moment takes it with the process, no sweep needed. Where that
    is not available, into a private (0700) folder beside `out` that the next write sweeps.
    """
    from weightfile.fast.backend import FAST
    from weightfile.fast.vqf.protect_write import protect_vqf

    out = check_output(out, overwrite, "vqf.writer.destination")
    with unnamed_file(out) as unnamed:
        if unnamed is not None:
            plain_file, plain_path = unnamed
            vqf_emitter(arch=arch, tensors=tensors, flags=flags, backend=FAST)(plain_file)
            plain_file.flush()
            return protect_vqf(
                plain_path, out, passphrase=passphrase, private_key=sign_key, overwrite=overwrite
            )
    with staged_folder(out) as private:
        plain = write_vqf(private / "plain.vqf", arch=arch, tensors=tensors, flags=flags)
        return protect_vqf(
            plain, out, passphrase=passphrase, private_key=sign_key, overwrite=overwrite
        )
