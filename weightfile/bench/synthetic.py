"""Synthetic VQF models of real geometry, generated on demand into a cache folder (issue 6).

A benchmark needs the shapes and byte counts of a real model, not its values: each synthetic model
has a real model's geometry (spec/vqf.md §text-tensors inventory, spec/vqf.md §worked-example worked
example) and seeded random weights. The file is the one the engine's converter writes in its wmode
(q4 or q8, spec/vqf.md §weight-modes): tiled (Q8_8X8 | Q4_4X4), F16 token embedding (EMB_F16,
truncating, spec/vqf.md §f16) and the lm_head written from the tied float32 embedding (spec/vqf.md
§text-tensors table). Quantization uses the fast codecs, whose bytes equal the reference's
(tests/differential).

Generation streams: every payload is a generator of per-layer (or per-ROW_CHUNK-row) chunks, each
drawn from its own seeded generator, so RAM stays at one chunk however big the model is, and
the lm_head chunks regenerate exactly the embedding rows they are tied to. Files are cached as
`<cache>/<name>-g<GENERATOR_VERSION>-<hash>.vqf`, reused when present; building one removes
the same model's files of other generator versions.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.bench import synthetic_ninfer
from weightfile.bench.progress import Progress
from weightfile.bench.synthetic_spec import (
    MoeSyntheticSpec,
    NinferSyntheticSpec,
    SyntheticSpec,
    VLSyntheticSpec,
)
from weightfile.families import presets
from weightfile.fast.backend import FAST
from weightfile.ref.user_cache import cache_root
from weightfile.ref.vqf.encode import encode
from weightfile.ref.vqf.write import Payload, TensorSource, plan
from weightfile.spec.errors import DestinationExistsError, NotFoundError
from weightfile.spec.vqf.inventory import ORDER_INDEX, Geometry, TensorKind, inventory
from weightfile.spec.vqf.placement import file_size_for
from weightfile.spec.vqf.qtypes import QType

GENERATOR_VERSION = 3  # bump when the bytes a spec produces change
#: Rows per embedding / lm_head chunk: a multiple of every row group (8), so chunked tiling equals
#: whole-matrix tiling (spec/vqf.md §repack-gates); small enough that a chunk and the encoder's
#: temporaries stay about one layer's largest matrix (the generator's peak RAM is one chunk's
#: worth).
ROW_CHUNK = 4096
EMBED_STD = 0.5  # an RMSNorm follows, so the embedding scale only shapes the F16 rounding
PROJ_STD = 0.02


#: Every family's presets (weightfile/families/<family>/presets.py), by name, in row order:
#: Qwen3-0.6B (the issue's numbers), Qwen3-VL-2B's text tower, Qwen3-VL-2B with its tower,
#: Qwen3-30B-A3B (issue 17), the `.ninfer` Qwen3.5-0.8B, Qwen3.6-27B and Qwen3.6-35B-A3B (issue 28,
#: weightfile/bench/synthetic_ninfer.py) and the `tiny-*` ones for tests.
AnySpec = SyntheticSpec | NinferSyntheticSpec
SPECS: dict[str, AnySpec] = {s.name: s for s in presets()}


def spec_named(name: str) -> AnySpec:
    """The spec called `name`, or NotFoundError listing the known names. `<name>-L<n>` is that
    model with its first n layers only (n ≥ 1 and at most its layer count): the same
    per-layer weights, since each layer's streams are seeded by its index."""
    base, sep, count = name.rpartition("-L")
    if sep and base in SPECS and count.isdigit() and 1 <= int(count) <= SPECS[base].layers:
        return replace(SPECS[base], name=name, layers=int(count))
    if name not in SPECS:
        known = ", ".join(SPECS)
        raise NotFoundError("bench.synthetic.name", f"no synthetic model {name!r} ({known})")
    return SPECS[name]


def arch_of(s: SyntheticSpec) -> dict[str, int | float]:
    """The spec/vqf.md §arch-semantics text-core arch fields (plain RoPE: text tokens see MRoPE as
    RoPE, spec/models.md §qwen3-vl)."""
    return {
        "dim": s.hidden, "n_layers": s.layers, "n_heads": s.heads, "n_kv_heads": s.kv_heads,
        "head_dim": s.head_dim, "ffn_dim": s.intermediate, "vocab_size": s.vocab,
        "max_seq_len": s.max_seq_len, "rope_theta": s.rope_theta, "norm_eps": s.norm_eps,
        "bos_id": 0, "eos_id": 1, "has_q_norm": 1, "head_dim_full": s.head_dim,
    } | _moe_arch(s) | _vision_arch(s)  # fmt: skip


def _moe_arch(s: SyntheticSpec) -> dict[str, int]:
    """The spec/vqf.md §arch-semantics MoE tail of a version-3 file (empty for a dense spec)."""
    if not isinstance(s, MoeSyntheticSpec):
        return {}
    return {"n_experts": s.experts, "moe_ffn": s.moe_ffn, "top_k": s.top_k}


