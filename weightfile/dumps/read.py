"""Reading `.npy`, `.npz` and safetensors dumps without trusting them (spec/numerics.md
§dump-diff).

Every input is checked to be a regular file before it is opened (`os.stat`, then the
`O_NONBLOCK` open and `fstat` of ref/fileio.py), so a FIFO or a device is refused instead of
blocking. Every `.npy` header — a file's or an archive member's — is read with
`numpy.lib.format` and the size it claims is checked against the bytes the file or member holds
before anything is allocated; object arrays are refused from the header, so nothing is ever
unpickled. Headers are all read when a dump is opened; values are read one array at a time.
"""

from __future__ import annotations

import math
import os
import stat
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.lib import format as npy_format

from weightfile.ref.fileio import kind_of, open_regular
from weightfile.spec.errors import FileAccessError, MalformedError, UnsupportedError

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # an archive with members; an empty archive
#: Deflate expands at most about 1032:1 (a 258-byte match per 2 bits): a member claiming more
#: than this many bytes per stored byte cannot hold them.
DEFLATE_RATIO = 1032
#: The element kinds a dump may hold: bool, signed, unsigned, float, complex.
KINDS = "biufc"
#: safetensors dtype names the numpy API returns, with their numpy dtypes (ml_dtypes for BF16).
SAFETENSORS_DTYPES = (
    "BOOL", "U8", "I8", "U16", "I16", "F16", "BF16", "U32", "I32", "F32", "U64", "I64", "F64",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Header:
    """What a dump says about one array before its bytes are read."""

    shape: tuple[int, ...]
    dtype: np.dtype


class Dump:
    """The arrays of one dump file, by name in file order; `array(name)` reads one."""

    def __init__(
        self,
        path: Path,
        kind: str,
        headers: dict[str, Header],
        reader: Callable[[str], np.ndarray],
        closer: Callable[[], None],
    ) -> None:
        self.path, self.kind, self.headers = path, kind, headers
        self._reader, self._closer = reader, closer

    @property
    def names(self) -> list[str]:
        return list(self.headers)

    def array(self, name: str) -> np.ndarray:
        return self._reader(name)

    def close(self) -> None:
        self._closer()

    def __enter__(self) -> Dump:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def malformed(
    path: Path,
    detail: str,
    *,
    member: str | None = None,
    rule: str = "frontend.dump.malformed",
    offset: int | None = None,
) -> MalformedError:
    """A frontend.dump.* error naming the file (and the member) in the path."""
    where = f"{path}:{member}" if member is not None else str(path)
    return MalformedError(rule, detail, path=where, offset=offset)


def open_dump(path: Path) -> Dump:
    """The dump at `path` by its first bytes: `.npy`, `.npz` (a zip archive) or safetensors."""
    path = Path(path)
    require_regular(path)
    fd, size = open_regular(path)
    fh = os.fdopen(fd, "rb")
    try:
        head = fh.read(16)
        if head.startswith(NPY_MAGIC):
            return open_npy(path, fh, size)
        if head[:4] in ZIP_MAGICS:
            return open_npz(path, fh, size)
        if is_safetensors(head, size):
            fh.close()
            return open_safetensors(path)
    except BaseException:
        fh.close()
        raise
    fh.close()
    what = "the file is empty" if not head else "no .npy magic, zip archive or safetensors header"
    raise malformed(
        path, f"not an .npy, .npz or safetensors dump ({what})", rule="frontend.dump.format"
    )


def require_regular(path: Path) -> None:
    """Refuse a FIFO, device, socket or directory from `os.stat`, before any open."""
    try:
        info = os.stat(path)
    except OSError:
        return  # open_regular reports the missing or unreadable file in its words
    if not stat.S_ISREG(info.st_mode):
        raise FileAccessError(
            "format.file.not_regular",
            f"{kind_of(info.st_mode)}, not a regular file",
            path=str(path),
        )


def is_safetensors(head: bytes, size: int) -> bool:
    """safetensors: an 8-byte little-endian header length, then a JSON object that fits."""
    if len(head) < 9:
        return False
    (n,) = struct.unpack_from("<Q", head)
    return head[8:9] == b"{" and 8 + n <= size


# -- .npy headers, in a file or an archive member ------------------------------------------------
def read_header(path: Path, fp: IO[bytes], member: str | None) -> tuple[Header, bool]:
    """(header, fortran_order) of the `.npy` at fp's position; the dtype is refused before any
    value is read when it is an object (pickled) or other non-numeric one."""
    try:
        version = npy_format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
        else:
            raise ValueError(f"npy format version {version[0]}.{version[1]} is not read")
    except (ValueError, TypeError, SyntaxError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise malformed(path, f"no readable .npy header ({exc})", member=member) from None
    if dtype.hasobject:
        raise UnsupportedError(
            "frontend.dump.dtype",
            f"an object array ({dtype}): pickled data is never loaded",
            path=f"{path}:{member}" if member is not None else str(path),
        )
    if dtype.kind not in KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise UnsupportedError(
            "frontend.dump.dtype",
            f"dtype {dtype} is not a number, boolean or complex",
            path=f"{path}:{member}" if member is not None else str(path),
        )
    if any(not isinstance(d, int) or d < 0 for d in shape):
        raise malformed(path, f"shape {shape} has a negative extent", member=member)
    return Header(tuple(shape), dtype), bool(fortran)


def nbytes(h: Header) -> int:
    """Bytes the header's values take, in Python integers (no overflow)."""
    return math.prod(h.shape) * h.dtype.itemsize


def from_bytes(data: bytes, h: Header, fortran: bool) -> np.ndarray:
    """The array of exactly nbytes(h) bytes (checked by the caller)."""
    flat = np.frombuffer(data, dtype=h.dtype, count=math.prod(h.shape))
    if fortran:
        return flat.reshape(h.shape[::-1]).transpose()
    return flat.reshape(h.shape)


def open_npy(path: Path, fh: IO[bytes], size: int) -> Dump:
    """A single `.npy`: one array, named by the file's stem."""
    fh.seek(0)
    header, fortran = read_header(path, fh, None)
    start, need = fh.tell(), nbytes(header)
    if need != size - start:
        raise malformed(
            path,
            f"the header describes {need} bytes of values, the file holds {size - start}",
            rule="frontend.dump.size",
            offset=start,
        )
    name = path.name.removesuffix(".npy")

    def read(_: str) -> np.ndarray:
        fh.seek(start)
        return from_bytes(fh.read(need), header, fortran)

    return Dump(path, "npy", {name: header}, read, fh.close)


# -- .npz archives --------------------------------------------------------------------------------
def open_npz(path: Path, fh: IO[bytes], size: int) -> Dump:
    """An `.npz`: every member an `.npy` whose header's size fits what the member holds."""
    fh.seek(0)
    try:
        archive = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise malformed(path, f"not a readable zip archive ({exc})") from None
    try:
        members = check_members(path, archive, size)
    except BaseException:
        archive.close()
        raise

    def read(name: str) -> np.ndarray:
        info, header, fortran, start = members[name]
        try:
            with archive.open(info) as fp:
                fp.read(start)  # the .npy header, read and checked when the dump was opened
                data = fp.read(nbytes(header) + 1)
        except (zipfile.BadZipFile, EOFError, ValueError, OSError, zlib.error) as exc:
            raise malformed(
                path,
                f"cannot read the member ({exc})",
                member=info.filename,
                offset=info.header_offset,
            ) from None
        if len(data) != nbytes(header):
            raise malformed(
                path,
                f"the member holds {len(data)} bytes of values, its header "
                f"describes {nbytes(header)}",
                member=info.filename,
                rule="frontend.dump.size",
                offset=info.header_offset,
            )
        return from_bytes(data, header, fortran)

    def close() -> None:
        archive.close()
        fh.close()

    headers = {name: m[1] for name, m in members.items()}
    return Dump(path, "npz", headers, read, close)


def check_members(path: Path, archive: zipfile.ZipFile, size: int) -> dict[str, Any]:
    """name -> (info, header, fortran, header length) for every member, each checked."""
    members: dict[str, Any] = {}
    for info in archive.infolist():
        member = info.filename
        if not member.endswith(".npy"):
            raise malformed(
                path,
                "a member that is not an .npy array",
                member=member,
                rule="frontend.dump.member",
                offset=info.header_offset,
            )
        name = member.removesuffix(".npy")
        if name in members:
            raise malformed(
                path,
                "a second member of this name",
                member=member,
                rule="frontend.dump.member",
                offset=info.header_offset,
            )
        held = member_capacity(path, info, size)
        try:
            with archive.open(info) as fp:
                header, fortran = read_header(path, fp, member)
                start = fp.tell()
        except (zipfile.BadZipFile, EOFError, OSError, RuntimeError, NotImplementedError) as exc:
            raise malformed(
                path, f"cannot open the member ({exc})", member=member, offset=info.header_offset
            ) from None
        if nbytes(header) > held - start or nbytes(header) != info.file_size - start:
            raise malformed(
                path,
                f"the header claims {header.shape} {header.dtype} ({nbytes(header)} bytes), the "
                f"member holds {max(held - start, 0)}",
                member=member,
                rule="frontend.dump.size",
                offset=info.header_offset,
            )
        members[name] = (info, header, fortran, start)
    return members


def member_capacity(path: Path, info: zipfile.ZipInfo, size: int) -> int:
    """The most bytes the member can hold: its stored bytes, times deflate's largest ratio when
    compressed, and never more than its directory entry claims."""
    if info.flag_bits & 0x1:
        raise malformed(
            path,
            "an encrypted member",
            member=info.filename,
            rule="frontend.dump.member",
            offset=info.header_offset,
        )
    if info.compress_size > size:
        raise malformed(
            path,
            f"the member claims {info.compress_size} stored bytes, the file has {size}",
            member=info.filename,
            rule="frontend.dump.size",
            offset=info.header_offset,
        )
    if info.compress_type == zipfile.ZIP_STORED:
        return min(info.file_size, info.compress_size)
    if info.compress_type == zipfile.ZIP_DEFLATED:
        return min(info.file_size, info.compress_size * DEFLATE_RATIO)
    raise malformed(
        path,
        f"compression method {info.compress_type} (numpy writes stored or deflated members)",
        member=info.filename,
        rule="frontend.dump.member",
        offset=info.header_offset,
    )


# -- safetensors -----------------------------------------------------------------------------------
def open_safetensors(path: Path) -> Dump:
    """A safetensors file through the `safetensors` package's numpy API (it checks every
    tensor's byte range against the file before handing a view out)."""
    import ml_dtypes  # noqa: F401  (registers bfloat16, which the numpy API returns for BF16)
    from safetensors import SafetensorError, safe_open

    try:
        handle = safe_open(str(path), framework="numpy")
        headers: dict[str, Header] = {}
        for name in handle.keys():  # noqa: SIM118  (a safe_open handle has no __iter__)
            part = handle.get_slice(name)
            kind = part.get_dtype()
            if kind not in SAFETENSORS_DTYPES:
                raise UnsupportedError(
                    "frontend.dump.dtype",
                    f"safetensors dtype {kind} is not read",
                    path=f"{path}:{name}",
                )
            headers[name] = Header(tuple(part.get_shape()), np.dtype(_st_dtype(kind)))
    except SafetensorError as exc:
        raise malformed(path, f"not a readable safetensors file ({exc})") from None

    def read(name: str) -> np.ndarray:
        try:
            return handle.get_tensor(name)
        except SafetensorError as exc:
            raise malformed(path, f"cannot read the tensor ({exc})", member=name) from None

    return Dump(path, "safetensors", headers, read, lambda: None)


def _st_dtype(kind: str) -> Any:
    import ml_dtypes

    return {
        "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "U16": np.uint16, "I16": np.int16,
        "F16": np.float16, "BF16": ml_dtypes.bfloat16, "U32": np.uint32, "I32": np.int32,
        "F32": np.float32, "U64": np.uint64, "I64": np.int64, "F64": np.float64,
    }[kind]  # fmt: skip
