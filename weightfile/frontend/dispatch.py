"""`load_session`: which code runs a model file, chosen from the registries.

The container comes from the file's magic (`weightfile.formats.sniff`), the family from the family
registry (`weightfile.families`), the models from the profile registry (`weightfile.profiles`:
canonical runs every family's own models, kestrel-board the Qwen3 board model, spec/numerics.md
§board-forward), and the backend from `session.engine_for`. A `.ninfer` file is loaded by
`ninfer_session.load_ninfer_session`, its frontend from the file's own resources. The session
types live in `session`, apart from this dispatcher, so no session module imports another back.
"""

from __future__ import annotations

import os
from pathlib import Path

from weightfile.families import NINFER, vqf_family
from weightfile.fast.backend import FAST
from weightfile.formats import sniff
from weightfile.profiles import DEFAULT, Profile, profile_named
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.vqf.read import open_vqf

from .ninfer_session import load_ninfer_session
from .session import Session, attach_tokenizer, engine_for


def load_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    backend: Backend = REFERENCE,
    threads: int = 1,
    passphrase: bytes | None = None,
    profile: str = DEFAULT,
    images: bool = False,
) -> Session:
    """Bind the model file at `path` under the numerics profile named `profile`; attach its
    tokenizer if found (required when `need_tokenizer`).

    `passphrase` opens an encrypted VQF: authenticated, then decrypted in memory (spec/vqf.md
    §sm4-hmac). A profile that runs no family of the file's container refuses it by its magic alone.
    `images`: the prompt will carry images, so a `.ninfer` file's vision component is selected
    (its payload is read only then, spec/ninfer3.md §qwen35-vision-names).
    """
    row = profile_named(profile)
    container = sniff(path)
    row.require_container(container)
    if container == NINFER:
        return load_ninfer_session(path, tokenizer, need_tokenizer, backend, row, images, threads)
    return load_vqf_session(path, tokenizer, need_tokenizer, backend, threads, passphrase, row)


def load_vqf_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    backend: Backend,
    threads: int,
    passphrase: bytes | None,
    profile: Profile,
) -> Session:
    """A VQF file's session: the profile's reference model (the file closed once its weights are
    decoded) or its fast model (the file kept open as the session's source)."""
    vqf = open_vqf(path, passphrase=passphrase)
    try:
        family = vqf_family(vqf)
        backend, note = engine_for(family, backend, profile)
        if backend is FAST:
            model = profile.fast_model(family, vqf, threads=threads)
        else:
            model = profile.reference_model(family, vqf)
        arch = dict(vqf.header.arch)
    except BaseException:
        vqf.close()
        raise
    if backend is not FAST:  # the reference decoded its weights: the file is not needed any more
        vqf.close()
    s = Session(model, arch, Path(path), stop_ids={int(arch["eos_id"])}, note=note)
    s.source = vqf if backend is FAST else None
    s.family = family.name
    return attach_tokenizer(s, path, tokenizer, need_tokenizer)
