"""A `weightfile run` / `trace` session on a `.ninfer` file: the Qwen3.5 reference model bound
from the file, and the frontend from the file's own resources (ninfer-v3.md §6.2)."""

from __future__ import annotations

import os
from pathlib import Path

from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT

from .resources import load_text_resources
from .session import Session
from .tokenizer import load_tokenizer


def load_ninfer_session(
    path: str | os.PathLike[str], tokenizer: str | os.PathLike[str] | None, need_tokenizer: bool
) -> Session:
    """Bind the file's text component; its tokenizer, template and EOS ids come from its
    resources, and `tokenizer` (a tokenizer.json path) overrides the embedded one.

    The objects are decoded by the fast codecs, which give the reference codecs' bits
    (tests/differential), so only the forward pass is the slow, readable one.
    """
    from weightfile.fast.codecs.ninfer3.codec import get_codec
    from weightfile.ref.qwen35.bind import bind_ninfer
    from weightfile.ref.qwen35.model import Qwen35Model

    with open_artifact(path) as artifact:
        config, weights = bind_ninfer(artifact, codec_for=get_codec)
        res = load_text_resources(artifact, need_tokenizer=need_tokenizer and tokenizer is None)
        arch = dict(artifact.component(TEXT_COMPONENT).config)
    s = Session(
        Qwen35Model(config, weights),
        arch,
        Path(path),
        tokenizer=res.tokenizer,
        stop_ids=res.eos_ids,
        chat_template=res.chat_template,
    )
    if tokenizer is not None:
        s.tokenizer = load_tokenizer(tokenizer)
    return s
