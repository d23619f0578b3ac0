"""`weightfile convert SRC DST`: which converter a (source kind, target kind) pair runs
(spec/vqf.md §7.7).

One table, `CONVERTERS`, maps the pair to a "module:function" converter, imported only when it
runs. A source kind is `hf/<model_type>` for a Hugging Face folder (its config.json's
model_type), else the container its magic names (`vqf`, `ninfer`, `gguf`); the target kind is
the destination's extension. An importer for another architecture is one more row.
Every converter takes (src, dst, options) and returns the paths it published.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from weightfile.fast.backend import FAST
from weightfile.ref.backend import Backend
from weightfile.spec.errors import UnsupportedError

from .vqf_plan import VQFPlan


@dataclass(frozen=True)
class ConvertOptions:
    """Everything a converter may use; each converter reads the fields of its target."""

    vqf: VQFPlan = field(default_factory=VQFPlan)
    ninfer_format: str = "bf16"
    overwrite: bool = False
    backend: Backend = FAST  # whose codecs encode: REFERENCE or FAST (the same bytes)
    passphrase: bytes | None = None
    sign_key: bytes | None = None
    #: called as each tensor is written: (its name, how many tensors the file has)
    progress: Callable[[str, int], None] | None = None
    requantize: bool = False  # GGUF: dequantize and quantize again what cannot be copied


Converter = Callable[[Path, Path, ConvertOptions], list[Path]]

#: (source kind, target kind) -> "module:function" of weightfile.convert. `hf/*` is any folder
#: no row of its own model_type names: its importer reports a config it cannot take.
CONVERTERS: dict[tuple[str, str], str] = {
    ("hf/qwen3", "vqf"): "weightfile.convert.dispatch:qwen3_hf_to_vqf",
    ("hf/qwen3_moe", "vqf"): "weightfile.convert.dispatch:qwen3_moe_hf_to_vqf",
    ("hf/qwen3_vl", "vqf"): "weightfile.convert.dispatch:qwen3_vl_hf_to_vqf",
    ("hf/*", "vqf"): "weightfile.convert.dispatch:qwen3_hf_to_vqf",
    ("hf/*", "ninfer"): "weightfile.convert.dispatch:qwen35_hf_to_ninfer",
    ("gguf/qwen3", "vqf"): "weightfile.convert.dispatch:qwen3_gguf_to_vqf",
    ("gguf/qwen3moe", "vqf"): "weightfile.convert.dispatch:qwen3moe_gguf_to_vqf",
    ("gguf/qwen3vl", "vqf"): "weightfile.convert.dispatch:refuse_gguf_vision",
    ("gguf/clip", "vqf"): "weightfile.convert.dispatch:refuse_gguf_vision",
    ("vqf", "gguf"): "weightfile.convert.dispatch:vqf_to_gguf",
}

#: A destination's extension -> its target kind.
TARGET_EXTENSIONS = {".vqf": "vqf", ".ninfer": "ninfer", ".gguf": "gguf"}
GGUF_MAGIC = b"GGUF"


def source_kind(src: Path) -> str:
    """`hf/<model_type>` for a folder (a missing model_type reads as qwen3, as `import` always
    did), else the container its first bytes name."""
    if src.is_dir() or not src.exists():  # a missing folder: the importer names what is absent
        try:
            cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "hf/qwen3"  # the importer reports the missing or broken config.json
        model_type = cfg.get("model_type") if isinstance(cfg, dict) else None
        return f"hf/{model_type or 'qwen3'}"
    with open(src, "rb") as fh:
        head = fh.read(4)
    if head == GGUF_MAGIC:
        return f"gguf/{gguf_architecture(src)}"
    from weightfile.formats import sniff

    return sniff(src)


def target_kind(dst: Path) -> str:
    """The target kind by the destination's extension."""
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


def qwen3_hf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A Hugging Face Qwen3 folder -> VQF (weightfile/convert/qwen3_vqf.py)."""
    from .qwen3_vqf import import_checkpoint

    path = import_checkpoint(
        src,
        dst,
        plan=options.vqf,
        overwrite=options.overwrite,
        backend=options.backend,
        passphrase=options.passphrase,
        sign_key=options.sign_key,
        progress=options.progress,
    )
    return [path]


#: The weight modes the family importers (Qwen3-MoE, Qwen3-VL) write, as their --qtype.
FAMILY_QTYPES = {"q8": "q8_0", "q4": "q4_0", "f32": "f32", "f16": "f16"}


def family_qtype_of(options: ConvertOptions, family: str) -> str:
    """The one-qtype importers take wmode q8/q4 (or f32/f16) with the default quantizer and
    embedding; the engine converter's other options are refused, not ignored."""
    p = options.vqf
    if p.wmode not in FAMILY_QTYPES or p.x8 or p.quantizer != "kestrel" or p.embedding != "f16":
        raise UnsupportedError(
            "vqf.import.option",
            f"{family}: only --wmode q8|q4|f32|f16 with the default quantizer and embedding",
        )
    return FAMILY_QTYPES[p.wmode]