def _vision_arch(s: SyntheticSpec) -> dict[str, Any]:
    """The spec/vqf.md §arch-semantics vision fields and special ids of a VISION file (empty for
    text-only)."""
    if not isinstance(s, VLSyntheticSpec):
        return {}
    ds, sec = list(s.deepstack), list(s.mrope_section)
    start, end, image, video = s.special_ids
    return {
        "has_mrope": 1, "mrope_n_sec": len(sec), "mrope_sections": (sec + [0] * 4)[:4],
        "has_vision": 1, "vis_depth": s.vis_depth, "vis_hidden": s.vis_hidden,
        "vis_heads": s.vis_heads, "vis_ffn": s.vis_ffn, "vis_patch": 16, "vis_temporal": 2,
        "vis_merge": 2, "vis_out_dim": s.hidden, "vis_in_chan": 3, "vis_max_pos": s.vis_max_pos,
        "vis_ds_count": len(ds), "vis_ds_idx": (ds + [0] * 4)[:4], "vision_start_id": start,
        "vision_end_id": end, "image_token_id": image, "video_token_id": video,
    }  # fmt: skip


def _rng(s: SyntheticSpec, *key: int) -> np.random.Generator:
    return np.random.default_rng([s.seed, *key])


def _normal(s: SyntheticSpec, shape: tuple[int, int], std: float, *key: int) -> np.ndarray:
    return (_rng(s, *key).standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(
        np.float32
    )


def _embed_chunk(s: SyntheticSpec, start: int) -> np.ndarray:
    """Rows [start, start + ROW_CHUNK) of the float32 embedding (also the tied lm_head)."""
    rows = min(ROW_CHUNK, s.vocab - start)
    return _normal(s, (rows, s.hidden), EMBED_STD, 0, start)


def _embed_payload(s: SyntheticSpec) -> Iterator[bytes]:
    f16 = FAST.vqf_codecs.codec("f16")
    for start in range(0, s.vocab, ROW_CHUNK):
        chunk = _embed_chunk(s, start)
        yield f16.encode(chunk, chunk.shape[0], s.hidden, mode="trunc_ftz")


def _lm_payload(s: SyntheticSpec, name: str) -> Iterator[bytes]:
    for start in range(0, s.vocab, ROW_CHUNK):
        yield encode(s.qtype_code, s.flags, name, _embed_chunk(s, start), FAST)


def _projection_payload(s: SyntheticSpec, kind: TensorKind, out: int, inp: int) -> Iterator[bytes]:
    # each matrix its own seed stream. An MoE layer's stacked gate/up [E·Ie, d] is encoded whole
    # (rows are encoded independently) and its down [d, E·Ie] too: no 32-column block or tile
    # crosses an expert band, so the whole matrix's words are the experts' bands joined
    # (spec/vqf.md §text-tensors, spec/numerics.md §quantized-matmul)
    index = ORDER_INDEX[kind.name]
    for layer in range(s.layers):
        m = _normal(s, (out, inp), PROJ_STD, 1, index, layer)
        yield encode(s.qtype_code, s.flags, kind.name, m, FAST)


def _vision_q8_payload(s: SyntheticSpec, name: str, g: Geometry) -> Iterator[bytes]:
    """One seeded block matrix per vision block, Q8_0 legacy whatever the text qtype; fc2's rows
    are zero-padded from vf to vfp columns before quantising (spec/vqf.md §vision-tensors)."""
    out, inp = {"v_q8_qkv": (3 * g.vh, g.vh), "v_q8_proj": (g.vh, g.vh),
                "v_q8_fc1": (g.vf, g.vh), "v_q8_fc2": (g.vh, g.vf)}[name]  # fmt: skip
    index = ORDER_INDEX[name]
    for block in range(g.vd):
        m = _normal(s, (out, inp), PROJ_STD, 2, index, block)
        if inp < g.vfp and name == "v_q8_fc2":
            m = np.concatenate([m, np.zeros((out, g.vfp - inp), np.float32)], axis=1)
        yield encode(QType.Q8_0, 0, name, m, FAST)


#: The vision LayerNorm weights (ones, like the text norms); every other F32 vision tensor is
#: seeded (biases, patch and position embeddings, the merger matrices).
VISION_NORM_WEIGHTS = frozenset({"v_norm1_w", "v_norm2_w", "v_merger_nw", "v_ds_nw"})


def _vision_f32_payload(s: SyntheticSpec, kind: TensorKind, g: Geometry) -> Payload:
    """One chunk per directory row (a block's vector, or one merger matrix), each seeded."""
    rows, cols = kind.directory_shape(g)
    if kind.name in VISION_NORM_WEIGHTS:
        return np.ones(rows * cols, np.float32).tobytes()
    index = ORDER_INDEX[kind.name]
    return (_normal(s, (1, cols), PROJ_STD, 2, index, r).tobytes() for r in range(rows))


def _payload(s: SyntheticSpec, kind: TensorKind, g: Geometry) -> Payload:
    """Ones for norms, the seeded embedding (and its tied lm_head), seeded projections, the
    seeded vision tower."""
    if kind.family == "vision_q8":
        return _vision_q8_payload(s, kind.name, g)
    if kind.family == "vision_f32":
        return _vision_f32_payload(s, kind, g)
    count, out, inp = kind.physical(g)
    if kind.family == "norm":
        return np.ones(count * out * inp, np.float32).tobytes()
    if kind.family == "embed":
        return _embed_payload(s)
    if kind.family == "router":  # F32 [nl·E, d], one seeded block per layer
        index = ORDER_INDEX[kind.name]
        return (_normal(s, (out, inp), PROJ_STD, 1, index, i).tobytes() for i in range(count))
    if count == 1:  # {q4,q8}_lm, the only unstacked matrix of the text inventory
        # (spec/vqf.md §text-tensors)
        return _lm_payload(s, kind.name)
    return _projection_payload(s, kind, out, inp)


def tensor_sources(s: SyntheticSpec) -> list[TensorSource]:
    """The spec/vqf.md §text-tensors inventory of wmode q4 / q8 in spec/vqf.md §directory-order
    order; payloads are lazy (nothing drawn yet)."""
    arch = arch_of(s)
    g = Geometry.from_arch(arch)
    out = []
    for kind in inventory(arch, s.qtype[:2]):
        qtype = kind.qtypes[0]  # F16 embedding (EMB_F16), F32 norms, the family's quant type
        rows, cols = kind.directory_shape(g)
        out.append(TensorSource(kind.name, qtype, rows, cols, _payload(s, kind, g)))
    return out


def planned_layout(s: AnySpec) -> tuple[list[tuple[str, int, int]], int]:
    """(name, offset, bytes) of every tensor and the file size, without drawing a weight
    (spec/vqf.md §placement; a `.ninfer` spec: its objects and payload size)."""
    if isinstance(s, NinferSyntheticSpec):
        return synthetic_ninfer.planned_layout(s)
    sources = tensor_sources(s)
    _, offsets, _, file_len = plan(sources)
    rows = [(t.name, off, t.size) for t, off in zip(sources, offsets, strict=True)]
    return rows, file_size_for(file_len, encrypted=False)


def cache_key(s: SyntheticSpec) -> str:
    blob = json.dumps({"spec": asdict(s), "generator": GENERATOR_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def default_cache_dir() -> Path:
    """synthetic/ of the one cache folder (ref/user_cache.py)."""
    return cache_root() / "synthetic"


def synthetic_path(s: SyntheticSpec, cache_dir: Path) -> Path:
    return cache_dir / f"{s.name}-g{GENERATOR_VERSION}-{cache_key(s)}.vqf"


def with_progress(sources: list[TensorSource], bar: Progress) -> list[TensorSource]:
    """The same sources, each payload chunk counted on `bar` (in bytes) as the writer takes it."""

    def counted(data: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in data:
            yield chunk
            bar.tick(len(chunk))

    if bar.bar is None:  # no terminal, or --quiet: the sources as they are
        return sources
    out = []
    for t in sources:
        if t.data is None or isinstance(t.data, (bytes, bytearray, memoryview)):
            out.append(t)
            bar.tick(t.size)  # written in one piece: counted as it is queued
        else:
            out.append(replace(t, data=counted(t.data)))
    return out


def synthetic_model(
    name: str, cache_dir: str | os.PathLike[str] | None = None, *, progress: bool = False
) -> tuple[Path, bool]:
    """The cached synthetic model `name` (written on first use) and whether this call wrote it.
    `progress`: a bar of payload bytes written, on stderr when it is a terminal (bench/progress.py,
    issue 15)."""
    from weightfile.fast.vqf.write import write_vqf  # the C FNV: a GB file hashes in seconds

    s = spec_named(name)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if isinstance(s, NinferSyntheticSpec):  # a Qwen3.5 / 3.6 `.ninfer` model (issue 28)
        return synthetic_ninfer.synthetic_ninfer(s, folder, progress=progress)
    path = synthetic_path(s, folder)
    if path.is_file():
        return path, False
    folder.mkdir(parents=True, exist_ok=True)
    sources = tensor_sources(s)
    bar = Progress(sum(t.size for t in sources), progress, unit="B")
    bar.phase(f"generating {s.name}")
    try:  # write_vqf publishes atomically: a failed or interrupted run leaves nothing here
        write_vqf(path, arch=arch_of(s), tensors=with_progress(sources, bar), flags=s.flags)
    except DestinationExistsError:  # a concurrent run published it first: same bytes
        return path, False
    finally:
        bar.close()
    remove_stale(s, folder, keep=path)
    return path, True


def remove_stale(s: SyntheticSpec, folder: Path, keep: Path) -> None:
    """Delete this model's files from other generator versions: a board's disk is small.

    A process still mapping one keeps its pages (unlink only drops the name).
    """
    for old in folder.glob(f"{s.name}-g*-*.vqf"):
        if old != keep:
            old.unlink(missing_ok=True)
