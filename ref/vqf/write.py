"""Write a VQF file (spec/vqf.md §placement, §directory-order, §fnv-trailer), published atomically.

The writer places tensors in the directory order of spec/vqf.md §directory-order, zero-fills every
gap, computes the FNV-1a-64 over exactly the covered bytes while streaming the payloads, and
publishes the file by linking a locked temporary file in the target folder into place
(ref/staging.py): on any failure, `kill -9` included, nothing is left at the destination, a killed
writer's temporary file is swept by the next write to that folder, and an existing file is never
replaced unless `overwrite=True`.

The header is written once with its final file_len: every size is declared up front, so the
engine's "header with file_len = 0, then rewrite" sequence would produce the same bytes.
Payloads may arrive as one buffer, as an iterable of chunks (a multi-GB model never has to be in
memory at once), or as None for an all-zero payload, written as a hole (sparse file).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from weightfile.ref import staging
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.spec.errors import InvalidError
from weightfile.spec.records import build_record
from weightfile.spec.vqf.arch import MOE_FIELD_NAMES, arch_defaults
from weightfile.spec.vqf.constants import (
    FNV_OFFSET_BASIS,
    HEADER_BYTES,
    NAME_BYTES,
    VERSION_DENSE,
    VERSION_MOE,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.header import VQFHeader, VQFHeaderLegacy
from weightfile.spec.vqf.inventory import ORDER_INDEX
from weightfile.spec.vqf.placement import data_offset_for, file_len_for, tensor_offsets
from weightfile.spec.vqf.qtypes import QType, tensor_bytes
from weightfile.spec.vqf.tensor import VQFTensor, encode_name
from weightfile.spec.vqf.trailer import VQFTrailerFNV

from .fnv1a64 import fnv1a64_zeros

Payload = bytes | bytearray | memoryview | Iterable[bytes | bytearray | memoryview] | None


@dataclass(frozen=True)
class TensorSource:
    """One tensor to write: its directory fields and where its bytes come from."""

    name: str
    qtype: int
    rows: int
    cols: int
    data: Payload = None  # None: all-zero payload
    nbytes: int | None = None  # default: size(qtype, rows·cols)

    @property
    def size(self) -> int:
        return (
            tensor_bytes(self.qtype, self.rows * self.cols) if self.nbytes is None else self.nbytes
        )

    @classmethod
    def from_array(
        cls, name: str, array: Any, *, qtype: int, flags: int = 0, backend: Backend = REFERENCE
    ) -> TensorSource:
        """A tensor encoded from floats in its logical shape (what `weightfile.open(...)
        .decode(name)` returns): a vector, or a per-layer stack of vectors for a norm; an
        [out, in] matrix; an [n_layers, out, in] stack (directory n_layers·in × out, or
        n_layers·out × in for gate/up/down, spec/vqf.md §text-tensors, §geometry). Quantized
        matrices take the layout `flags` and the name select (spec/vqf.md §encodings), so pass the
        file's flags. `backend`'s codecs encode (the same bytes either way)."""
        import numpy as np

        from weightfile.spec.vqf.inventory import KINDS, stacked_directory_shape

        from .encode import encode

        a = np.asarray(array, dtype=np.float32)
        kind = KINDS.get(name)
        qt = QType(qtype)
        if a.ndim == 1 or (kind is not None and kind.family == "norm"):
            data = encode(qt, flags, name, a.reshape(1, -1), backend)
            return cls(name, qt, a.size, 1, data)
        if a.ndim == 2:
            return cls(name, qt, a.shape[0], a.shape[1], encode(qt, flags, name, a, backend))
        if a.ndim == 3:
            count, out, inner = a.shape
            data = b"".join(encode(qt, flags, name, m, backend) for m in a)
            return cls(name, qt, *stacked_directory_shape(name, count, out, inner), data)
        raise InvalidError(
            "vqf.writer.payload", f"{name}: an array of {a.ndim} dimensions is no VQF tensor"
        )


def write_vqf(
    path: str | os.PathLike[str],
    *,
    arch: Mapping[str, Any],
    tensors: Sequence[TensorSource],
    flags: int = 0,
    version: int | None = None,
    layout: str = "current",
    overwrite: bool = False,
    order: str = "spec",
    backend: Backend = REFERENCE,
) -> Path:
    """Write `tensors` as a VQF file at `path` and return the path.

    version defaults to 3 when the MOE flag is set, else 2. order="spec" sorts the tensors into the
    spec/vqf.md §directory-order order (unknown names after the known ones, in the order given);
    order="given" keeps the caller's order, for building test files. ENC and SIGNED files are made
    from the written plaintext file by `protect_write.encrypt_vqf` and `sign_vqf` (spec/vqf.md
    §protected). `backend.checksum` computes the FNV-1a-64 trailer (spec/vqf.md §fnv-trailer).
    """
    path = Path(path)
    emit = vqf_emitter(
        arch=arch, tensors=tensors, flags=flags, version=version, layout=layout, order=order,
        backend=backend,
    )  # fmt: skip
    with staged(path, overwrite) as out:
        emit(out)
    return path


def vqf_emitter(
    *,
    arch: Mapping[str, Any],
    tensors: Sequence[TensorSource],
    flags: int = 0,
    version: int | None = None,
    layout: str = "current",
    order: str = "spec",
    backend: Backend = REFERENCE,
) -> Callable[[BinaryIO], None]:
    """`write_vqf`'s checks and plan, done now; the returned function writes the file's bytes
    into an open file (at its start), for a writer that keeps them off the file system's names
    (a plaintext before encryption: families/qwen3/to_vqf.py `publish_protected`)."""
    if flags & (VQFFlag.ENC | VQFFlag.SIGNED):
        raise InvalidError(
            "vqf.writer.protect",
            "ENC and SIGNED are set by protect_write: write the plaintext file, then "
            "encrypt_vqf / sign_vqf it (spec/vqf.md §4)",
            path="flags",
        )
    if version is None:
        version = VERSION_MOE if flags & VQFFlag.MOE else VERSION_DENSE
    ordered = sort_tensors(tensors) if order == "spec" else list(tensors)
    for i, t in enumerate(ordered):
        require_name(t.name, i)
    directory, offsets, data_offset, file_len = plan(ordered)
    if file_len == data_offset:
        raise InvalidError(
            "vqf.writer.empty",
            "no payload bytes: the loader requires file_len > data_offset (§2.4 step 3)",
            path="tensors",
        )
    header = build_header(arch, flags, version, layout, len(ordered), data_offset, file_len)

    def emit(out: BinaryIO) -> None:
        out.write(header)
        out.write(directory)
        h = backend.checksum(directory, FNV_OFFSET_BASIS)
        h = write_data(out, ordered, offsets, data_offset, file_len, h, backend.checksum)
        out.write(VQFTrailerFNV.build({"fnv1a64": h}))

    return emit


#: The arch fields without which no decoder can run a file (spec/vqf.md §arch-semantics): the
#: loader's geometry (spec/vqf.md §legacy-header) plus the attention and normalisation constants.
REQUIRED_ARCH_FIELDS = (
    "dim",
    "n_layers",
    "n_heads",
    "n_kv_heads",
    "head_dim",
    "ffn_dim",
    "vocab_size",
    "max_seq_len",
    "rope_theta",
    "norm_eps",
)


def require_complete_arch(arch: Mapping[str, Any]) -> None:
    """`vqf.writer.arch` naming every required field that is missing or 0. `write_vqf` itself
    writes any arch (the conformance corpus needs broken files); the public
    `weightfile.write_vqf` calls this first."""
    missing = [f for f in REQUIRED_ARCH_FIELDS if not arch.get(f)]
    if missing:
        raise InvalidError(
            "vqf.writer.arch",
            f"arch lacks {', '.join(missing)} (missing or 0); a decoder needs every one",
            path="arch",
        )


def sort_tensors(tensors: Sequence[TensorSource]) -> list[TensorSource]:
    """spec/vqf.md §directory-order order; a stable sort keeps unknown names last, in the order
    given."""
    return sorted(tensors, key=lambda t: ORDER_INDEX.get(t.name, len(ORDER_INDEX)))


def require_name(name: str, index: int) -> None:
    """Names are 1..31 ASCII bytes without NUL: the writer never truncates (spec/vqf.md §entry)."""
    raw = name.encode("ascii", errors="replace")
    if not name or not name.isascii() or "\0" in name or len(raw) > NAME_BYTES - 1:
        raise InvalidError(
            "vqf.writer.name",
            f"tensor name {name!r} must be 1..{NAME_BYTES - 1} ASCII characters without NUL",
            path=f"directory[{index}].name",
        )


def plan(tensors: Sequence[TensorSource]) -> tuple[bytes, list[int], int, int]:
    """The directory bytes and the placement of spec/vqf.md §placement."""
    sizes = [t.size for t in tensors]
    data_offset = data_offset_for(len(tensors))
    offsets = tensor_offsets(data_offset, sizes)
    entries = []
    for i, (t, offset, size) in enumerate(zip(tensors, offsets, sizes, strict=True)):
        fields = {
            "name": encode_name(t.name),
            "qtype": t.qtype,
            "rows": t.rows,
            "cols": t.cols,
            "offset": offset,
            "bytes": size,
        }
        entries.append(
            build_record(VQFTensor, fields, rule="vqf.writer.field", path=f"directory[{i}]")
        )
    return b"".join(entries), offsets, data_offset, file_len_for(data_offset, sizes)


def build_header(
    arch: Mapping[str, Any],
    flags: int,
    version: int,
    layout: str,
    n_tensors: int,
    data_offset: int,
    file_len: int,
) -> bytes:
    """The 448 header bytes, in the current or the legacy layout (spec/vqf.md §header-layout,
    §legacy-header)."""
    full = {**arch_defaults(), **arch}
    fields = {
        "version": version,
        "flags": flags,
        "n_tensors": n_tensors,
        "data_offset": data_offset,
        "file_len": file_len,
        "sig": {},
    }
    if layout == "current":
        fields["arch"] = full
        return build_record(VQFHeader, fields, rule="vqf.writer.field", path="header")
    if layout != "legacy":
        raise ValueError(f"layout must be 'current' or 'legacy', not {layout!r}")
    if version != VERSION_DENSE or any(full[name] for name in MOE_FIELD_NAMES):
        raise InvalidError(
            "vqf.writer.legacy",
            "the legacy 432-byte layout is version 2 only and has no MoE fields",
            path="header.arch",
        )
    fields["arch"] = {k: v for k, v in full.items() if k not in MOE_FIELD_NAMES}
    record = build_record(VQFHeaderLegacy, fields, rule="vqf.writer.field", path="header")
    return record + bytes(HEADER_BYTES - len(record))


def write_data(
    out: BinaryIO,
    tensors: Sequence[TensorSource],
    offsets: Sequence[int],
    data_offset: int,
    file_len: int,
    h: int,
    hasher: Any,
) -> int:
    """Gap, then each tensor and its zero pad; returns the FNV continued over the data region."""
    skip_zeros(out, data_offset - out.tell())  # the gap is zero and not hashed
    # (spec/vqf.md §fnv-trailer)
    for i, (t, offset) in enumerate(zip(tensors, offsets, strict=True)):
        assert out.tell() == offset, "placement and stream disagree"
        if t.data is None:  # an all-zero payload: a hole, hashed as a zero run
            skip_zeros(out, t.size)
            h = fnv1a64_zeros(t.size, h)
        else:
            h = write_payload(out, t, i, h, hasher)
        end = offsets[i + 1] if i + 1 < len(offsets) else file_len
        pad = end - out.tell()
        skip_zeros(out, pad)
        h = fnv1a64_zeros(pad, h)
    return h


def write_payload(out: BinaryIO, t: TensorSource, index: int, h: int, hasher: Any) -> int:
    """Stream one payload, hashing as it goes; its length must equal the declared bytes."""
    written = 0
    for chunk in iter_payload(t.data):
        written += len(chunk)
        if written > t.size:
            break
        out.write(chunk)
        h = hasher(chunk, h)
    if written != t.size:
        raise InvalidError(
            "vqf.writer.payload",
            f"tensor {t.name!r} declares {t.size} bytes but its data "
            f"{'exceeds that' if written > t.size else f'has {written}'}",
            path=f"directory[{index}].bytes",
        )
    return h


def iter_payload(data: Payload) -> Iterable[memoryview]:
    if data is None:
        return ()
    if isinstance(data, bytes | bytearray | memoryview):
        return (memoryview(data).cast("B"),)
    if hasattr(data, "__array_interface__"):  # a NumPy array: its bytes in C order
        return (memoryview(data).cast("B"),)  # type: ignore[arg-type]
    return (memoryview(c).cast("B") for c in data)


def skip_zeros(out: BinaryIO, count: int) -> None:
    """Advance by `count` zero bytes as a hole; the final truncate makes a trailing hole real."""
    if count:
        out.seek(count, os.SEEK_CUR)
        out.truncate(out.tell())


@contextmanager
def staged(
    path: str | os.PathLike[str], overwrite: bool, mode: int = staging.PUBLIC_MODE
) -> Iterator[BinaryIO]:
    """A VQF writer's staged output (ref/staging.py `staged`, the one output policy of
    spec/ninfer3.md §safe-files): an existing file is `vqf.writer.destination`."""
    with staging.staged(path, overwrite, mode, "vqf.writer.destination") as out:
        yield out
