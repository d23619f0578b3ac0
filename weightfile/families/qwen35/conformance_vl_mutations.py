"""`ninfer3-vl-model` rejections (ninfer3 v5): one rejected file per vision binder rule a file
can break (`ninfer3.vision.*`, spec/ninfer3.md §qwen35-vision-names), plus the component rules
the vision component adds (`ninfer3.binder.component`, `component_target`, `resource`).

Each case is a small Qwen3.5 file (one full-attention layer, vocab 8) with the
`ninfer3-vl-model` tower of conformance_vl cut to one block, one 8×8
picture and a prompt with its image tokens, edited so that the container stays valid and the
binder stops at exactly that rule; `invalid_cases` checks both, and that the unedited file
answers. (Hadamard signs on a vision Use are accepted; their bad forms are the text binder's
`ninfer3.binder.hadamard`.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case
from weightfile.conformance.sections import published_section
from weightfile.families.qwen35.conformance_files import (
    ATTENTION,
    RESOURCES,
    Layout,
    TextDirectory,
    parameters,
    text_config,
    text_directory,
    word_level_tokenizer,
)
from weightfile.families.qwen35.conformance_mutations import drop_use, edit_use, put
from weightfile.families.qwen35.conformance_vl import (
    MODEL_NAME,
    VISION,
    Picture,
    add_vision,
    answer,
    image_fields,
    tokenizer,
    vision_values,
)
from weightfile.ref.backend import REFERENCE
from weightfile.ref.ninfer3.describe import verify
from weightfile.spec.errors import WeightfileError
from weightfile.spec.ninfer3.rules import RULES

Edit = Callable[[TextDirectory], None]
#: vocab 8: the words t0 … t3 and the four image tokens
IDS = {"vision_start": 4, "vision_end": 5, "image": 6, "video": 7}
PICTURE = Picture(8, 8, 74)  # a 2×2 patch grid: one merged image token
PROMPT = (1, IDS["vision_start"], IDS["image"], IDS["vision_end"], 2)
SEED = 6


#: One full-attention layer 32 wide (vocab 8) and the v4 tower with one block: the smallest
#: files that carry every vision parameter kind.
TEXT = text_config(32, 8, [ATTENTION], {"intermediate_size": 8}, attention=(2, 1, 16))
TOWER = {**VISION, "depth": 1}


def directory() -> TextDirectory:
    """The unedited file: `TEXT` and `TOWER`, bf16."""
    resources = {**RESOURCES, "tokenizer.json": tokenizer(4, IDS)}
    d = text_directory(TEXT, parameters(TEXT, SEED), Layout("bf16"), resources)
    add_vision(d, vision_values(SEED, TEXT["hidden_size"], TOWER), "bf16", TOWER)
    return d


def set_vision(key: str, value: object) -> Edit:
    """Set (value None: delete) one member of the vision config."""

    return lambda d: put(d.others["vision"]["config"], key, value)


def plain_tokenizer(d: TextDirectory) -> None:
    """The text tokenizer.json without the image tokens (a vocabulary of t0 … t7)."""
    d.resource("tokenizer.json", word_level_tokenizer(8))


def stray_binding(d: TextDirectory) -> None:
    d.bindings["vision/layers/7/norm1_weight"] = {"object": "v.vision/layers/0/norm1_weight"}


def bias_as_fp32(d: TextDirectory) -> None:
    name = "vision/merger/fc1_bias"
    d.tensor("v." + name, vision_values(SEED, TEXT["hidden_size"], TOWER)[name], "fp32")


def drop_video_processor(d: TextDirectory) -> None:
    role = "video_preprocessor_config.json"
    object_id = d.others["vision"]["resources"].pop(role)
    del d.objects[object_id]


def no_vision(d: TextDirectory) -> None:
    """The text-only file, given the case's image anyway."""
    d.others.clear()
    d.objects = {k: v for k, v in d.objects.items() if not k.startswith("v.")}
    d.objects = {k: v for k, v in d.objects.items() if "preprocessor" not in k}
    d.bindings = {k: v for k, v in d.bindings.items() if not k.startswith("vision/")}
    d.uses[:] = [u for u in d.uses if not u["parameter"].startswith("vision/")]


def self_target(d: TextDirectory) -> None:
    d.others["vision"]["target"] = "vision"


