"""The Qwen3.5 family's converter as the convert dispatch runs it, (src, dst, ConvertOptions) ->
the published paths (weightfile/convert/dispatch.py; spec/ninfer3.md §qwen35-text)."""

from __future__ import annotations

from pathlib import Path

from weightfile.convert.options import ConvertOptions
from weightfile.spec.errors import UnsupportedError


def hf_to_ninfer(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A Hugging Face Qwen3.5 folder -> a `.ninfer` file set
    (weightfile/families/qwen35/to_ninfer.py); --force replaces an existing set's regular files
    (spec/ninfer3.md §writer)."""
    from .to_ninfer import import_checkpoint

    if options.passphrase is not None or options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--encrypt and --sign-key are for VQF files")
    return import_checkpoint(
        src,
        dst,
        fmt=options.ninfer_format,
        backend=options.backend,
        hadamard=options.hadamard,
        hadamard_seed=options.hadamard_seed,
        overwrite=options.overwrite,
        recipe=options.recipe,
        proposal_ids=options.proposal_ids,
        proposal_rows=options.proposal_rows,
    )


def gguf_to_ninfer(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A llama.cpp qwen35 / qwen35moe GGUF file -> `.ninfer` (weightfile/families/qwen35/
    from_gguf.py, spec/ninfer3.md §qwen35-gguf); --requantize for blocks no format shares."""
    from .from_gguf import import_gguf

    refuse_vqf_options(options)
    given = [
        o for o, v in (("--format", options.ninfer_format), ("--recipe", options.recipe),
                       ("--proposal-ids", options.proposal_ids), ("--hadamard", options.hadamard))
        if v
    ]  # fmt: skip
    if given:
        raise UnsupportedError(
            "vqf.import.option",
            f"{', '.join(given)}: a GGUF source keeps its own blocks (Q8_0 -> q8_g32_fp16, BF16 "
            "-> bf16; --requantize for the rest)",
        )
    return import_gguf(
        src, dst, backend=options.backend, requantize=options.requantize,
        overwrite=options.overwrite,
    )  # fmt: skip


def ninfer_to_gguf(src: Path, dst: Path, options: ConvertOptions) -> list[Path]:
    """A Qwen3.5 `.ninfer` file -> a llama.cpp GGUF file (weightfile/families/qwen35/to_gguf.py,
    spec/ninfer3.md §qwen35-gguf)."""
    from .to_gguf import export_gguf

    refuse_vqf_options(options)
    return [export_gguf(src, dst, overwrite=options.overwrite, requantize=options.requantize)]


def refuse_vqf_options(options: ConvertOptions) -> None:
    if options.passphrase is not None or options.sign_key is not None:
        raise UnsupportedError("vqf.import.option", "--encrypt and --sign-key are for VQF files")
