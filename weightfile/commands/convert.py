"""`weightfile convert SRC DST [options]`: one command for every conversion (spec/vqf.md
§converter).

The source kind comes from SRC (a Hugging Face folder's model_type, else the file's magic), the
target kind from DST's extension; `weightfile.convert.dispatch.CONVERTERS` says which converter
runs. VQF options: --wmode, --layout, --x8, --quantizer, --embedding; `.ninfer`: --format,
--hadamard PARAM_GLOB (repeatable) and --hadamard-seed. The
tensors are read, encoded and written one at a time, the file is published atomically (--force
replaces one), and a VQF target ends with the line of `verify --engine-defaults`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from weightfile.backends import ENGINES, backend_named

from ._common import UsageError, add_passphrase_argument

NINFER_FORMATS = ("bf16", "q4_g64_fp16", "q5_g64_fp16", "q6_g64_fp16", "q8_g32_fp16")


#: import's --qtype spelling -> the weight mode it names (spec/vqf.md §converter); both commands
#: take both spellings.
WMODE_OF_QTYPE = {"f32": "f32", "f16": "f16", "q8_0": "q8", "q4_0": "q4"}

#: The weight mode when neither --wmode nor --qtype is given.
DEFAULT_WMODE = "q8"


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "convert",
        help="convert between Hugging Face folders, GGUF, VQF and .ninfer (format by "
        "magic/extension)",
        description=(
            "Convert SRC to DST. SRC is a Hugging Face checkpoint folder (config.json, "
            "*.safetensors), a GGUF file (llama.cpp qwen3, qwen3moe, qwen35 or qwen35moe), a "
            "VQF or a .ninfer file; DST's extension names the target: .vqf, .ninfer (Qwen3.5 "
            "checkpoints and GGUF files), .gguf (from a VQF or a Qwen3.5 .ninfer file), or none: "
            "a Hugging Face checkpoint folder (from a dense Qwen3 VQF "
            "file, its weights dequantized to float32). VQF files are written as the engine's "
            "converter writes them: weight mode, repack gates per matrix, x8 copies, quantizer "
            "generation and embedding type (bpw: stored bits per projection weight, as "
            "llama-quantize counts them)."
        ),
    )
    parser.add_argument("src", type=Path, help="the checkpoint folder or file to convert")
    parser.add_argument(
        "dst", type=Path, help="the file to write (.vqf, .ninfer or .gguf), or a folder (no "
        "extension: a Hugging Face checkpoint)"
    )  # fmt: skip
    add_conversion_arguments(parser)
    parser.set_defaults(run=run)


def add_conversion_arguments(parser: argparse.ArgumentParser) -> None:
    """Every option of `convert`, which `import` shares spelling for spelling
    (spec/vqf.md §converter)."""
    from weightfile.convert.vqf_plan import EMBEDDINGS, LAYOUTS, QUANTIZERS, WMODES, wmode_help

    parser.add_argument(
        "--wmode", choices=WMODES, default=None,
        help=f"VQF weight mode: default {DEFAULT_WMODE}, from a GGUF source the mode of its "
        "blocks (Q4_0 -> q4, Q8_0 -> q8), a VQF source keeps its own; with a .gguf destination "
        f"q4 or q8 chooses the projection set of a dual VQF file. {wmode_help()}",
    )  # fmt: skip
    parser.add_argument(
        "--qtype", choices=tuple(WMODE_OF_QTYPE), default=None,
        help="the same as --wmode in import's spelling: q8_0 = q8, q4_0 = q4, f32, f16",
    )  # fmt: skip
    parser.add_argument(
        "--layout", choices=LAYOUTS, default="tiled",
        help="tiled: blocks interleaved in row groups as the engine's repack gates allow (a "
        "default engine loads it); legacy: plain row-major blocks; the same bpw either way",
    )  # fmt: skip
    parser.add_argument(
        "--x8", action="store_true", help="wmode q4: also the x8_* copies (Q4_0 in 8-row tiles, "
        "+4.5 bpw) and X8; no default engine loads such a file"
    )  # fmt: skip
    parser.add_argument(
        "--quantizer", choices=QUANTIZERS, default="kestrel",
        help="quantizer generation: kestrel, the current engine converter's (f16 scales "
        "rounded to nearest even); kestrel_legacy, older builds' (truncated f16 scales, "
        "division-based Q8 codes); decoding does not depend on it",
    )  # fmt: skip
    parser.add_argument(
        "--embedding", choices=EMBEDDINGS, default="f16",
        help="token_embed as binary16 (16 bpw, EMB_F16) or binary32 (32 bpw)",
    )  # fmt: skip
    parser.add_argument(
        "--requantize", action="store_true",
        help="GGUF source: dequantize and quantize again the tensors whose blocks cannot be "
        "copied (K-quants, or Q8_0 into a q4 family); without it they are refused",
    )  # fmt: skip
    parser.add_argument(
        "--mmproj", type=Path, default=None, metavar="PATH",
        help="a VISION VQF file into .gguf: also write its vision tower as llama.cpp's "
        "projector GGUF (clip, qwen3vl_merger) at PATH, Q8_0 blocks copied; without it such a "
        "file is refused",
    )  # fmt: skip
    add_common_arguments(parser)


def resolve_wmode(args: argparse.Namespace) -> str | None:
    """The weight mode --wmode or --qtype names; None when neither is given (`chosen_wmode`)."""
    named = None if args.qtype is None else WMODE_OF_QTYPE[args.qtype]
    if args.wmode is not None and named is not None and args.wmode != named:
        raise UsageError(f"--wmode {args.wmode} and --qtype {args.qtype} name different modes")
    return args.wmode or named


def recipe_names() -> list[str]:
    from weightfile.spec.ninfer3.recipes import RECIPES

    return sorted(RECIPES)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=NINFER_FORMATS, default=None,
        help=".ninfer only: every matrix's format, text and vision (norms stay bf16, GDN gates "
        "fp32; default: bf16 text matrices, the official formats for the vision tower)",
    )  # fmt: skip
    parser.add_argument(
        "--recipe", choices=tuple(recipe_names()), default=None,
        help=".ninfer only: a named per-parameter format table and packing (spec/ninfer3.md "
        "§recipes), e.g. qwen3_6_27b, the official Qwen3.6-27B one; --format still sets every "
        "matrix's format when given",
    )  # fmt: skip
    parser.add_argument(
        "--proposal-ids", type=Path, default=None, metavar="FILE",
        help=".ninfer only: build the proposal head from this token-frequency list (one decimal "
        "id per line, most frequent first; special ids are always included); needs MTP weights",
    )  # fmt: skip
    parser.add_argument(
        "--proposal-rows", type=int, default=None, metavar="R",
        help="the proposal head's row count (with --proposal-ids)",
    )  # fmt: skip
    parser.add_argument(
        "--hadamard", action="append", default=[], metavar="PARAM_GLOB",
        help=".ninfer only (repeatable): store the matching matrices (canonical names, e.g. "
        "'text/output_head', 'text/layers/*/mlp/*' or 'vision/layers/*/mlp/fc2') rotated, "
        "W·(HD)^T, with seeded hadamard_signs on their Uses; K must be a multiple of 1024",
    )  # fmt: skip
    parser.add_argument(
        "--hadamard-seed", type=int, default=0, metavar="N",
        help="the seed of the --hadamard signs (spec/ninfer3.md §qwen35-hadamard-import)",
    )  # fmt: skip
    parser.add_argument(
        "--force", action="store_true", help="replace an existing DST (a regular file only)"
    )
    parser.add_argument(
        "--engine", choices=ENGINES, default="fast", help="which codecs encode (same bytes)"
    )
    parser.add_argument(
        "--encrypt",
        action="store_true",
        help="VQF only: publish the file SM4-CTR encrypted (passphrase as for encrypt)",
    )
    parser.add_argument(
        "--vocab-bin", action="store_true",
        help="VQF from a Hugging Face folder: also write the board engine's tokenizer file, "
        "vocab.bin, beside DST from SRC's tokenizer.json (spec/vqf.md §vocab-bin; --force "
        "replaces it)",
    )  # fmt: skip
    add_passphrase_argument(parser)
    parser.add_argument(
        "--sign-key",
        type=Path,
        metavar="KEYFILE",
        help="VQF only: publish the file SM2-signed with this key (weightfile keygen)",
    )


def run(args: argparse.Namespace) -> int:
    return run_conversion("convert", args.src, args.dst, args, resolve_wmode(args))


def chosen_wmode(wmode: str | None, source: str, target: str, src: Path) -> str | None:
    """The weight mode a conversion uses: the one given; else, into VQF, the mode a GGUF
    source's blocks copy into (`natural_wmode`) or q8. Into GGUF it only chooses the projection
    set of a dual file, so only q4 and q8 are taken there."""
    if target == "gguf":
        if wmode not in (None, "q4", "q8"):
            raise UsageError(
                "with a .gguf destination --wmode chooses the projection set: q4 or q8"
            )
        return wmode
    if wmode is not None:
        return wmode
    if source == "vqf" and target == "vqf":  # a relayout keeps the source's mode
        from weightfile.families.qwen3.from_vqf import wmode_of

        return wmode_of(src)
    if source.startswith("gguf/") and target == "vqf":
        from weightfile.families.qwen3.from_gguf import natural_wmode

        return natural_wmode(src)
    return "q8"


def check_target_options(args: argparse.Namespace, target: str, wmode: str) -> None:
    """Options that only one kind of destination takes (a usage error otherwise)."""
    if (args.encrypt or args.sign_key is not None) and target != "vqf":
        raise UsageError("--encrypt and --sign-key are for VQF files")
    for option in ("hadamard", "recipe", "proposal_ids", "proposal_rows"):
        if getattr(args, option, None) and target != "ninfer":
            raise UsageError(f"--{option.replace('_', '-')} is for .ninfer files")
    if args.x8 and wmode != "q4":
        raise UsageError(f"--x8 is an option of --wmode q4, not {wmode}")
    if getattr(args, "vocab_bin", False) and target != "vqf":
        raise UsageError("--vocab-bin is for VQF files")
    if getattr(args, "mmproj", None) is not None and target != "gguf":
        raise UsageError("--mmproj is for a .gguf destination (a VISION VQF source)")


def vocab_bin_paths(src: Path, dst: Path, force: bool) -> tuple[Path, Path]:
    """(SRC's tokenizer.json, DST's vocab.bin), both checked before the conversion runs."""
    from weightfile.spec.errors import NotFoundError

    from ._common import check_destination

    tokenizer = src / "tokenizer.json" if src.is_dir() else src
    if not tokenizer.is_file() or tokenizer.name != "tokenizer.json":
        raise NotFoundError(
            "frontend.tokenizer.missing", f"--vocab-bin needs {src}/tokenizer.json", path=str(src)
        )
    out = dst.parent / "vocab.bin"
    check_destination(out, force)
    return tokenizer, out


def write_vocab_bin(tokenizer: Path, out: Path, force: bool) -> Path:
    """spec/vqf.md §vocab-bin-text the table of `tokenizer`, as the engine's build script
    would write it; an unreadable tokenizer.json is frontend.tokenizer.invalid."""
    import json

    from weightfile.ref.vqf.vocab_bin import vocab_from_tokenizer_json
    from weightfile.ref.vqf.vocab_bin import write_vocab_bin as write
    from weightfile.spec.errors import InvalidError

    try:
        table = vocab_from_tokenizer_json(json.loads(tokenizer.read_bytes()))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidError(
            "frontend.tokenizer.invalid", f"{tokenizer}: no byte-level vocabulary ({exc})",
            path=str(tokenizer),
        ) from None  # fmt: skip
    write(out, table, overwrite=force)
    return out


def run_conversion(
    command: str, src: Path, dst: Path, args: argparse.Namespace, wmode: str | None
) -> int:
    """Convert src to dst with the parsed options; print what was written."""
    from weightfile.convert.dispatch import ConvertOptions, converter_for
    from weightfile.convert.vqf_plan import VQFPlan
    from weightfile.fast.vqf.protect_write import read_private_key
    from weightfile.formats import sniff
    from weightfile.progress import TensorBar

    from ._common import passphrase
    from .protect import need_passphrase

    source, target, converter = converter_for(src, dst)
    chosen = chosen_wmode(wmode, source, target, src)
    # into GGUF --wmode names the projection set to export; the VQF plan is then unused
    export_set, wmode = (chosen, "q8") if target == "gguf" else (None, chosen or "q8")
    check_target_options(args, target, wmode)
    plan = VQFPlan(
        wmode=wmode,
        layout=args.layout,
        x8=args.x8,
        quantizer=args.quantizer,
        embedding=args.embedding,
    )
    # the keys first: a missing passphrase or a bad key file must not cost a conversion
    key = need_passphrase(command, args) if args.encrypt else None
    if target == "gguf" and sniff(src) == "vqf":
        key = passphrase(args)  # reading an encrypted source needs its passphrase
    sign_key = None if args.sign_key is None else read_private_key(args.sign_key)
    bar = TensorBar(command, enabled=False if args.quiet else None)
    options = ConvertOptions(
        vqf=plan,
        ninfer_format=args.format,
        overwrite=args.force,
        backend=backend_named(args.engine),
        passphrase=key,
        sign_key=sign_key,
        progress=bar,
        requantize=getattr(args, "requantize", False),
        hadamard=tuple(getattr(args, "hadamard", ())),
        hadamard_seed=getattr(args, "hadamard_seed", 0),
        gguf_projections=export_set,
        recipe=getattr(args, "recipe", None),
        proposal_ids=getattr(args, "proposal_ids", None),
        proposal_rows=getattr(args, "proposal_rows", None),
        mmproj=getattr(args, "mmproj", None),
    )
    vocab = vocab_bin_paths(src, dst, args.force) if getattr(args, "vocab_bin", False) else None
    try:
        paths = converter(src, dst, options)
    finally:
        bar.close()
    vocab_out = write_vocab_bin(*vocab, args.force) if vocab is not None else None
    report_conversion(src, paths, (source, target), describe(target, plan, args), key, vocab_out)
    return 0


def report_conversion(
    src: Path,
    paths: list[Path],
    kinds: tuple[str, str],
    how: str,
    key: bytes | None,
    vocab: Path | None,
) -> None:
    """The lines `convert` prints: what was written (the files beside DST in parentheses), the
    engine-defaults answer of a VQF target, the notes of a VQF -> GGUF export."""
    source, target = kinds
    listed = target == "hf" or (target == "gguf" and len(paths) > 1)  # the mmproj beside it
    more = extra(paths) if not listed else f" (+ {', '.join(p.name for p in paths[1:])})"
    more += f" (+ {vocab.name})" if vocab is not None else ""
    how = ", blocks copied" if source.startswith("gguf/qwen35") else how
    print(f"{src} -> {paths[0]} [{source} -> {target}{how}]{more}")
    print_notes(src, paths[0], source, target, key)


def print_notes(src: Path, out: Path, source: str, target: str, key: bytes | None) -> None:
    """After the summary line: how the engine loads a written VQF; what a VQF -> GGUF export
    changed."""
    if target == "vqf":
        print(f"engine: {engine_line(out)}")
    if target == "gguf" and source == "vqf":
        for note in gguf_notes(src, key):
            print(f"note: {note}")


def gguf_notes(src: Path, key: bytes | None) -> list[str]:
    """What a VQF -> GGUF export changed, from the source's flags (vqf_gguf.export_notes)."""
    from weightfile.convert.vqf_gguf import export_notes
    from weightfile.ref.vqf.read import open_vqf

    with open_vqf(src) as vqf:  # the header suffices; no decryption
        return export_notes(vqf.header.flags)


