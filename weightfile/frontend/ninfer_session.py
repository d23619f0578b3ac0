"""A `weightfile run` / `trace` session on a `.ninfer` file: the reference or fast model of the
file's family (weightfile.families) under the profile (weightfile.profiles), and the frontend from
the file's own resources (spec/ninfer3.md §qwen35-names). `dispatch.load_session` calls it."""

from __future__ import annotations

import os
from pathlib import Path

from weightfile.families import ninfer_family
from weightfile.fast.backend import FAST
from weightfile.profiles import Profile
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT

from .resources import load_text_resources
from .session import CANONICAL, Session, engine_for
from .tokenizer import load_tokenizer


def load_ninfer_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    backend: Backend = REFERENCE,
    profile: Profile = CANONICAL,
    threads: int = 1,
) -> Session:
    """Bind the file's text component; its tokenizer, template and EOS ids come from its
    resources, and `tokenizer` (a tokenizer.json path) overrides the embedded one.

    Engine fast: the family's fast model reads the mapped payloads, so the file stays open as
    the session's source. Engine ref: the objects are decoded by the fast codecs, which give the
    reference codecs' bits (tests/differential), so only the forward pass is the slow, readable
    one, and the file is closed once they are decoded.
    """
    artifact = open_artifact(path)
    try:
        family = ninfer_family(artifact)
        backend, note = engine_for(family, backend, profile)
        if backend is FAST:
            model = profile.fast_model(family, artifact, threads=threads)
        else:
            codecs = FAST.ninfer_codecs.get_codec
            model = profile.reference_model(family, artifact, codec_for=codecs)
        res = load_text_resources(
            artifact,
            need_tokenizer=need_tokenizer and tokenizer is None,
            skip_tokenizer=tokenizer is not None,
        )
        arch = dict(artifact.component(TEXT_COMPONENT).config)
    except BaseException:
        artifact.close()
        raise
    if backend is not FAST:  # the weights are decoded: the file is not needed any more
        artifact.close()
    s = Session(
        model,
        arch,
        Path(path),
        tokenizer=res.tokenizer,
        stop_ids=res.eos_ids,
        chat_template=res.chat_template,
        note=note,
        family=family.name,
    )
    s.source = artifact if backend is FAST else None
    if tokenizer is not None:
        s.tokenizer = load_tokenizer(tokenizer)
    return s
