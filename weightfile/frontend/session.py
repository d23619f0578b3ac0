"""What `weightfile run` and `weightfile trace` share: a model, its tokenizer, the prompt ids.

Engine "ref" binds the VQF into the reference decoder (weights decoded, file closed); engine
"fast" binds `weightfile.fast.model` (weights left in the mapped file, which the session keeps
open), bit for bit the same results. A `.ninfer` file (found by its magic) is bound by
`ninfer_session.load_ninfer_session` instead; it has no fast forward pass yet, so engine "fast"
runs its reference decoder and the session carries a one-line note for the callers to print.
Without the C kernels (no compiler), engine "fast" on a VQF does the same: the reference, a note.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenizers import Tokenizer

from weightfile.fast._native import library
from weightfile.fast.model import FastQwen3Model, open_model
from weightfile.formats import sniff
from weightfile.ref.model.bind_vqf import bind_vqf
from weightfile.ref.model.decoder import Qwen3Model
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.spec.errors import InvalidError, NotFoundError

from .chat import CHATML, chat_template_path, render_chat
from .tokenizer import find_tokenizer, load_tokenizer

if TYPE_CHECKING:  # imported lazily at run time: the .ninfer path loads only when used
    from weightfile.ref.qwen35.model import Qwen35Model

#: Chat models end a turn with <|im_end|>; <|endoftext|> ends a document.
CHAT_STOPS = ("<|im_end|>", "<|endoftext|>")
NO_KERNELS_NOTE = "note: the C kernels are unavailable; engine fast runs the reference decoder"
NINFER_FAST_NOTE = "note: no fast forward pass for .ninfer yet; engine fast runs the reference"


@dataclass
class Session:
    #: Qwen3Model / FastQwen3Model for a VQF; weightfile.ref.qwen35.Qwen35Model for a .ninfer file
    model: Qwen3Model | FastQwen3Model | Qwen35Model
    arch: dict[str, Any]
    path: Path
    tokenizer: Tokenizer | None = None
    stop_ids: set[int] = field(default_factory=set)
    #: The file's own template (.ninfer resources); None: the VQF sidecar, else ChatML.
    chat_template: str | None = None
    source: VQFFile | None = None  # the open file a fast model reads its weights from
    note: str | None = None  # one line for stderr: engine fast ran the reference


def load_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    engine: str = "ref",
    threads: int = 1,
    passphrase: bytes | None = None,
) -> Session:
    """Bind the VQF at `path`; attach its tokenizer if found (required when `need_tokenizer`).

    `passphrase` opens an encrypted VQF: authenticated, then decrypted in memory (vqf.md §4.2).
    """
    if sniff(path) == "ninfer":
        from .ninfer_session import load_ninfer_session

        s = load_ninfer_session(path, tokenizer, need_tokenizer)
        s.note = NINFER_FAST_NOTE if engine == "fast" else None
        return s
    note = None
    if engine == "fast" and library() is None:  # no compiler: say so, then run the reference
        engine, note = "ref", NO_KERNELS_NOTE
    if engine == "fast":
        vqf = open_vqf(path, passphrase=passphrase)
        try:
            model: Qwen3Model | FastQwen3Model = open_model(vqf, threads=threads)
        except BaseException:
            vqf.close()
            raise
        arch = dict(vqf.header.arch)
    else:
        with open_vqf(path, passphrase=passphrase) as vqf:
            model = Qwen3Model(*bind_vqf(vqf))
            arch = dict(vqf.header.arch)
    s = Session(model, arch, Path(path), stop_ids={int(arch["eos_id"])}, note=note)
    s.source = vqf if engine == "fast" else None
    try:
        s.tokenizer = load_tokenizer(find_tokenizer(path, tokenizer))
    except NotFoundError:
        if need_tokenizer or tokenizer is not None:
            raise
    return s


def parse_token_ids(text: str, vocab: int) -> list[int]:
    """ "1,2,3" -> [1, 2, 3], each id inside the vocabulary."""
    try:
        ids = [int(p) for p in text.replace(" ", "").split(",") if p]
    except ValueError:
        raise InvalidError(
            "frontend.token_ids", f"not a comma-separated id list: {text!r}", path="--token-ids"
        ) from None
    if not ids or any(not 0 <= i < vocab for i in ids):
        raise InvalidError(
            "frontend.token_ids", f"need ids in [0, {vocab}), got {text!r}", path="--token-ids"
        )
    return ids


def chat_prompt(s: Session, text: str) -> str:
    """The user message in the model's chat template (its own, or the sidecar), else ChatML."""
    template_file = chat_template_path(s.path)
    if s.chat_template is not None:
        template = s.chat_template
    else:
        template = template_file.read_text(encoding="utf-8") if template_file.is_file() else CHATML
    return render_chat(template, [{"role": "user", "content": text}], add_generation_prompt=True)


def prompt_ids(
    s: Session, prompt: str | None, token_ids: str | None, chat: bool = False
) -> Sequence[int]:
    """The prompt as ids: given directly, or the (chat-formatted) text through the tokenizer."""
    if token_ids is not None:
        return parse_token_ids(token_ids, s.model.config.vocab_size)
    assert prompt is not None and s.tokenizer is not None
    if chat:
        prompt = chat_prompt(s, prompt)
        s.stop_ids |= {i for t in CHAT_STOPS if (i := s.tokenizer.token_to_id(t)) is not None}
    ids = s.tokenizer.encode(prompt).ids
    if not ids:
        raise InvalidError("frontend.prompt", "the prompt encodes to no tokens", path="--prompt")
    vocab = s.model.config.vocab_size
    if max(ids) >= vocab:
        raise InvalidError(
            "frontend.prompt", f"tokenizer ids reach {max(ids)}, model vocab is {vocab}"
        )
    return ids