def describe(target: str, plan: Any, args: argparse.Namespace) -> str:
    if target != "vqf":
        if target != "ninfer":
            return ""
        recipe = getattr(args, "recipe", None)
        return f", {args.format or (f'recipe {recipe}' if recipe else 'bf16')}"
    parts = [f"wmode {plan.wmode}", plan.layout]
    parts += ["x8"] * plan.x8 + [plan.quantizer] * (plan.quantizer != "kestrel")
    parts += ["f32 embedding"] * (plan.embedding == "f32" and plan.wmode != "f32")
    parts += ["encrypted"] * bool(args.encrypt) + ["signed"] * (args.sign_key is not None)
    return ", " + ", ".join(parts)


def extra(paths: list[Path]) -> str:
    from weightfile.frontend.tokenizer import sidecar_path

    if len(paths) > 1:
        return f" (+ {len(paths) - 1} continuation file(s))"
    side = sidecar_path(paths[0])
    return f" (+ {side.name})" if paths[0].suffix == ".vqf" and side.exists() else ""


def engine_line(path: Path) -> str:
    """The summary of spec/vqf.md §engine-defaults for the file just written."""
    from weightfile.ref.vqf.engine_load import engine_load_file
    from weightfile.ref.vqf.read import open_vqf

    with open_vqf(path) as vqf:  # the header and directory suffice; no decryption
        return engine_load_file(vqf).summary()
