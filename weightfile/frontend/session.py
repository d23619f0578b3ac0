"""What `weightfile run` and `weightfile trace` share: a model, its tokenizer, the prompt ids.

The session type and the backend choice; `dispatch.load_session` builds a session (the family
from `weightfile.families`, the models from the profile registry `weightfile.profiles`). Backend
REFERENCE (engine "ref") binds the file into the reference model (weights decoded, file closed);
FAST (engine "fast") opens the fast model (weights left in the mapped file, which the session
keeps open), bit for bit the same results. A family without a fast forward pass runs its
reference model under engine "fast", and the session carries a one-line note for the callers to
print; without the C kernels (no compiler), engine "fast" does the same.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from weightfile.families import Family, Model
from weightfile.fast._native import library
from weightfile.fast.backend import FAST
from weightfile.profiles import DEFAULT, Profile, profile_named
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.errors import InvalidError, NotFoundError

from .chat import CHATML, chat_template_path, render_chat
from .tokenizer import find_tokenizer, load_tokenizer

#: Chat models end a turn with <|im_end|>; <|endoftext|> ends a document.
CHAT_STOPS = ("<|im_end|>", "<|endoftext|>")
NO_KERNELS_NOTE = "note: the C kernels are unavailable; engine fast runs the reference decoder"
#: A family without a fast forward pass (today the .ninfer Qwen3.5 family).
NINFER_FAST_NOTE = "note: no fast forward pass for .ninfer yet; engine fast runs the reference"
#: The profile of a session that names none.
CANONICAL = profile_named(DEFAULT)


def engine_for(
    family: Family, backend: Backend, profile: Profile = CANONICAL
) -> tuple[Backend, str | None]:
    """(the backend that runs, the note saying why it is not the one asked for, or None); a
    family the registry refuses, or the profile does not run, raises its typed error here."""
    family.require_supported()
    has_fast = profile.has_fast(family)  # first: it refuses a family the profile does not run
    if backend is not FAST:
        return backend, None
    if not has_fast:
        return REFERENCE, NINFER_FAST_NOTE
    if library() is None:  # no compiler: say so, then run the reference
        return REFERENCE, NO_KERNELS_NOTE if profile.canonical else no_kernels_note(profile)
    return FAST, None


def no_kernels_note(profile: Profile) -> str:
    """The no-compiler note of a profile with its own models."""
    return f"note: the C kernels are unavailable; engine fast runs the {profile.name} reference"


@dataclass
class Session:
    #: the family's reference or fast model (weightfile.families)
    model: Model
    arch: dict[str, Any]
    path: Path
    tokenizer: Tokenizer | None = None
    stop_ids: set[int] = field(default_factory=set)
    #: The file's own template (.ninfer resources); None: the VQF sidecar, else ChatML.
    chat_template: str | None = None
    source: VQFFile | None = None  # the open file a fast model reads its weights from
    note: str | None = None  # one line for stderr: engine fast ran the reference
    family: str | None = None  # the family registry's name of the file's family


def attach_tokenizer(
    s: Session, path: str | os.PathLike[str], tokenizer: str | os.PathLike[str] | None, need: bool
) -> Session:
    """Attach the model's tokenizer (the given one, else the sidecar beside `path`); a missing
    one is an error only when it is needed or was named."""
    try:
        s.tokenizer = load_tokenizer(find_tokenizer(path, tokenizer))
    except NotFoundError:
        if need or tokenizer is not None:
            raise
    return s


def parse_token_ids(text: str, vocab: int) -> list[int]:
    """ "1,2,3" -> [1, 2, 3], each id inside the vocabulary; an empty place ("1,,2") is refused."""
    try:
        ids = [int(p) for p in text.replace(" ", "").split(",")]
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
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: bytes the command line could not decode
        raise InvalidError(
            "frontend.prompt", f"not UTF-8 text (character {exc.start})", path="--prompt"
        ) from None
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
