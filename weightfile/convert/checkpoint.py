"""A Hugging Face checkpoint folder: its JSON files, its chat template and its tensors.

The one checkpoint reader of both importers (Qwen3 -> VQF, spec/vqf.md §arch-semantics; Qwen3.5 ->
`.ninfer`, spec/ninfer3.md §qwen35-text). Each importer reports under its own rule family
(`vqf.import.*` or `qwen35.import.*`): it passes the ids in a `CheckpointRules`.

Tensors are read with the `safetensors` library, lazily and one at a time, so a model is never
in memory at once. Opening a shard lets the library check its header (length, JSON, every
entry's dtype, shape and byte range, and that the entries cover the data exactly); the reader
then takes each entry's shape and dtype from the library and checks, in Python integers, that
the byte range holds exactly that many elements and lies inside the file, before anything is
allocated. The bytes themselves are read by offset: safetensors 0.8 exposes a tensor's shape
and dtype but not where its bytes are, and its numpy mode has no bfloat16, so the offsets come
from the header the library has just accepted and the little-endian words are viewed as
`ml_dtypes.bfloat16`. Values come back as float32: F32 as stored, F16 and BF16 widened exactly
(a bf16 word is the top half of a binary32, spec/ninfer3.md §direct-formats).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import ml_dtypes
import numpy as np
from safetensors import SafetensorError, safe_open

from weightfile.ref.fileio import open_regular
from weightfile.spec.errors import (
    FileAccessError,
    InvalidError,
    MalformedError,
    NotFoundError,
    UnsupportedError,
)

from .config_values import check_config_values, strict_json

#: safetensors dtype -> the little-endian word one element is stored as; the dtypes the
#: importers widen exactly to float32 (BF16 words are viewed as ml_dtypes.bfloat16).
WORDS = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2")}
HEADER_LENGTH_BYTES = 8  # the u64 little-endian header length that opens a safetensors file


@dataclass(frozen=True, slots=True)
class CheckpointRules:
    """The rule id of each way a checkpoint folder can be refused, in one importer's family."""

    missing_file: str  # NotFoundError: config.json or every *.safetensors is absent
    config: str  # InvalidError: a JSON file is not JSON or not an object
    safetensors: str  # MalformedError: a shard's header or byte range is broken
    dtype: str  # UnsupportedError: a tensor read is not F32, F16 or BF16
    duplicate: str  # InvalidError: one tensor name in two shards
    missing_tensor: str  # NotFoundError: a tensor asked for is in no shard


