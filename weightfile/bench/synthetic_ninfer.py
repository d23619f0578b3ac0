"""Synthetic `.ninfer` Qwen3.5 / 3.6 models of real geometry, generated on demand (issue 28 item 3).

The file is the one `weightfile convert --format F` writes for a checkpoint of that geometry
(weightfile/families/qwen35/to_ninfer_plan.py: the same parents, fusion groups, bindings and
A16Only Uses; bf16 token embedding and direct parameters, fp32 `a_log` / `dt_bias`), with seeded
random weights: N(0, 0.02) matrices, a N(0, 0.5) embedding, zero-centred norms at 0 (weight 1), the
GDN norm at 1, `a_log` = log(U[1, 16]), `dt_bias` = 1. Every parent is drawn and encoded in row
chunks of at most CHUNK_ELEMENTS values, each from its own seeded generator, so RAM stays at one
chunk plus one encoded parent; a `row_split_k128_v1` parent's planes (spec/ninfer3.md §row-split)
are the chunks' planes joined, the padding after each plane zeros. The codecs are the fast ones,
whose bytes equal the reference's (tests/differential). Files are cached as
`<cache>/<name>-n<GENERATOR_VERSION>-<hash>.ninfer` (plus volumes when over the writer's limit).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.bench.progress import Progress
from weightfile.bench.synthetic_spec import NinferSyntheticSpec
from weightfile.families.qwen35.to_ninfer_plan import Parent, bindings, plan_parents, uses
from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec, plan_objects
from weightfile.ref.ninfer3.write import ArtifactWriter
from weightfile.spec.codecs.ninfer3.layouts import ROW_SPLIT_K128_V1, row_split_planes
from weightfile.spec.errors import DestinationExistsError

GENERATOR_VERSION = 1  # bump when the bytes a spec produces change
CHUNK_ELEMENTS = 1 << 24
EMBED_STD, PROJ_STD = 0.5, 0.02
#: The four text resources (spec/ninfer3.md §qwen35-names): placeholders, the bench never
#: tokenizes.
RESOURCES = {
    "tokenizer.json": b'{"model": {}}',
    "tokenizer_config.json": b"{}",
    "chat_template.jinja": b"{{ messages }}",
    "generation_config.json": b'{"eos_token_id": 1}',
}


def parent_chunk(s: NinferSyntheticSpec, index: int, p: Parent, row0: int, rows: int) -> np.ndarray:
    """Rows [row0, row0 + rows) of parent number `index`, float32, by the parent's kind."""
    name = p.members[0].name
    shape = (rows, *p.shape[1:])
    rng = np.random.default_rng([s.seed, index, row0])
    if name.endswith("gdn/a_log"):
        return np.log(rng.uniform(1.0, 16.0, shape)).astype(np.float32)
    if name.endswith(("gdn/dt_bias", "gdn/norm")):
        return np.ones(shape, np.float32)
    if name.endswith("norm"):  # zero-centred RMSNorm weights: 1 + 0
        return np.zeros(shape, np.float32)
    std = EMBED_STD if name.endswith("token_embedding") else PROJ_STD
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)


def row_chunks(p: Parent) -> Iterator[tuple[int, int]]:
    """(first row, rows) of each chunk of a parent (a vector is one chunk)."""
    n = p.shape[0]
    per_row = int(np.prod(p.shape[1:])) if len(p.shape) > 1 else n
    step = n if len(p.shape) == 1 else max(1, CHUNK_ELEMENTS // per_row)
    for row0 in range(0, n, step):
        yield row0, min(step, n - row0)


def parent_bytes(s: NinferSyntheticSpec, index: int, p: Parent) -> Iterator[bytes]:
    """The object's bytes in order: contiguous layouts chunk by chunk; a row-split object plane
    by plane (each plane the chunks' planes joined, then zeros up to the next plane)."""
    codec = get_codec(p.format, p.layout)
    if p.layout != ROW_SPLIT_K128_V1:
        for row0, rows in row_chunks(p):
            values = parent_chunk(s, index, p, row0, rows)
            yield codec.encode(values, values.shape)
        return
    planes: list[list[bytes]] = [[], [], []]
    for row0, rows in row_chunks(p):
        values = parent_chunk(s, index, p, row0, rows)
        data = codec.encode(values, values.shape)
        g = row_split_planes(p.format, values.shape)
        spans = ((0, g.base_bytes), (g.high_offset, g.high_bytes), (g.scale_offset, g.scale_bytes))
        for plane, (at, size) in zip(planes, spans, strict=True):
            plane.append(data[at : at + size])
    whole = row_split_planes(p.format, p.shape)
    ends = (whole.high_offset, whole.scale_offset, whole.bytes)
    at = 0
    for plane, end in zip(planes, ends, strict=True):
        for piece in plane:
            yield piece
            at += len(piece)
        yield bytes(end - at)
        at = end


def cache_key(s: NinferSyntheticSpec) -> str:
    blob = json.dumps({"spec": asdict(s), "generator": GENERATOR_VERSION}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def synthetic_path(s: NinferSyntheticSpec, cache_dir: Path) -> Path:
    return cache_dir / f"{s.name}-n{GENERATOR_VERSION}-{cache_key(s)}.ninfer"


def plan(s: NinferSyntheticSpec) -> tuple[dict[str, Any], list[Parent], list[Any]]:
    """(the closed text config, the parents, every object's descriptor spec)."""
    config = s.config_json
    parents = plan_parents(config, s.fmt)
    objects: list[Any] = [ResourceSpec(f"r.{r}", len(b)) for r, b in RESOURCES.items()]
    objects += [TensorSpec(p.id, p.shape, p.format, p.layout) for p in parents]
    return config, parents, objects


def planned_layout(s: NinferSyntheticSpec) -> tuple[list[tuple[str, int, int]], int]:
    """(object id, payload offset, bytes) of every object and the payload's size, without
    drawing a weight (spec/ninfer3.md §writer)."""
    _, _, objects = plan(s)
    rows = [(d["id"], d["offset"], d["bytes"]) for d in plan_objects(objects)]
    return rows, rows[-1][1] + rows[-1][2]


def write_synthetic(s: NinferSyntheticSpec, path: Path, bar: Progress) -> None:
    """Write the model to `path` (atomically, spec/ninfer3.md §writer)."""
    config, parents, objects = plan(s)
    components = {"text": {"config": config, "resources": {r: f"r.{r}" for r in RESOURCES}}}
    with ArtifactWriter(
        path,
        objects=objects,
        components=components,
        bindings=bindings(parents, s.tied),
        uses=uses(config),
        metadata={"name": s.name},
        provenance={"converter": "weightfile bench --synthetic", "seed": s.seed},
    ) as writer:
        for role, data in RESOURCES.items():
            writer.write(f"r.{role}", data)
        for index, p in enumerate(parents):
            for piece in parent_bytes(s, index, p):
                writer.write(p.id, piece)
                bar.tick(len(piece))
        writer.finish()


def synthetic_ninfer(
    s: NinferSyntheticSpec, folder: Path, *, progress: bool = False
) -> tuple[Path, bool]:
    """The cached file of `s` (written on first use) and whether this call wrote it."""
    path = synthetic_path(s, folder)
    if path.is_file():
        return path, False
    folder.mkdir(parents=True, exist_ok=True)
    bar = Progress(planned_layout(s)[1], progress, unit="B")
    bar.phase(f"generating {s.name}")
    try:
        write_synthetic(s, path, bar)
    except DestinationExistsError:  # a concurrent run published it first: same bytes
        return path, False
    finally:
        bar.close()
    return path, True
