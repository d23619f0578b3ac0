"""`weightfile encrypt | decrypt | sign | keygen`: make and unmake protected VQF files.

spec/vqf.md §protected. Every writer streams the file in 1 MiB chunks, publishes atomically and
refuses an existing OUT unless --force. The passphrase comes from --passphrase-file or VLLM_VQF_KEY;
KEYFILE holds an SM2 private key as 64 hex characters (the engine's VLLM_VQF_SIGN_PRIV form).
IN's tokenizer and chat-template sidecars are copied beside OUT (`carry_sidecars`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ._common import add_passphrase_argument, passphrase


def register(sub: Any) -> None:
    enc = sub.add_parser("encrypt", help="SM4-CTR encrypt a plaintext VQF (tag: HMAC-SM3)")
    _in_out(enc)
    add_passphrase_argument(enc)
    enc.set_defaults(run=run_encrypt)

    dec = sub.add_parser("decrypt", help="write the plaintext VQF of an encrypted one")
    _in_out(dec)
    add_passphrase_argument(dec)
    dec.set_defaults(run=run_decrypt)

    sig = sub.add_parser("sign", help="SM2-sign a VQF (an encrypted one needs its passphrase)")
    _in_out(sig)
    sig.add_argument(
        "--sign-key",
        type=Path,
        required=True,
        metavar="KEYFILE",
        help="the private key: 64 hex characters (weightfile keygen)",
    )
    add_passphrase_argument(sig)
    sig.set_defaults(run=run_sign)

    key = sub.add_parser("keygen", help="a new SM2 key pair: KEYFILE (mode 0600), pub on stdout")
    key.add_argument("--out", type=Path, required=True, metavar="KEYFILE")
    key.add_argument("--force", action="store_true", help="replace an existing KEYFILE")
    key.set_defaults(run=run_keygen)


def _in_out(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", type=Path, metavar="IN")
    parser.add_argument("output", type=Path, metavar="OUT")
    parser.add_argument("--force", action="store_true", help="replace an existing OUT")


def need_passphrase(command: str, args: argparse.Namespace) -> bytes:
    """The passphrase (see `_common.passphrase`), or exit 2 naming where to give it."""
    value = passphrase(args)
    if value is None:
        print(
            f"weightfile {command}: give the passphrase with --passphrase-file PATH or "
            "VLLM_VQF_KEY",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return value


def run_encrypt(args: argparse.Namespace) -> int:
    from weightfile.fast.vqf.protect_write import encrypt_vqf

    encrypt_vqf(args.input, args.output, need_passphrase("encrypt", args), overwrite=args.force)
    print(f"{args.output}: encrypted (SM4-CTR, one stream; HMAC-SM3 tag){carry_sidecars(args)}")
    return 0


def run_decrypt(args: argparse.Namespace) -> int:
    from weightfile.fast.vqf.protect_write import decrypt_vqf

    decrypt_vqf(args.input, args.output, need_passphrase("decrypt", args), overwrite=args.force)
    print(f"{args.output}: plaintext (tag verified; FNV-1a-64 trailer){carry_sidecars(args)}")
    return 0


def run_sign(args: argparse.Namespace) -> int:
    from weightfile.fast.vqf.protect_write import read_private_key, sign_vqf

    key = read_private_key(args.sign_key)
    sign_vqf(args.input, args.output, key, passphrase=passphrase(args), overwrite=args.force)
    print(f"{args.output}: signed (SM2, ID vllm-shs-vqf){carry_sidecars(args)}")
    return 0


def carry_sidecars(args: argparse.Namespace) -> str:
    """Copy IN's tokenizer and chat-template sidecars (IN.tokenizer.json,
    IN.chat_template.jinja) beside OUT, which `run --prompt` reads them from: they are plain
    text, not part of the protected file (spec/vqf.md §decisions: the tokenizer lives outside
    the file), and belong to the OUT just published, as an importer's do. Returns " (+ names)"
    for the summary line, or ""."""
    from weightfile.frontend.chat import chat_template_path
    from weightfile.frontend.tokenizer import sidecar_path
    from weightfile.ref.staging import write_output

    carried = []
    for beside in (sidecar_path, chat_template_path):
        source = beside(args.input)
        if source.is_file():
            write_output(beside(args.output), source.read_bytes(), overwrite=True)
            carried.append(beside(args.output).name)
    return f" (+ {', '.join(carried)})" if carried else ""


def run_keygen(args: argparse.Namespace) -> int:
    from weightfile.fast.vqf.protect_write import write_private_key

    pub = write_private_key(args.out, overwrite=args.force)
    print(pub.hex())
    return 0
