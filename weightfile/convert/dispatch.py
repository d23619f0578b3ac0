"""`weightfile convert SRC DST`: which converter a (source kind, target kind) pair runs
(spec/vqf.md §converter).

One table, `CONVERTERS`, maps the pair to a "module:function" converter, imported only when it
runs. A source kind is `hf/<model_type>` for a Hugging Face folder (its config.json's
model_type), `gguf/<general.architecture>` for a GGUF file, else the container its magic names
(`vqf`, `ninfer`); the target kind is the destination's extension. The table is derived: every
family's importers come from its row of the family registry (weightfile/families/registry.py,
`Family.importers`, the converters in `weightfile/families/<family>/importers.py`); the one
format-level converter, VQF -> GGUF, is declared here. An importer for another architecture is
one more entry in its family's row. Every converter takes (src, dst, options) and returns the
paths it published; `options.py` holds the options and the helpers the family converters
share.
"""

from __future__ import annotations

import os
from importlib import import_module
from pathlib import Path
from typing import Any

from weightfile.families import importers
from weightfile.ref.fileio import open_regular
from weightfile.spec.errors import NotFoundError, UnsupportedError, WeightfileError
from weightfile.spec.ninfer3.text_config import MODEL_TYPES as QWEN35_MODEL_TYPES

from .checkpoint import read_regular
from .config_values import strict_json
from .options import Converter, ConvertOptions

#: The converters no family owns: VQF -> GGUF exports a dense or a MoE file (vqf_gguf.py).
FORMAT_CONVERTERS: dict[tuple[str, str], str] = {
    ("vqf", "gguf"): "weightfile.convert.dispatch:vqf_to_gguf",
}
#: (source kind, target kind) -> "module:function": the family rows' importers, then the
#: format-level converters. `hf/*` is any folder no row of its own model_type names: its
#: importer reports a config it cannot take.
CONVERTERS: dict[tuple[str, str], str] = {**importers(), **FORMAT_CONVERTERS}

#: A destination's extension -> its target kind.
TARGET_EXTENSIONS = {".vqf": "vqf", ".ninfer": "ninfer", ".gguf": "gguf"}
#: The target kind of a destination without an extension: a checkpoint folder.
HF_TARGET = "hf"

GGUF_MAGIC = b"GGUF"


def source_kind(src: Path) -> str:
    """`hf/<model_type>` for a folder (a missing model_type reads as qwen3, as `import` always
    did), else the container its first bytes name."""
    if src.is_dir() or not src.exists():  # a missing folder: the importer names what is absent
        try:  # a regular file only, opened without blocking: a FIFO is refused, not waited on
            data = read_regular(src / "config.json")
            cfg = strict_json(data.decode("utf-8")) if data is not None else None
        except (OSError, ValueError, RecursionError):
            return "hf/qwen3"  # the importer reports the missing or broken config.json
        model_type = cfg.get("model_type") if isinstance(cfg, dict) else None
        return f"hf/{model_type or 'qwen3'}"
    fd, _ = open_regular(src)  # a FIFO or a device is refused, not read from
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(4)
    if head == GGUF_MAGIC:
        return f"gguf/{gguf_architecture(src)}"
    from weightfile.formats import sniff

    return sniff(src)


def is_qwen35_folder(src: Path) -> bool:
    """A folder whose config.json (or its text_config) names a Qwen3.5 text model_type
    (spec/ninfer3.md §qwen35-config), or the multimodal wrapper's qwen3_5 / qwen3_5_moe."""
    try:
        data = read_regular(src / "config.json")  # never a FIFO's open (issue 35's hang)
        cfg = strict_json(data.decode("utf-8")) if data is not None else None
    except (OSError, ValueError, WeightfileError):
        return False
    if not isinstance(cfg, dict):
        return False
    text = cfg.get("text_config")
    types = {cfg.get("model_type"), text.get("model_type") if isinstance(text, dict) else None}
    wrappers = {t.removesuffix("_text") for t in QWEN35_MODEL_TYPES.values()}
    return bool(types & (set(QWEN35_MODEL_TYPES.values()) | wrappers))


def target_kind(dst: Path) -> str:
    """The target kind by the destination's extension; a folder (no extension) is `hf`."""
    if dst.suffix == "":  # a folder: a Hugging Face checkpoint
        return HF_TARGET
    kind = TARGET_EXTENSIONS.get(dst.suffix.lower())
    if kind is None:
        raise UnsupportedError(
            "vqf.import.source",
            f"{dst.name}: the destination needs one of the extensions "
            f"{', '.join(sorted(TARGET_EXTENSIONS))}",
            path="dst",
        )
    return kind


def converter_for(src: Path, dst: Path) -> tuple[str, str, Converter]:
    """The source kind, target kind and converter of one conversion."""
    pair = (source_kind(src), target_kind(dst))
    if pair[0].startswith("hf/") and pair[1] != "ninfer" and is_qwen35_folder(src):
        # hf/* -> vqf is the Qwen3 importer, which would call the checkpoint broken
        raise NotFoundError(
            "vqf.import.target",
            f"{src} is a Qwen3.5 checkpoint ({pair[0]}): it converts to .ninfer, not "
            f".{pair[1]} (give DST a .ninfer name)",
            path="dst",
        )
    ref = CONVERTERS.get(pair)
    if ref is None and pair[0].startswith("hf/"):
        ref = CONVERTERS.get(("hf/*", pair[1]))
    if ref is None:
        known = ", ".join(f"{s} -> {t}" for s, t in CONVERTERS)
        raise UnsupportedError(
            "vqf.import.source", f"no converter from {pair[0]} to {pair[1]} (known: {known})"
        )
    module, name = ref.split(":")
    return (*pair, getattr(import_module(module), name))


def convert(
    src: str | os.PathLike[str], dst: str | os.PathLike[str], options: ConvertOptions
) -> list[Path]:
    """Run the converter of the pair (src, dst); returns the published paths."""
    _, _, run = converter_for(Path(src), Path(dst))
    return run(Path(src), Path(dst), options)


def gguf_architecture(src: Path) -> str:
    """general.architecture of a GGUF file (vqf.import.gguf when gguf-py cannot read it)."""
    from weightfile.families.qwen3.from_gguf import GGUFState, metadata

    return str(metadata(GGUFState(src).reader).get("general.architecture", "unknown"))


def vqf_to_gguf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A dense Qwen3 VQF file -> a llama.cpp qwen3 GGUF file (weightfile/convert/vqf_gguf.py);
    with `options.mmproj`, a VISION file's tower -> llama.cpp's projector GGUF there
    (weightfile/convert/vqf_mmproj.py), checked and written before the text file."""
    from weightfile.ref.staging import check_output

    from .vqf_gguf import export_gguf
    from .vqf_mmproj import export_mmproj

    if options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--sign-key is for VQF targets")
    extra = []
    if options.mmproj is not None:
        check_output(dst, options.overwrite, "vqf.writer.destination")  # both, before any work
        extra.append(export_mmproj(
            src, options.mmproj, overwrite=options.overwrite, passphrase=options.passphrase,
            progress=options.progress,
        ))  # fmt: skip
    path = export_gguf(
        src,
        dst,
        overwrite=options.overwrite,
        backend=options.backend,
        passphrase=options.passphrase,
        progress=options.progress,
        projection_set=options.gguf_projections,
        mmproj=options.mmproj is not None,
    )
    return [path, *extra]


__all__: list[Any] = ["CONVERTERS", "ConvertOptions", "convert", "converter_for"]