def family_hf_to_vqf(importer: str, family: str) -> Converter:
    """A converter for a family importer taking (folder, out, qtype=, layout=, ...): the
    Qwen3-MoE and Qwen3-VL importers, which write one weight mode."""

    def convert(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
        module, name = importer.split(":")
        path = getattr(import_module(module), name)(
            src,
            dst,
            qtype=family_qtype_of(options, family),
            layout=options.vqf.layout,
            overwrite=options.overwrite,
            backend=options.backend,
            passphrase=options.passphrase,
            sign_key=options.sign_key,
        )
        return [path]

    return convert


#: A Hugging Face Qwen3-MoE folder -> a version-3 VQF (weightfile/convert/qwen3_moe_vqf.py).
qwen3_moe_hf_to_vqf = family_hf_to_vqf(
    "weightfile.convert.qwen3_moe_vqf:import_qwen3_moe", "Qwen3-MoE"
)
#: A Hugging Face Qwen3-VL folder -> VQF with VISION (weightfile/convert/qwen3_vl_vqf.py).
qwen3_vl_hf_to_vqf = family_hf_to_vqf(
    "weightfile.convert.qwen3_vl_vqf:import_vl_checkpoint", "Qwen3-VL"
)


def qwen35_hf_to_ninfer(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A Hugging Face Qwen3.5 folder -> a `.ninfer` file set (weightfile/convert/qwen35_ninfer.py);
    the `.ninfer` writer never replaces a file set (spec/ninfer3.md §1.7)."""
    from .qwen35_ninfer import import_checkpoint

    if options.overwrite:
        raise UnsupportedError(
            "qwen35.import.force", "--force is VQF only; remove the .ninfer file set first"
        )
    if options.passphrase is not None or options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--encrypt and --sign-key are for VQF files")
    return import_checkpoint(src, dst, fmt=options.ninfer_format, backend=options.backend)


def gguf_architecture(src: Path) -> str:
    """general.architecture of a GGUF file (vqf.import.gguf when gguf-py cannot read it)."""
    from .gguf_qwen3 import GGUFState, metadata

    return str(metadata(GGUFState(src).reader).get("general.architecture", "unknown"))


def _gguf_importer_to_vqf(importer, src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """One GGUF importer of weightfile/convert/ with the convert options every one of them takes."""
    path = importer(
        src,
        dst,
        plan=options.vqf,
        overwrite=options.overwrite,
        backend=options.backend,
        requantize=options.requantize,
        passphrase=options.passphrase,
        sign_key=options.sign_key,
        progress=options.progress,
    )
    return [path]


def qwen3_gguf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A llama.cpp qwen3 GGUF file -> VQF, copying Q8_0/Q4_0 blocks
    (weightfile/convert/gguf_qwen3.py)."""
    from .gguf_qwen3 import import_gguf

    return _gguf_importer_to_vqf(import_gguf, src, dst, options)


def vqf_to_gguf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A dense Qwen3 VQF file -> a llama.cpp qwen3 GGUF file (weightfile/convert/vqf_gguf.py)."""
    from .vqf_gguf import export_gguf

    if options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--sign-key is for VQF targets")
    path = export_gguf(
        src,
        dst,
        overwrite=options.overwrite,
        backend=options.backend,
        passphrase=options.passphrase,
        progress=options.progress,
    )
    return [path]


def qwen3moe_gguf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A llama.cpp qwen3moe GGUF file -> a version-3 VQF, copying Q8_0/Q4_0 blocks
    (weightfile/convert/gguf_qwen3_moe.py)."""
    from .gguf_qwen3_moe import import_gguf_moe

    return _gguf_importer_to_vqf(import_gguf_moe, src, dst, options)


def refuse_gguf_vision(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """GGUF Qwen3-VL (qwen3vl text + clip mmproj) -> VQF is not written (spec/vqf.md §7.7)."""
    raise UnsupportedError(
        "vqf.import.source",
        f"{src.name}: a Qwen3-VL GGUF does not convert to VQF: llama.cpp splits the model into a "
        "text GGUF and an mmproj (clip) GGUF, and VQF's VISION tensors (spec/vqf.md §7.4) "
        "would have to be joined from both; convert the Hugging Face folder instead",
    )


def describe_pair(src: Path, dst: Path) -> tuple[str, str]:
    """(source kind, target kind), for messages."""
    s, t, _ = converter_for(src, dst)
    return s, t


__all__: list[Any] = ["CONVERTERS", "ConvertOptions", "convert", "converter_for"]
