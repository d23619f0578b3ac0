"""The Qwen3 family's converters as the convert dispatch runs them, (src, dst, ConvertOptions)
-> the published paths (weightfile/convert/dispatch.py; spec/vqf.md §converter, §arch-semantics)."""

from __future__ import annotations

from pathlib import Path

from weightfile.convert.options import ConvertOptions, gguf_importer_to_vqf


def hf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A Hugging Face Qwen3 folder -> VQF (weightfile/families/qwen3/to_vqf.py)."""
    from .to_vqf import import_checkpoint

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


def gguf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A llama.cpp qwen3 GGUF file -> VQF, copying Q8_0/Q4_0 blocks
    (weightfile/families/qwen3/from_gguf.py)."""
    from .from_gguf import import_gguf

    return gguf_importer_to_vqf(import_gguf, src, dst, options)


def vqf_to_vqf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A dense Qwen3 VQF file -> VQF in another weight mode or layout: blocks copied where the
    codec stays, requantized only with --requantize (weightfile/families/qwen3/from_vqf.py)."""
    from .from_vqf import convert_vqf

    return gguf_importer_to_vqf(convert_vqf, src, dst, options)


def vqf_to_hf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A dense Qwen3 VQF file -> a Hugging Face checkpoint folder of its dequantized weights
    (weightfile/families/qwen3/from_vqf.py)."""
    from weightfile.spec.errors import UnsupportedError

    from .from_vqf import export_hf

    if options.passphrase is not None or options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--encrypt and --sign-key are for VQF files")
    return export_hf(
        src, dst, overwrite=options.overwrite, backend=options.backend, progress=options.progress
    )
