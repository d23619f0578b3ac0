"""`weightfile dump FILE NAME --out OUT [--words | --raw | --hadamard-signs]`,
`dump FILE --all --out OUT`.

Values are float32 in the logical shape (C order; tiled and interleaved layouts come out in plain
row-major order). With --words the logical codes and scales go to an .npz instead, so an engine
team can diff a single tensor against its own decoder; --raw writes the stored bytes as they are
(a .ninfer resource such as tokenizer.json, or a tensor's payload). A .ninfer parameter stored
Hadamard-rotated comes out as stored (the rotated matrix); --hadamard-signs gives the ±1 signs of
its Use instead (spec/ninfer3.md §qwen35-hadamard-import). --all exports every tensor,
dequantized, into one safetensors file, streamed (header first, then a tensor at a time).
What is written is exactly --out: NumPy's habit of appending .npy/.npz to a name is not followed.
OUT follows the one output policy (ref/staging.py, spec/ninfer3.md §safe-files): an existing
file is replaced only with --force, a symlink, FIFO, device or directory never
(`format.file.destination`), and the file is published by rename.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.backends import ENGINES, backend_named
from weightfile.ref.backend import Backend
from weightfile.ref.staging import staged

from ._common import (
    add_force_argument,
    add_passphrase_argument,
    check_destination,
    is_stdout,
    output_stream,
    passphrase,
    report_stream,
)


def register(sub: Any) -> None:
    parser = sub.add_parser("dump", help="write one tensor's values (or words) as .npy / .npz")
    parser.add_argument("file", type=Path, help="a .vqf or .ninfer file")
    parser.add_argument(
        "name", nargs="?", help="VQF tensor name, or .ninfer object id / binding name"
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the file to write, exactly this path; - for standard output (not with --all)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--words", action="store_true", help="logical codes and scales (.npz)")
    what.add_argument(
        "--raw", action="store_true", help="the stored bytes (a .ninfer resource, a payload)"
    )
    what.add_argument(
        "--hadamard-signs",
        action="store_true",
        help=".ninfer: the ±1 hadamard_signs of NAME's Use (float32 .npy), not its stored matrix",
    )
    what.add_argument(
        "--all",
        action="store_true",
        help="every tensor, dequantized to float32, into one safetensors file written at "
        "exactly OUT (no NAME; streamed: a tensor at a time)",
    )
    parser.add_argument("--engine", choices=ENGINES, default="fast")
    parser.add_argument(
        "--q8-tiling",
        choices=("4x4",),
        help="VQF: the q8 tensors are 4x4-tiled (such files set no flag, vqf.md §0 item 3)",
    )
    add_passphrase_argument(parser)
    add_force_argument(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from weightfile.model_file import open_model_file

    from ._common import UsageError

    if args.all == (args.name is not None):
        raise UsageError("give a NAME, or --all without one")
    options: dict[str, Any] = {"q8_tiling": args.q8_tiling} if args.q8_tiling else {}
    key = passphrase(args)
    if key is not None:
        options["passphrase"] = key
    backend = backend_named(args.engine)
    if args.all and is_stdout(args.out):
        raise UsageError("--all writes a safetensors file: give --out a path, not -")
    check_destination(args.out, args.force)  # before any decoding, not after it
    with open_model_file(args.file, **options) as f:
        if args.all:
            summary = dump_all(f, args.out, backend, args.force)
        elif args.raw:
            data = raw_bytes(f, args.name)
            with output_stream(args.out, args.force) as out:
                out.write(data)
            summary = f"{len(data)} bytes"
        elif args.hadamard_signs:
            values = use_signs(f, args.name)
            with output_stream(args.out, args.force) as out:
                np.save(out, values)
            summary = f"hadamard_signs {values.dtype}{list(values.shape)}"
        elif args.words:
            words = f.decode_words(args.name, engine=backend)
            with output_stream(args.out, args.force) as out:  # a file object: savez adds no ".npz"
                np.savez(out, **words)
            summary = ", ".join(f"{k} {v.dtype}{list(v.shape)}" for k, v in words.items())
        else:
            values = f.decode(args.name, engine=backend)
            with output_stream(args.out, args.force) as out:  # a file object: save adds no ".npy"
                np.save(out, values)
            summary = f"{values.dtype}{list(values.shape)}"
    print(f"{args.name or 'all tensors'}: {summary} -> {args.out}", file=report_stream(args.out))
    return 0


def use_signs(f: Any, name: str) -> np.ndarray:
    """The hadamard_signs of parameter `name`'s Uses, when they are one vector (spec/ninfer3.md
    §use, §qwen35-hadamard-import)."""
    from ._common import UsageError

    if f.format != "ninfer":
        raise UsageError("--hadamard-signs is for .ninfer files")
    found = f.hadamard_signs(name)
    if not found:
        raise UsageError(f"no Use of {name!r} carries hadamard_signs")
    first = next(iter(found.values()))
    if any(not np.array_equal(first, s) for s in found.values()):
        raise UsageError(
            f"the Uses of {name!r} at {sorted(found)} carry different signs: dump the signs "
            "object by its id"
        )
    return first


def raw_bytes(f: Any, name: str) -> bytes:
    """The stored bytes of a VQF tensor or of a .ninfer object (tensor or resource)."""
    if f.format == "vqf":
        return bytes(f.file.payload(name))
    from weightfile.spec.errors import NotFoundError

    if name not in f.artifact.directory.objects_by_id:
        raise NotFoundError("ninfer3.binder.parameter", f"no object {name!r} (--raw takes ids)")
    return bytes(f.artifact.object_bytes(name))


def tensor_names(f: Any) -> list[str]:
    """What --all exports: every VQF tensor; every .ninfer tensor object (not resources, not
    bindings, whose parts are rows of objects already exported)."""
    if f.format == "vqf":
        return f.names()
    return [o.id for o in f.artifact.directory.objects if o.kind != "resource"]


def dump_all(f: Any, out: Path, backend: Backend, force: bool) -> str:
    """Every tensor into one safetensors file, streamed: the header (every name, shape and
    offset, known from the directory alone) first, then each tensor's float32 bytes as it is
    decoded, a band of rows at a time (`bands`): memory holds one band, not the model.
    Published by the output policy (ref/staging.py `staged`: never through a symlink, FIFO or
    device)."""
    from weightfile.convert.checkpoint import safetensors_header
    from weightfile.progress import each

    names = tensor_names(f)
    shapes = {name: tuple(int(n) for n in f.shape(name)) for name in names}
    header = safetensors_header(shapes, {"source": str(f._path()), "format": f.format})
    with staged(out, force) as fh:
        fh.write(header)
        for name in each(names, "tensors", total=len(names)):
            for values in bands(f, name, shapes[name], backend):
                fh.write(memoryview(np.ascontiguousarray(values, dtype="<f4")).cast("B"))
                del values
    return f"{len(names)} tensors, float32"


#: About how many float32 bytes `dump --all` decodes at once (a band of leading rows).
BAND_BYTES = 16 << 20
#: Bands are whole multiples of this many leading rows (every tiled layout's row group divides
#: it, spec/vqf.md §q8-tiled, §q4-0).
BAND_ROWS = 64


def bands(f: Any, name: str, shape: tuple[int, ...], backend: Backend) -> Any:
    """`name`'s values a band of leading rows (layers of a stacked tensor, rows of a matrix) at
    a time, so a decode's temporaries are those of a band, not of the whole tensor."""
    import math

    if len(shape) < 2:
        yield f.decode(name, engine=backend)
        return
    per_row = 4 * math.prod(shape[1:])
    step = max(1, BAND_BYTES // max(per_row, 1))
    step = step if step < BAND_ROWS else step // BAND_ROWS * BAND_ROWS
    view = f.get_slice(name)
    for start in range(0, shape[0], step):
        values = view.__getitem__(slice(start, min(start + step, shape[0])), engine=backend)
        if values.shape[1:] != shape[1:]:  # our own bug: the header already says otherwise
            raise RuntimeError(f"{name}: decoded {values.shape}, directory {shape}")
        yield values
