"""Reading a Hugging Face checkpoint folder: config.json and *.safetensors (vqf.md §8).

The safetensors format is an 8-byte little-endian header length, a JSON header mapping each
tensor name to {dtype, shape, data_offsets}, then the raw bytes. It is parsed here (no extra
dependency), and every length is checked against the file before anything is allocated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.spec.errors import InvalidError, MalformedError, NotFoundError, UnsupportedError

#: safetensors dtype -> (numpy dtype of the stored words, bytes per element)
DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}
MAX_HEADER = 100 * 1024 * 1024  # the format's own limit on the JSON header


def read_config(folder: Path) -> dict[str, Any]:
    """config.json as a dict; the text config of a multimodal checkpoint is not handled here."""
    path = folder / "config.json"
    if not path.is_file():
        raise NotFoundError("vqf.import.missing_file", f"{path} is missing", path="config.json")
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidError("vqf.import.config", f"config.json: {exc}", path="config.json") from None
    if not isinstance(cfg, dict):
        raise InvalidError("vqf.import.config", "config.json is not an object", path="config.json")
    return cfg


def bf16_to_f32(words: np.ndarray) -> np.ndarray:
    """bfloat16 words are the top half of a binary32: shift left by 16 (exact)."""
    return (words.astype(np.uint32) << 16).view(np.float32)


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of one .safetensors file as float32 (F32, F16 and BF16 widen exactly)."""
    data = path.read_bytes()
    where = path.name
    if len(data) < 8:
        raise MalformedError("vqf.import.safetensors", "shorter than 8 bytes", offset=0, path=where)
    n = int.from_bytes(data[:8], "little")
    if n > min(MAX_HEADER, len(data) - 8):
        raise MalformedError(
            "vqf.import.safetensors", f"header length {n} runs past the file", offset=0, path=where
        )
    try:
        header = json.loads(data[8 : 8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedError("vqf.import.safetensors", str(exc), offset=8, path=where) from None
    if not isinstance(header, dict):
        raise MalformedError(
            "vqf.import.safetensors", "header is not an object", offset=8, path=where
        )
    body = memoryview(data)[8 + n :]
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            out[name] = read_tensor(body, name, info, f"{where}:{name}", 8 + n)
    return out


def read_tensor(body: memoryview, name: str, info: Any, where: str, base: int) -> np.ndarray:
    """One header entry's bytes as float32 of its shape."""
    try:
        dtype, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    except (KeyError, TypeError, ValueError) as exc:
        raise MalformedError("vqf.import.safetensors", f"bad entry: {exc}", path=where) from None
    if dtype not in DTYPES:
        raise UnsupportedError("vqf.import.dtype", f"{name}: dtype {dtype}", path=where)
    word, size = DTYPES[dtype]
    if not (0 <= begin <= end <= len(body)) or end - begin != count * size:
        raise MalformedError(
            "vqf.import.safetensors",
            f"{name}: bytes [{begin}, {end}) do not hold {shape} {dtype}",
            offset=base + begin,
            path=where,
        )
    words = np.frombuffer(body[begin:end], dtype=word)
    values = bf16_to_f32(words) if dtype == "BF16" else words.astype(np.float32)
    return values.reshape(shape)


def read_state_dict(folder: Path) -> dict[str, np.ndarray]:
    """All tensors of every *.safetensors file in the folder (sharded checkpoints included)."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise NotFoundError("vqf.import.missing_file", f"no *.safetensors in {folder}", path=".")
    sd: dict[str, np.ndarray] = {}
    for f in files:
        for name, t in read_safetensors(f).items():
            if name in sd:
                raise InvalidError("vqf.import.duplicate", f"{name} in two shards", path=f.name)
            sd[name] = t
    return sd
