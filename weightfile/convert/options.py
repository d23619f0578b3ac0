"""What every converter takes (`ConvertOptions`) and the helpers the family converters share
(spec/vqf.md §converter).

Below both the convert dispatch (`dispatch.py`, which reads the family registry) and the family
folders' converters (`weightfile/families/<family>/importers.py`), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path

from weightfile.fast.backend import FAST
from weightfile.ref.backend import Backend
from weightfile.spec.errors import UnsupportedError

from .vqf_plan import VQFPlan


@dataclass(frozen=True)
class ConvertOptions:
    """Everything a converter may use; each converter reads the fields of its target."""

    vqf: VQFPlan = field(default_factory=VQFPlan)
    #: .ninfer: every matrix's format; None: bf16 text matrices, the official vision formats
    ninfer_format: str | None = None
    overwrite: bool = False
    backend: Backend = FAST  # whose codecs encode: REFERENCE or FAST (the same bytes)
    passphrase: bytes | None = None
    sign_key: bytes | None = None
    #: called as each tensor is written: (its name, how many tensors the file has)
    progress: Callable[[str, int], None] | None = None
    requantize: bool = False  # GGUF: dequantize and quantize again what cannot be copied
    #: .ninfer: globs of the matrices stored Hadamard-rotated, and the seed of their signs
    #: (weightfile/families/qwen35/to_ninfer_hadamard.py)
    hadamard: tuple[str, ...] = ()
    hadamard_seed: int = 0
    #: .ninfer: a spec/ninfer3.md §recipes recipe name, and the proposal head's frequency list
    #: and row count (weightfile/families/qwen35/to_ninfer_mtp.py)
    recipe: str | None = None
    proposal_ids: Path | None = None
    proposal_rows: int | None = None
    #: VQF -> GGUF: the projection set to export (q4 or q8); None: the file's only one
    gguf_projections: str | None = None
    #: VQF -> GGUF: where a VISION file's tower goes (llama.cpp's projector GGUF); None: refused
    mmproj: Path | None = None


Converter = Callable[[Path, Path, ConvertOptions], list[Path]]


#: The weight modes the family importers (Qwen3-MoE, Qwen3-VL) write, as their --qtype.
FAMILY_QTYPES = {"q8": "q8_0", "q4": "q4_0", "f32": "f32", "f16": "f16"}


def family_qtype_of(options: ConvertOptions, family: str) -> str:
    """The one-qtype importers take wmode q8/q4 (or f32/f16) with the default quantizer and the
    embedding the weight mode implies (f32 for wmode f32, which `VQFPlan` switches to; f16
    otherwise); the engine converter's other options are refused, not ignored."""
    p = options.vqf
    embedding = "f32" if p.wmode == "f32" else "f16"
    if p.wmode not in FAMILY_QTYPES or p.x8 or p.quantizer != "kestrel" or p.embedding != embedding:
        raise UnsupportedError(
            "vqf.import.option",
            f"{family}: only --wmode q8|q4|f32|f16 with the default quantizer and embedding "
            "(an f32 embedding comes with --wmode f32 only)",
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


def gguf_importer_to_vqf(
    importer: Callable[..., Path], src: Path, dst: Path, options: ConvertOptions
) -> list[Path]:
    """One GGUF importer (weightfile/families/*/from_gguf.py) with the convert options every one
    of them takes."""
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
