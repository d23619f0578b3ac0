"""A Hugging Face checkpoint's tensors, read lazily with the `safetensors` package (numpy mode).

Every *.safetensors file in the folder is opened once (memory-mapped by the library); a tensor
is read only when the importer asks for it, so a model is never in memory at once. Values come
back as float32: F32 as is, F16 and BF16 widened exactly (a bf16 word is the top half of a
binary32, ninfer-v3.md §3.2), which is what the codecs encode from. `ml_dtypes` is imported
so that safetensors can hand out BF16 arrays in numpy mode.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import TracebackType
from typing import Any

import ml_dtypes  # noqa: F401  (registers bfloat16 with numpy for safetensors' numpy mode)
import numpy as np
from safetensors import SafetensorError, safe_open

from weightfile.spec.errors import InvalidError, MalformedError, NotFoundError, UnsupportedError

SAFETENSORS_RULE = "qwen35.import.safetensors"
#: safetensors dtype names the importer widens exactly to float32.
FLOAT_DTYPES = ("F32", "F16", "BF16")


def read_json(folder: Path, name: str) -> dict[str, Any]:
    """A JSON object file of the checkpoint (config.json, ...), or a typed error naming it."""
    path = folder / name
    if not path.is_file():
        raise NotFoundError("qwen35.import.missing_file", f"{path} is missing", path=name)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidError("qwen35.import.config", f"{name}: {exc}", path=name) from None
    if not isinstance(value, dict):
        raise InvalidError("qwen35.import.config", f"{name} is not an object", path=name)
    return value


def widen(array: np.ndarray) -> np.ndarray:
    """float32 of an F32/F16/BF16 array, exactly."""
    if array.dtype == np.float32:
        return array
    if array.dtype == np.float16:
        return array.astype(np.float32)
    words = array.view(np.uint16).astype(np.uint32) << np.uint32(16)
    return words.view(np.float32)


class Checkpoint:
    """The tensors of every *.safetensors file in a folder, by name; use as a context manager."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        files = sorted(self.folder.glob("*.safetensors"))
        if not files:
            raise NotFoundError(
                "qwen35.import.missing_file", f"no *.safetensors in {self.folder}", path="."
            )
        self._stack = contextlib.ExitStack()
        self._where: dict[str, Any] = {}
        try:
            for f in files:
                handle = self._open(f)
                for name in handle.keys():  # noqa: SIM118 (a safe_open handle is not a dict)
                    if name in self._where:
                        raise InvalidError(
                            "qwen35.import.duplicate", f"{name} in two files", path=f.name
                        )
                    self._where[name] = (f.name, handle)
        except BaseException:
            self._stack.close()
            raise

    def _open(self, path: Path) -> Any:
        try:
            return self._stack.enter_context(safe_open(str(path), framework="np"))
        except (SafetensorError, OSError, ValueError) as exc:
            raise MalformedError(SAFETENSORS_RULE, str(exc), offset=0, path=path.name) from None

    @property
    def names(self) -> list[str]:
        return list(self._where)

    def shape(self, name: str) -> tuple[int, ...]:
        """The stored shape of `name` (read from the header, no data touched)."""
        _, handle = self._entry(name)
        return tuple(handle.get_slice(name).get_shape())

    def tensor(self, name: str) -> np.ndarray:
        """`name` as float32 of its stored shape."""
        file, handle = self._entry(name)
        dtype = handle.get_slice(name).get_dtype()
        if dtype not in FLOAT_DTYPES:
            raise UnsupportedError("qwen35.import.dtype", f"{name}: dtype {dtype}", path=name)
        try:
            array = handle.get_tensor(name)
        except (SafetensorError, ValueError, TypeError) as exc:
            raise MalformedError(SAFETENSORS_RULE, f"{name}: {exc}", path=file) from None
        return widen(np.ascontiguousarray(array))

    def _entry(self, name: str) -> tuple[str, Any]:
        found = self._where.get(name)
        if found is None:
            raise NotFoundError("qwen35.import.missing_tensor", f"{name} is missing", path=name)
        return found

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
