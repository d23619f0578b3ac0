"""Hugging Face tokenizers from a tokenizer.json; where a model's tokenizer lives.

A VQF file carries no tokenizer: `weightfile import` copies the checkpoint's tokenizer.json to
`<model>.tokenizer.json`, and `--tokenizer PATH` overrides it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from tokenizers import Tokenizer

from weightfile.spec.errors import InvalidError, NotFoundError

SIDECAR_SUFFIX = ".tokenizer.json"


def sidecar_path(model: str | os.PathLike[str]) -> Path:
    """`<model>.tokenizer.json`, where `weightfile import` and `weightfile demo` put it."""
    return Path(str(model) + SIDECAR_SUFFIX)


def find_tokenizer(model: str | os.PathLike[str], explicit: str | os.PathLike[str] | None) -> Path:
    """The tokenizer.json to use: the one given, else the sidecar, else tokenizer.json beside."""
    if explicit is not None:
        candidates = [Path(explicit)]
    else:
        candidates = [sidecar_path(model), Path(model).with_name("tokenizer.json")]
    for c in candidates:
        if c.is_file():
            return c
    tried = ", ".join(str(c) for c in candidates)
    raise NotFoundError(
        "frontend.tokenizer.missing", f"no tokenizer (tried {tried}); pass --tokenizer PATH"
    )


def load_tokenizer(path: str | os.PathLike[str]) -> Tokenizer:
    """A tokenizers.Tokenizer from a tokenizer.json, or InvalidError naming the file."""
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # the library raises a bare Exception for any parse problem
        raise InvalidError("frontend.tokenizer.invalid", f"{exc}", path=str(path)) from None


class TextStream:
    """Turns generated ids into text pieces as they arrive, through the library's own streaming
    detokenizer (`tokenizers.decoders.DecodeStream`): each token costs one step, not a decode of
    the whole sequence. The stream holds back an incomplete UTF-8 sequence until a later token
    completes it, and keeps the spaces the decoder puts between tokens.

    `flush` decodes the whole sequence once, at the end, so the pieces always add up to exactly
    `tok.decode(ids, skip_special_tokens=True)` — also when the last token leaves a character
    incomplete (the batch decode shows it as U+FFFD; the stream alone would drop it).
    """

    def __init__(self, tok: Tokenizer) -> None:
        from tokenizers.decoders import DecodeStream

        self.tok = tok
        self.ids: list[int] = []
        self.emitted = ""
        self._stream = DecodeStream(skip_special_tokens=True)

    def push(self, token: int) -> str:
        self.ids.append(token)
        piece = self._stream.step(self.tok, token) or ""
        self.emitted += piece
        return piece

    def flush(self) -> str:
        text = self.tok.decode(self.ids, skip_special_tokens=True)
        piece = text[len(self.emitted) :] if text.startswith(self.emitted) else ""
        self.emitted = text
        return piece


def stream_text(tok: Tokenizer, tokens: Iterable[int]) -> Iterator[str]:
    """The text of `tokens`, piece by piece as each token arrives."""
    stream = TextStream(tok)
    for t in tokens:
        piece = stream.push(t)
        if piece:
            yield piece
    tail = stream.flush()
    if tail:
        yield tail