#: rule -> (what the file does, edit)
MUTATIONS: dict[str, tuple[str, Edit]] = {
    "ninfer3.vision.key": ("vision config member hidden_act", set_vision("hidden_act", "gelu")),
    "ninfer3.vision.missing": ("no depth", set_vision("depth", None)),
    "ninfer3.vision.model_type": ("qwen3_5_moe_vision beside Qwen3_5ForCausalLM",
                                  set_vision("model_type", "qwen3_5_moe_vision")),
    "ninfer3.vision.value": ("patch_size 0", set_vision("patch_size", 0)),
    "ninfer3.vision.heads": ("hidden_size 16 over 3 heads", set_vision("num_heads", 3)),
    "ninfer3.vision.positions": ("8 position rows", set_vision("num_position_embeddings", 8)),
    "ninfer3.vision.token": ("a tokenizer.json without the image tokens", plain_tokenizer),
    "ninfer3.vision.unexpected_parameter": ("a binding vision/layers/7/norm1_weight (depth 1)",
                                            stray_binding),
    "ninfer3.vision.direct_format": ("merger fc1_bias stored as fp32", bias_as_fp32),
    "ninfer3.vision.use_missing": ("merger fc2 has no Use", drop_use("vision/merger/fc2")),
    "ninfer3.vision.use_policy": ("merger fc1's Use has no policy",
                                  edit_use("vision/merger/fc1", activation_policy=None)),
    "ninfer3.vision.use_unexpected": ("merger fc1 used at vision/merger/activation",
                                      edit_use("vision/merger/fc1",
                                                 input="vision/merger/activation")),
    "ninfer3.binder.resource": ("vision has no video_preprocessor_config.json",
                                drop_video_processor),
    "ninfer3.binder.component": ("a file without vision given an image", no_vision),
    "ninfer3.binder.component_target": ("vision targets itself", self_target),
}  # fmt: skip


def fields(rule_id: str, meaning: str, folder: Path, files: dict[str, bytes]) -> dict[str, Any]:
    """The case.json members of one rejection: the accepted cases' image and prompt members,
    then the rule."""
    rule = RULES[rule_id]
    return image_fields(folder, (PICTURE,), files) | {
        "expect": "reject", "prompt": [str(t) for t in PROMPT], "new_tokens": "1",
        "numerics": "canonical", "rule": rule_id, "error_class": rule.error_class,
        "accepted": [{"rule": rule_id, "error_class": rule.error_class}],
        "section": published_section(rule), "description": f"{rule.meaning}: {meaning}",
    }  # fmt: skip


def check_base(scratch: Path) -> None:
    """The unedited file with its picture answers (so each edit alone makes the rejection)."""
    folder = scratch / "base"
    folder.mkdir()
    directory().write(folder / MODEL_NAME, label="base")
    want = answer(REFERENCE, folder, fields("ninfer3.vision.key", "", folder, {}))
    logits = np.frombuffer(bytes.fromhex(want["logits"]["hex"]), "<f4")
    if want["images"][0]["tokens"] != "1" or not np.isfinite(logits).all():
        raise RuntimeError(f"the unedited vision file answers {want['images']}")


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One rejected vision file per rule of `MUTATIONS`, each a valid container that the
    reference rejects with exactly its rule (answering the case as the adapter does)."""
    check_base(scratch)
    for rule_id, (meaning, edit) in sorted(MUTATIONS.items()):
        d = copy.deepcopy(directory())
        edit(d)
        folder = scratch / rule_id
        folder.mkdir()
        entry = d.write(folder / MODEL_NAME, label=rule_id)
        found_container = verify(entry)
        if found_container:
            raise RuntimeError(f"{rule_id}: the container is invalid: {found_container}")
        files = {MODEL_NAME: entry.read_bytes()}
        case = fields(rule_id, meaning, folder, files)
        try:
            answer(REFERENCE, folder, case)
            found = None
        except WeightfileError as exc:
            found = (exc.violation.error_class, exc.rule)
        if found != (RULES[rule_id].error_class, rule_id):
            raise RuntimeError(f"{rule_id}: the reference gives {found}")
        _, topic, name = rule_id.split(".")
        yield f"{prefix}/vl-model/qwen35/reject-{topic}-{name}", case, files, None
