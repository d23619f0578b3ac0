"""The text frontend of a `.ninfer` file, from its own resources (spec/ninfer3.md §qwen35-names
resource roles).

A `.ninfer` text component carries its tokenizer (`tokenizer.json`), `tokenizer_config.json`, its
chat template (`chat_template.jinja`, rendered only in the sandbox of `chat.py`) and
`generation_config.json`. EOS comes from generation_config (spec/ninfer3.md §qwen35-names: "EOS
comes from generation_config"); the tokenizer_config's `eos_token` is added when the tokenizer knows
it, so a chat turn's end stops generation even when generation_config names only one id. Sampling
values in generation_config are stored but not used (spec/ninfer3.md §qwen35-names: they do not
override the presets).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tokenizers import Tokenizer

from weightfile.ref.ninfer3.read import Artifact
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.directory import TEXT_COMPONENT

TOKENIZER = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
CHAT_TEMPLATE = "chat_template.jinja"
GENERATION_CONFIG = "generation_config.json"
RULE = "frontend.resource.invalid"


@dataclass
class TextResources:
    """What the frontend takes from a file: tokenizer, chat template, stop ids."""

    tokenizer: Tokenizer | None = None
    chat_template: str | None = None
    eos_ids: set[int] = field(default_factory=set)


def has_role(artifact: Artifact, role: str) -> bool:
    return role in artifact.component(TEXT_COMPONENT).resources


def resource_text(artifact: Artifact, role: str, component: str = "text") -> str:
    """A resource's bytes as UTF-8 text, or InvalidError naming the role."""
    try:
        return bytes(artifact.resource(role, component)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidError(RULE, f"{role} is not UTF-8: {exc}", path=role) from None


def resource_json(artifact: Artifact, role: str, component: str = "text") -> dict[str, Any]:
    """A JSON-object resource, or InvalidError naming the role."""
    try:
        value = json.loads(resource_text(artifact, role, component))
    except json.JSONDecodeError as exc:
        raise InvalidError(RULE, f"{role}: {exc}", path=role) from None
    if not isinstance(value, dict):
        raise InvalidError(RULE, f"{role} is not a JSON object", path=role)
    return value


def tokenizer_from(artifact: Artifact) -> Tokenizer:
    """The embedded tokenizer.json as a tokenizers.Tokenizer."""
    text = resource_text(artifact, TOKENIZER)
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:  # the library raises a bare Exception for any parse problem
        raise InvalidError(RULE, f"{TOKENIZER}: {exc}", path=TOKENIZER) from None


def generation_eos_ids(generation_config: dict[str, Any]) -> set[int]:
    """`eos_token_id`: one id or a list of ids; anything else is an InvalidError."""
    value = generation_config.get("eos_token_id")
    if value is None:
        return set()
    ids = value if isinstance(value, list) else [value]
    if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        raise InvalidError(RULE, f"eos_token_id {value!r} is not token ids", path="eos_token_id")
    return set(ids)


def config_eos_token(tokenizer_config: dict[str, Any]) -> str | None:
    """`eos_token`: a string, or an AddedToken-style object's `content`."""
    value = tokenizer_config.get("eos_token")
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def load_text_resources(
    artifact: Artifact, *, need_tokenizer: bool, skip_tokenizer: bool = False
) -> TextResources:
    """The frontend resources of the text component; an absent tokenizer is an error only when
    one is needed (a prompt given as ids needs none). `skip_tokenizer` (the user gave their own
    with --tokenizer) leaves the embedded one unread; when none is needed, an embedded one the
    installed `tokenizers` refuses only costs the text of the output (ids are printed)."""
    out = TextResources()
    if not skip_tokenizer and (need_tokenizer or has_role(artifact, TOKENIZER)):
        try:
            out.tokenizer = tokenizer_from(artifact)
        except InvalidError:
            if need_tokenizer:
                raise
    if has_role(artifact, CHAT_TEMPLATE):
        out.chat_template = resource_text(artifact, CHAT_TEMPLATE)
    if has_role(artifact, GENERATION_CONFIG):
        out.eos_ids |= generation_eos_ids(resource_json(artifact, GENERATION_CONFIG))
    if has_role(artifact, TOKENIZER_CONFIG) and out.tokenizer is not None:
        token = config_eos_token(resource_json(artifact, TOKENIZER_CONFIG))
        found = out.tokenizer.token_to_id(token) if token is not None else None
        if found is not None:
            out.eos_ids.add(found)
    return out


#: The processor values an image's pixels depend on beyond the tower's geometry.
PROCESSOR_KEYS = {"image_mean": 3, "image_std": 3, "rescale_factor": 0}


def processor_settings(artifact: Artifact) -> dict[str, Any]:
    """`image_mean`, `image_std` (three numbers each) and `rescale_factor` of the vision
    component's `preprocessor_config.json` (spec/models.md §qwen35-vision-prompt), those present;
    a value of another shape is InvalidError naming the role and key."""
    role = "preprocessor_config.json"
    doc = resource_json(artifact, role, "vision")
    out: dict[str, Any] = {}
    for key, count in PROCESSOR_KEYS.items():
        if key not in doc:
            continue
        v = doc[key]
        items = v if isinstance(v, list) else [v]
        ok = all(type(x) in (int, float) and x > 0 for x in items) and (
            len(items) == count if count else not isinstance(v, list)
        )
        if not ok:
            raise InvalidError(RULE, f"{role}: {key} {v!r:.60} is not valid", path=f"{role}.{key}")
        out[key] = tuple(float(x) for x in items) if count else float(v)
    return out