def read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file, None when there is none at `path`; opened without blocking
    and checked with fstat first, so a FIFO named config.json is refused, not waited on
    (ref/fileio.py, spec/ninfer3.md §safe-files)."""
    try:
        fd, _ = open_regular(path)
    except FileAccessError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None
        raise
    with os.fdopen(fd, "rb") as stream:
        return stream.read()


def read_json(folder: Path, name: str, rules: CheckpointRules) -> dict[str, Any]:
    """A JSON object file of the checkpoint (config.json, ...), or a typed error naming it; parsed
    strictly (weightfile/convert/config_values.py `strict_json`: no NaN, Infinity, overflowing
    number or huge integer)."""
    data = read_regular(folder / name)
    if data is None:
        raise NotFoundError(rules.missing_file, f"{folder / name} is missing", path=name)
    try:
        value = strict_json(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidError(rules.config, f"{name}: {exc}", path=name) from None
    if not isinstance(value, dict):
        raise InvalidError(rules.config, f"{name} is not an object", path=name)
    check_config_values(value, rules.config, name)
    return value


def chat_template(folder: Path, rules: CheckpointRules) -> str | None:
    """The checkpoint's chat template: chat_template.jinja, or tokenizer_config.json's string.
    The template is optional, but one that is there and not UTF-8 text is `rules.config`."""
    jinja = read_regular(folder / "chat_template.jinja")
    if jinja is not None:
        try:
            return jinja.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidError(
                rules.config, f"chat_template.jinja is not UTF-8 text ({exc})",
                path="chat_template.jinja",
            ) from None  # fmt: skip
    config = read_regular(folder / "tokenizer_config.json")
    if config is not None:
        try:
            value = strict_json(config.decode("utf-8")).get("chat_template")
        except (UnicodeDecodeError, ValueError, RecursionError, AttributeError):
            return None  # the template is optional; a broken config just has none
        return value if isinstance(value, str) else None
    return None


def read_exactly(stream: BinaryIO, offset: int, out: np.ndarray) -> bool:
    """Fill the byte array `out` from `offset`; False if the file ends first. A read may return
    fewer bytes than asked (Linux caps one read near 2 GiB), so it loops."""
    stream.seek(offset)
    view = memoryview(out)
    done = 0
    while done < len(view):
        got = stream.readinto(view[done:])
        if not got:
            return False
        done += got
    return True


@dataclass(frozen=True, slots=True)
class Entry:
    """Where one tensor is: its shard, dtype, shape and absolute byte range in the shard."""

    file: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute file offset of the first byte
    end: int  # absolute file offset one past the last byte


class Checkpoint(Mapping[str, np.ndarray]):
    """The tensors of every *.safetensors file in a folder, by name, read on demand as float32.

    A read-only mapping (`checkpoint[name]`, `name in checkpoint`), so a whole-state-dict helper
    such as `weights_from_hf` takes it as it takes a transformers state dict; `tensor(name)` is
    the same read with a typed error for a missing name. Use as a context manager.
    """

    def __init__(self, folder: str | Path, rules: CheckpointRules) -> None:
        self.folder = Path(folder)
        self.rules = rules
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise NotFoundError(rules.missing_file, f"no *.safetensors in {self.folder}", path=".")
        self._stack = contextlib.ExitStack()
        self._files: dict[str, BinaryIO] = {}
        self._entries: dict[str, Entry] = {}
        try:
            for f in files:
                for name, entry in self._index(f).items():
                    if name in self._entries:
                        raise InvalidError(rules.duplicate, f"{name} in two files", path=f.name)
                    self._entries[name] = entry
        except BaseException:
            self._stack.close()
            raise

    def _malformed(self, detail: str, file: str, offset: int | None = 0) -> MalformedError:
        return MalformedError(self.rules.safetensors, detail, offset=offset, path=file)

    def _index(self, path: Path) -> dict[str, Entry]:
        """name -> Entry of one shard, in the library's key order; the shard stays open."""
        try:
            with safe_open(str(path), framework="np") as handle:
                described = {
                    name: (handle.get_slice(name).get_dtype(), handle.get_slice(name).get_shape())
                    for name in handle.keys()  # noqa: SIM118 (a safe_open handle is not a dict)
                }
            # unbuffered: every read goes to the file, one tensor's bytes straight into its array
            stream = self._stack.enter_context(path.open("rb", buffering=0))
        except (SafetensorError, OSError, ValueError) as exc:
            raise self._malformed(str(exc), path.name) from None  # the library's own words
        self._files[path.name] = stream
        start, ranges = self._byte_ranges(stream, path.name)
        size = path.stat().st_size
        out = {}
        for name, (dtype, shape) in described.items():
            if name not in ranges:  # the file changed since the library read it
                raise self._malformed(f"header: no data_offsets for {name}", path.name)
            begin, end = ranges[name]
            entry = Entry(
                path.name, dtype, tuple(int(n) for n in shape), start + begin, start + end
            )
            self._require_bytes(name, entry, size)
            out[name] = entry
        return out

    def _byte_ranges(self, stream: BinaryIO, file: str) -> tuple[int, dict[str, tuple[int, int]]]:
        """(offset of the data region, name -> data_offsets) from the header the library
        accepted: the only thing taken from it that the library does not expose."""
        try:
            n = int.from_bytes(stream.read(HEADER_LENGTH_BYTES), "little")
            header = json.loads(stream.read(n))
            ranges = {
                name: (int(info["data_offsets"][0]), int(info["data_offsets"][1]))
                for name, info in header.items()
                if name != "__metadata__"
            }
        except (ValueError, KeyError, TypeError, IndexError) as exc:  # changed since opened
            raise self._malformed(f"header: {exc}", file) from None
        return HEADER_LENGTH_BYTES + n, ranges

    def _require_bytes(self, name: str, entry: Entry, file_size: int) -> None:
        """A float entry's byte range holds exactly shape x element size and is in the file."""
        word = WORDS.get(entry.dtype)
        if word is None:
            return  # refused only if it is read (rules.dtype): an unused tensor may be anything
        want = math.prod(entry.shape) * word.itemsize  # Python ints: no overflow
        if entry.end - entry.begin != want or not (0 <= entry.begin <= entry.end <= file_size):
            raise self._malformed(
                f"{name}: bytes [{entry.begin}, {entry.end}) do not hold "
                f"{list(entry.shape)} {entry.dtype}",
                entry.file,
                offset=entry.begin,
            )

    @property
    def names(self) -> list[str]:
        return list(self._entries)

    def shape(self, name: str) -> tuple[int, ...]:
        """The stored shape of `name` (from the header, no data touched)."""
        return self._entry(name).shape

    def require_float_dtypes(self) -> None:
        """Refuse the checkpoint if any tensor, read or not, is not F32, F16 or BF16 (rules.dtype):
        for an importer that refuses such a checkpoint outright (the VQF one always has)."""
        for name, entry in self._entries.items():
            self._word(name, entry)

    def _word(self, name: str, entry: Entry) -> np.dtype[Any]:
        word = WORDS.get(entry.dtype)
        if word is None:
            raise UnsupportedError(self.rules.dtype, f"{name}: dtype {entry.dtype}", path=name)
        return word

    def tensor(self, name: str) -> np.ndarray:
        """`name` as float32 of its stored shape; the only read of tensor bytes."""
        entry = self._entry(name)
        word = self._word(name, entry)
        words = np.empty((entry.end - entry.begin) // word.itemsize, dtype=word)
        if not read_exactly(self._files[entry.file], entry.begin, words.view(np.uint8)):
            raise self._malformed(f"{name}: the file ends early", entry.file, offset=entry.begin)
        if entry.dtype == "BF16":
            values = words.astype(np.uint16, copy=False).view(ml_dtypes.bfloat16)
            return values.astype(np.float32).reshape(entry.shape)  # exact, NaN payloads kept
        return words.astype(np.float32, copy=False).reshape(entry.shape)

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of `name` (first axis) as float32, reading only their bytes: the
        importers read the largest tensors a band at a time (spec/vqf.md §converter)."""
        entry = self._entry(name)
        word = self._word(name, entry)
        n = entry.shape[0] if entry.shape else 1
        assert 0 <= start <= stop <= n, "callers band the tensor's own shape"
        per_row = math.prod(entry.shape[1:])
        words = np.empty((stop - start) * per_row, dtype=word)
        at = entry.begin + start * per_row * word.itemsize
        if not read_exactly(self._files[entry.file], at, words.view(np.uint8)):
            raise self._malformed(f"{name}: the file ends early", entry.file, offset=at)
        shape = (stop - start, *entry.shape[1:])
        if entry.dtype == "BF16":
            return words.view(ml_dtypes.bfloat16).astype(np.float32).reshape(shape)
        return words.astype(np.float32, copy=False).reshape(shape)

    def _entry(self, name: str) -> Entry:
        found = self._entries.get(name)
        if found is None:
            raise NotFoundError(self.rules.missing_tensor, f"{name} is missing", path=name)
        return found

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._entries:
            raise KeyError(name)
        return self.tensor(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def safetensors_header(shapes: dict[str, tuple[int, ...]], metadata: dict[str, str]) -> bytes:
    """The safetensors prefix for float32 tensors stored in `shapes`' order, back to back: the
    8-byte little-endian length, then the JSON header padded with spaces to a multiple of 8 (as
    the safetensors format asks, so the data starts aligned): a writer streams the header
    first and then each tensor, as `dump --all` and the VQF -> Hugging Face export do."""
    entries: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for name, shape in shapes.items():
        end = offset + 4 * math.prod(shape)
        entries[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, end]}
        offset = end
    text = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text
