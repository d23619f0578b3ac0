"""A `weightfile run` / `trace` session on a `.ninfer` file: the reference or fast model of the
file's family (weightfile.families) under the profile (weightfile.profiles), and the frontend from
the file's own resources (spec/ninfer3.md §qwen35-names). `dispatch.load_session` calls it.

With images the vision component is selected (spec/ninfer3.md §qwen35-vision-names): its
inventory is checked whenever the file has one, its payload decoded only when images are given,
and the tower is the fast one (fast/qwen3_vl) under engine fast when the C kernels are there; the
text decoder with images is then the reference (the fast one has no image rows yet).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from weightfile.families import ninfer_family
from weightfile.fast._native import library
from weightfile.fast.backend import FAST
from weightfile.profiles import Profile
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.ninfer3.read import Artifact, open_artifact
from weightfile.ref.qwen3_vl.config import SpecialIds, VisionConfig
from weightfile.ref.qwen35.vision import VisionBinding, check_vision, has_vision, open_vision
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT
from weightfile.spec.ninfer3.vision_names import VISION_COMPONENT

from .resources import load_text_resources, processor_settings
from .session import CANONICAL, Session, engine_for
from .tokenizer import load_tokenizer

#: engine fast on a .ninfer file with images: the text runs the reference, the tower the C kernels.
FAST_TOWER_NOTE = "note: engine fast runs the vision tower with the C kernels, the text reference"


def vision_arch(c: VisionConfig, ids: SpecialIds) -> dict[str, int]:
    """The names the image frontend reads (weightfile/frontend/image.py, after spec/vqf.md
    §arch-semantics): the tower's geometry and the prompt's token ids."""
    return {
        "vis_depth": c.depth, "vis_patch": c.patch_size, "vis_merge": c.spatial_merge_size,
        "vis_temporal": c.temporal_patch_size, "vis_max_pos": c.num_position_embeddings,
        "vision_start_id": ids.vision_start, "vision_end_id": ids.vision_end,
        "image_token_id": ids.image, "video_token_id": ids.video,
    }  # fmt: skip


def tower_factory(backend: Backend, threads: int):
    """(config, weights) -> the reference tower, or the fast one on FastMatrix views of the
    decoded float32 matrices (the same bits, spec/numerics.md §vision)."""
    if backend is FAST and library() is not None:
        from weightfile.fast.qwen3_vl.dense import fast_tower

        return lambda c, w: fast_tower(c, w, threads)
    from weightfile.ref.qwen3_vl.vision import VisionTower

    return VisionTower


def with_vision(
    artifact: Artifact, model: Any, images: bool, backend: Backend, threads: int
) -> tuple[Any, VisionBinding | None]:
    """The model with its vision tower when images are given; the vision inventory is checked
    whenever the file has one; images for a file without it are `ninfer3.binder.component`."""
    if not has_vision(artifact):
        if images:
            raise InvalidError(
                "ninfer3.binder.component",
                f"{artifact.path.name} has no {VISION_COMPONENT!r} component: it takes no images",
                path="components",
            )
        return model, None
    binding = check_vision(artifact, model.config)
    if not images:
        return model, binding
    tower = tower_factory(backend, threads)
    codecs = FAST.ninfer_codecs.get_codec
    return open_vision(artifact, model, binding, tower, codecs), binding


def text_model(
    profile: Profile, family: Any, artifact: Artifact, backend: Backend, threads: int
) -> Any:
    """The family's fast model on the open artifact, or its reference model on weights the fast
    codecs decoded (the reference codecs' bits, tests/differential)."""
    if backend is FAST:
        return profile.fast_model(family, artifact, threads=threads)
    return profile.reference_model(family, artifact, codec_for=FAST.ninfer_codecs.get_codec)


def load_ninfer_session(
    path: str | os.PathLike[str],
    tokenizer: str | os.PathLike[str] | None,
    need_tokenizer: bool,
    backend: Backend = REFERENCE,
    profile: Profile = CANONICAL,
    images: bool = False,
    threads: int = 1,
) -> Session:
    """Bind the file's text component (and its vision component when `images`); its tokenizer,
    template and EOS ids come from its resources, and `tokenizer` (a tokenizer.json path)
    overrides the embedded one.

    Engine fast: the family's fast model reads the mapped payloads, so the file stays open as
    the session's source. Engine ref: the objects are decoded by the fast codecs, which give the
    reference codecs' bits (tests/differential), so only the forward pass is the slow, readable
    one, and the file is closed once they are decoded.
    """
    artifact = open_artifact(path)
    try:
        family = ninfer_family(artifact)
        asked = backend
        backend, note = engine_for(family, backend, profile)
        if images and backend is FAST:
            backend = REFERENCE  # the fast text decoder takes no image rows yet
        model = text_model(profile, family, artifact, backend, threads)
        model, vision = with_vision(artifact, model, images, asked, threads)
        if images and asked is FAST and library() is not None:
            note = FAST_TOWER_NOTE
        res = load_text_resources(
            artifact,
            need_tokenizer=need_tokenizer and tokenizer is None,
            skip_tokenizer=tokenizer is not None,
        )
        arch = dict(artifact.component(TEXT_COMPONENT).config)
        processor = processor_settings(artifact) if vision is not None and images else {}
    except BaseException:
        artifact.close()
        raise
    if backend is not FAST:  # the weights are decoded: the file is not needed any more
        artifact.close()
    if vision is not None and images:
        arch |= vision_arch(vision.config, vision.ids) | processor
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
