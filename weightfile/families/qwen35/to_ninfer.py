"""A Hugging Face Qwen3.5 checkpoint folder -> a `.ninfer` v3 file set (spec/ninfer3.md §writer,
§examples, §qwen35-text).

The steps, in order:

1. `components.text.config` from config.json, closed as spec/ninfer3.md §qwen35-config requires
   (`to_ninfer_config`);
2. the parents, bindings and uses of the canonical spec/ninfer3.md §qwen35-names parameters
   (`to_ninfer_plan`);
3. the four text resources of spec/ninfer3.md §qwen35-names, unmodified `raw_bytes_v1` objects
   placed first, as in the examples (spec/ninfer3.md §examples), under the roles `tokenizer.json`,
   `tokenizer_config.json`, `chat_template.jinja` and `generation_config.json`;
4. the parents, each read from the checkpoint (`checkpoint`, `hf_names`), encoded by its
   (format, layout) codec and streamed to the writer one object at a time (spec/ninfer3.md §writer),
   so only one parent is ever in memory;
5. with `hadamard` globs, the matched matrices' rows rotated before encoding, one bf16 signs
   object per rotated Use input and the hadamard_signs auxiliaries on their Uses
   (`to_ninfer_hadamard`, spec/ninfer3.md §qwen35-hadamard-import).

The writer publishes atomically: a failure at any step leaves nothing at the destination. The
codecs are the `Backend`'s (ref/backend.py): the reference ones by default; the CLI passes FAST,
whose codecs produce the same bytes (tests/differential/test_ninfer3_*_fast_eq_ref.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.convert.checkpoint import (
    Checkpoint,
    CheckpointRules,
    chat_template,
    read_json,
    read_regular,
)
from weightfile.families.qwen35 import hf_names as hf_names_qwen35
from weightfile.families.qwen35.hf_names import (
    LM_HEAD,
    fused_experts_name,
    source,
    split_layer,
    text_model_prefix,
)
from weightfile.families.qwen35.to_ninfer_config import text_config
from weightfile.families.qwen35.to_ninfer_hadamard import (
    rotate_rows,
    rotated_inputs,
    seeded_signs,
    signs_object_id,
)
from weightfile.families.qwen35.to_ninfer_mtp import (
    MtpPart,
    ProposalPart,
    mtp_values,
    plan_mtp,
    plan_proposal,
    proposal_values,
    read_frequency_ids,
    select_rows,
    tokenizer_ids,
)
from weightfile.families.qwen35.to_ninfer_plan import (
    EMBEDDING,
    OUTPUT_HEAD,
    Parent,
    bindings,
    plan_parents,
    recipe_named,
    uses,
)
from weightfile.families.qwen35.to_ninfer_vision import (
    HF_VISION,
    hf_names,
    vision_config,
    vision_parents,
    vision_uses,
    vision_values,
)
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.ninfer3.plan import ResourceSpec, TensorSpec
from weightfile.ref.ninfer3.write import ArtifactWriter
from weightfile.spec.errors import InvalidError, NotFoundError, WeightfileError
from weightfile.spec.ninfer3.directory import TEXT_RESOURCE_ROLES
from weightfile.spec.ninfer3.framing import DEFAULT_LIMIT
from weightfile.spec.ninfer3.recipes import Recipe
from weightfile.spec.ninfer3.text_names import TextParameter, text_parameters
from weightfile.spec.ninfer3.vision_names import VISION_RESOURCE_ROLES, vision_parameters

#: The rule ids the checkpoint reader raises for this importer (spec/ninfer3/rules.py).
RULES = CheckpointRules(
    missing_file="qwen35.import.missing_file",
    config="qwen35.import.config",
    safetensors="qwen35.import.safetensors",
    dtype="qwen35.import.dtype",
    duplicate="qwen35.import.duplicate",
    missing_tensor="qwen35.import.missing_tensor",
)
#: A checkpoint tensor whose shape does not fit the config (the mapping's own rule is
#: `ninfer3.text.hf_shape`; the importer reports it under its family).
SHAPE_RULE = "qwen35.import.shape"
CHAT_TEMPLATE = "chat_template.jinja"


def resource_id(role: str) -> str:
    """`tokenizer_config.json` -> `r.tokenizer_config`, the examples' ids (spec/ninfer3.md
    §examples)."""
    return "r." + role.split(".", 1)[0]


def read_resources(folder: Path) -> dict[str, bytes]:
    """role -> bytes of the four text resources (spec/ninfer3.md §qwen35-names); a template only
    inside tokenizer_config.json is written out as chat_template.jinja."""
    out: dict[str, bytes] = {}
    for role in TEXT_RESOURCE_ROLES:
        path = folder / role
        found = read_regular(path)
        if found is not None:
            data = found
        elif role == CHAT_TEMPLATE and (template := chat_template(folder, RULES)) is not None:
            data = template.encode("utf-8")
        else:
            raise NotFoundError(
                "qwen35.import.missing_file", f"{path} is missing (a §6.2 resource)", path=role
            )
        if not data:
            raise InvalidError("qwen35.import.resource", f"{role} is empty", path=role)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidError(
                "qwen35.import.resource", f"{role} is not UTF-8 text ({exc})", path=role
            ) from None
        out[role] = data
    return out


def unexpected_tensors(names: list[str], expected: set[str], prefix: str) -> tuple[list[str], int]:
    """Text-model tensors nothing consumes (an error), and how many others (vision, MTP) are
    left out of a text-only file."""
    text = [n for n in names if n.startswith(prefix) or n == LM_HEAD]
    return sorted(set(text) - expected), len(names) - len(text)


def fused_layers(names: list[str], config: Mapping[str, Any], prefix: str) -> frozenset[int]:
    """The layers whose routed experts the checkpoint stores fused (transformers 5 writes
    `mlp.experts.gate_up_proj [E, 2·Ie, H]` and `mlp.experts.down_proj [E, H, Ie]`)."""
    have = set(names)
    n = config["num_hidden_layers"]
    return frozenset(i for i in range(n) if fused_experts_name(prefix, i) in have)


def member_source(
    config: Mapping[str, Any], prefix: str, name: str, fused: frozenset[int]
) -> hf_names_qwen35.Source:
    """`source` of one canonical parameter, its layer's experts fused or not (spec/ninfer3.md
    §qwen35-names)."""
    layer = split_layer(name)
    return source(config, prefix, name, fused_experts=layer is not None and layer[0] in fused)


class LastTensor:
    """`tensor` remembering only the tensor read last: a fused expert tensor feeds every expert
    parent of its layer one after another, and is read once rather than once per expert."""

    def __init__(self, tensor: Callable[[str], np.ndarray]) -> None:
        self.tensor = tensor
        self.name: str | None = None
        self.value: np.ndarray | None = None

    def __call__(self, name: str) -> np.ndarray:
        if name != self.name:
            self.name, self.value = None, None  # drop the old one before reading the next
            self.value, self.name = self.tensor(name), name
        assert self.value is not None
        return self.value


def parent_values(
    parent: Parent,
    config: Mapping[str, Any],
    prefix: str,
    tensor: Callable[[str], np.ndarray],
    fused: frozenset[int] = frozenset(),
) -> np.ndarray:
    """The members' float32 values stacked by rows, in the parent's shape."""
    cache: dict[str, np.ndarray] = {}  # q_proj and in_proj_qkv feed several members

    def cached(name: str) -> np.ndarray:
        if name not in cache:
            cache[name] = tensor(name)
        return cache[name]

    parts = [
        hf_names_qwen35.parameter_values(
            m, member_source(config, prefix, m.name, fused), cached, SHAPE_RULE
        )
        for m in parent.members
    ]
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def encode_parent(parent: Parent, values: np.ndarray, backend: Backend) -> bytes:
    """The object bytes of one parent; a codec failure names the parent."""
    codec = backend.ninfer_codecs.get_codec(parent.format, parent.layout)
    try:
        return codec.encode(values, parent.shape)
    except WeightfileError as exc:
        raise type(exc)(
            exc.rule, f"{parent.id}: {exc.detail}", offset=exc.offset, path=f"{parent.id}"
        ) from None


class Rotation:
    """The importer's Hadamard plan: parameter -> its Use input, input -> its signs."""

    def __init__(
        self,
        config: Mapping[str, Any],
        globs: tuple[str, ...],
        seed: int,
        others: tuple[TextParameter, ...] = (),
    ) -> None:
        self.globs, self.seed = globs, seed
        self.input_of = rotated_inputs(config, globs, others)
        width = {p.name: p.shape[-1] for p in (*text_parameters(config), *others)}
        self.signs = {i: seeded_signs(seed, i, width[n]) for n, i in self.input_of.items()}

    def objects(self) -> list[TensorSpec]:
        return [
            TensorSpec(signs_object_id(i), s.shape, "bf16", "contiguous_le_v1")
            for i, s in self.signs.items()
        ]

    def uses(self, plain: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The Uses with hadamard_signs on the rotated parameters' ones."""
        out = []
        for use in plain:
            i = self.input_of.get(use["parameter"])
            if i is not None and use["input"] == i:
                use = use | {"auxiliaries": {"hadamard_signs": {"object": signs_object_id(i)}}}
            out.append(use)
        return out

    def apply(self, parent: Parent, values: np.ndarray) -> np.ndarray:
        """The parent's values with every rotated member's rows rotated (members are stacked by
        rows, spec/ninfer3.md §binding)."""
        row = 0
        for m in parent.members:
            rows = m.shape[0] if len(parent.members) > 1 else values.shape[0]
            if m.name in self.input_of:
                signs = self.signs[self.input_of[m.name]]
                values = np.array(values, dtype=np.float32)  # a private copy, writable
                values[row : row + rows] = rotate_rows(values[row : row + rows], signs)
            row += rows
        return values

    def provenance(self) -> dict[str, Any]:
        return {"globs": list(self.globs), "seed": self.seed, "rotated": sorted(self.input_of)}


def check_tensor_set(
    names: list[str],
    config: Mapping[str, Any],
    prefix: str,
    parents: list[Parent],
    fused: frozenset[int],
    mp: MtpPart | None = None,
) -> int:
    """Every text-model and MTP tensor of the checkpoint is one a parent reads (else
    qwen35.import.unexpected_tensor); returns how many other (vision) tensors there are."""
    if mp is not None and mp.component is not None:
        stray = sorted(n for n in names if n.startswith(mp.prefix) and n not in mp.expected)
        if stray:
            raise InvalidError(
                "qwen35.import.unexpected_tensor",
                f"{len(stray)} MTP tensor(s) the MTP block does not use: {stray[:5]}",
                path=stray[0],
            )
        names = [n for n in names if not n.startswith(mp.prefix)]
    expected = {
        member_source(config, prefix, m.name, fused).hf_name for p in parents for m in p.members
    }
    if config["tie_word_embeddings"]:
        expected.add(LM_HEAD)  # a tied checkpoint may still store the head; it is not read
    unexpected, ignored = unexpected_tensors(names, expected, prefix)
    if unexpected:
        raise InvalidError(
            "qwen35.import.unexpected_tensor",
            f"{len(unexpected)} tensor(s) the text model does not use: {unexpected[:5]}",
            path=unexpected[0],
        )
    return ignored


def resource_ids(resources: dict[str, bytes]) -> dict[str, str]:
    """Each resource role's object id (spec/ninfer3.md §qwen35-names)."""
    return {r: resource_id(r) for r in resources}


def import_checkpoint(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    fmt: str | None = None,
    backend: Backend = REFERENCE,
    limit: int = DEFAULT_LIMIT,
    hadamard: tuple[str, ...] = (),
    hadamard_seed: int = 0,
    vision: bool = True,
    overwrite: bool = False,
    recipe: str | None = None,
    proposal_ids: str | os.PathLike[str] | None = None,
    proposal_rows: int | None = None,
) -> list[Path]:
    """Write the `.ninfer` file set of the checkpoint in `folder`; returns the paths written.

    `fmt`: every matrix's format (None: bf16 text matrices and the official vision formats, or
    the spec/ninfer3.md §recipes `recipe`'s). A `vision_config` with `model.visual.*` tensors
    gives a `vision` component unless `vision` is False; `mtp.*` tensors an `mtp` component;
    `proposal_ids` with `proposal_rows` a proposal head (`to_ninfer_mtp`). `hadamard` globs name
    the text and vision matrices stored rotated (signs from `hadamard_seed`); `overwrite`
    replaces an existing set (regular files only, spec/ninfer3.md §writer)."""
    src = Path(folder)
    hf_config = read_json(src, "config.json", RULES)
    config = text_config(hf_config)
    rec, prefix = recipe_named(recipe), text_model_prefix(multimodal="text_config" in hf_config)
    parents = plan_parents(config, fmt, rec)
    resources = read_resources(src)
    with Checkpoint(src, RULES) as checkpoint:
        vp = plan_vision(src, hf_config, config, fmt, checkpoint.names if vision else [], rec)
        rotation = Rotation(config, tuple(hadamard), hadamard_seed, vp.parameters)
        mp = plan_mtp(config, hf_config.get("text_config", hf_config), checkpoint.names, fmt, rec)
        pp = proposal_part(config, resources, parents, mp, (proposal_ids, proposal_rows), rec)
        components = components_of(config, resources, vp, mp, pp)
        resources |= vp.resources
        objects = object_specs(resources, parents + vp.parents + mp.parents + pp.parents, rotation)
        fused = fused_layers(checkpoint.names, config, prefix)
        ignored = check_tensor_set(checkpoint.names, config, prefix, parents, fused, mp)
        with ArtifactWriter(
            out,
            overwrite=overwrite,
            objects=objects,
            components=components,
            bindings=bindings(parents, config["tie_word_embeddings"])
            | bindings(vp.parents + mp.parents + pp.parents, False),
            uses=rotation.uses(uses(config) + vp.uses) + mp.uses + pp.uses,
            metadata={"name": src.resolve().name or "model"},
            provenance=provenance(hf_config, fmt, ignored - len(vp.expected), rotation, recipe),
            limit=limit,
        ) as writer:
            tensor = LastTensor(checkpoint.tensor)
            write_text(
                writer, resources, (parents, config, prefix, fused), tensor, rotation, backend
            )
            write_signs_and_vision(writer, rotation, vp, tensor, backend)
            write_mtp_and_proposal(writer, config, prefix, (mp, pp), tensor, backend)
            return writer.finish()


def object_specs(
    resources: Mapping[str, bytes], parents: list[Parent], rotation: Rotation
) -> list[Any]:
    """The resource objects, every tensor parent, then the Hadamard signs, in writing order."""
    objects: list[Any] = [ResourceSpec(resource_id(r), len(b)) for r, b in resources.items()]
    return (
        objects
        + [TensorSpec(p.id, p.shape, p.format, p.layout) for p in parents]
        + (rotation.objects())
    )


def write_text(
    writer: ArtifactWriter,
    resources: Mapping[str, bytes],
    text: tuple[list[Parent], Mapping[str, Any], str, frozenset[int]],
    tensor: Any,
    rotation: Rotation,
    backend: Backend,
) -> None:
    """The resources, then the text parents read from the checkpoint (rotated where asked)."""
    parents, config, prefix, fused = text
    for role, data in resources.items():
        writer.write(resource_id(role), data)
    for parent in parents:
        values = parent_values(parent, config, prefix, tensor, fused)
        writer.write(parent.id, encode_parent(parent, rotation.apply(parent, values), backend))


def proposal_part(
    config: Mapping[str, Any],
    resources: Mapping[str, bytes],
    parents: list[Parent],
    mp: MtpPart,
    request: tuple[str | os.PathLike[str] | None, int | None],
    recipe: Recipe | None,
) -> ProposalPart:
    """The proposal head asked for by (--proposal-ids FILE, --proposal-rows R): both or
    neither, and only beside an `mtp` component, whose final hidden state it reads
    (`qwen35.import.proposal`)."""
    ids_file, rows = request
    if ids_file is None and rows is None:
        return ProposalPart()
    if ids_file is None or rows is None:
        raise InvalidError(
            "qwen35.import.proposal", "--proposal-ids and --proposal-rows go together",
            path="proposal_ids",
        )  # fmt: skip
    if mp.component is None:
        raise InvalidError(
            "qwen35.import.proposal",
            "a proposal head is read at mtp/final_hidden: the checkpoint has no mtp.* weights",
            path="proposal_ids",
        )
    domain, specials = tokenizer_ids(resources["tokenizer.json"])
    ids = read_frequency_ids(Path(ids_file), min(domain, config["vocab_size"]))
    token_ids = select_rows(ids, specials, rows, config["vocab_size"])
    head = OUTPUT_HEAD if not config["tie_word_embeddings"] else EMBEDDING
    fmt = next(p.format for p in parents if any(m.name == head for m in p.members))
    return plan_proposal(token_ids, config["hidden_size"], fmt, recipe)


def write_mtp_and_proposal(
    writer: ArtifactWriter,
    config: Mapping[str, Any],
    prefix: str,
    parts: tuple[MtpPart, ProposalPart],
    tensor: Any,
    backend: Backend,
) -> None:
    """The MTP parents, then the proposal head's rows (gathered from the output head's
    checkpoint values) and its token ids."""
    mp, pp = parts
    for parent in mp.parents:
        writer.write(
            parent.id, encode_parent(parent, mtp_values(mp, config, parent, tensor), backend)
        )
    head_name = OUTPUT_HEAD

    def head() -> np.ndarray:
        src = member_source(config, prefix, head_name, frozenset())
        return np.asarray(tensor(src.hf_name), dtype=np.float32)

    for parent in pp.parents:
        writer.write(parent.id, encode_parent(parent, proposal_values(pp, parent, head), backend))


def components_of(
    config: Mapping[str, Any],
    resources: Mapping[str, bytes],
    vp: VisionPart,
    mp: MtpPart | None = None,
    pp: ProposalPart | None = None,
) -> dict[str, Any]:
    """The `text` component with its resources (and proposal record), `vision` and `mtp` when
    the checkpoint has them."""
    text: dict[str, Any] = {"config": config, "resources": resource_ids(dict(resources))}
    if pp is not None and pp.record is not None:
        text["proposal"] = pp.record
    components: dict[str, Any] = {"text": text}
    if vp.component is not None:
        components["vision"] = vp.component
    if mp is not None and mp.component is not None:
        components["mtp"] = mp.component
    return components


def provenance(
    hf_config: Mapping[str, Any],
    fmt: str | None,
    ignored: int,
    rotation: Rotation,
    recipe: str | None = None,
) -> dict[str, Any]:
    """The file's provenance record: source, formats, encoders, what was left out, rotation."""
    default = f"recipe {recipe}" if recipe else "bf16 text, official vision formats"
    record = {
        "converter": "weightfile import",
        "source": {"architectures": hf_config.get("architectures")},
        "format": fmt or default,
        "encoder": "grouped_absmax, bf16 round to nearest even",
        "ignored_tensors": ignored,
    }
    return record | ({"hadamard": rotation.provenance()} if rotation.input_of else {})


def write_signs_and_vision(
    writer: ArtifactWriter, rotation: Rotation, vp: VisionPart, tensor: Any, backend: Backend
) -> None:
    """The Hadamard signs objects (bf16 ±1) and the vision component's parents (rotated where
    asked)."""
    bf16 = backend.ninfer_codecs.get_codec("bf16", "contiguous_le_v1")
    for i, signs in rotation.signs.items():
        writer.write(signs_object_id(i), bf16.encode(signs.astype(np.float32), signs.shape))
    for parent in vp.parents:
        values = rotation.apply(parent, vision_values(parent, tensor))
        writer.write(parent.id, encode_parent(parent, values, backend))


@dataclass
class VisionPart:
    """What the vision component adds to the file (nothing for a text-only checkpoint)."""

    component: dict[str, Any] | None = None
    parents: list[Parent] = field(default_factory=list)
    resources: dict[str, bytes] = field(default_factory=dict)
    expected: set[str] = field(default_factory=set)  # the checkpoint tensors it reads
    uses: list[dict[str, str]] = field(default_factory=list)
    parameters: tuple[TextParameter, ...] = ()  # spec/ninfer3.md §qwen35-vision-names


def plan_vision(
    src: Path,
    hf_config: Mapping[str, Any],
    config: Mapping[str, Any],
    fmt: str | None,
    names: list[str],
    recipe: Recipe | None = None,
) -> VisionPart:
    """The vision component of a checkpoint with a vision tower (a `vision_config` and
    `model.visual.*` tensors among `names`), spec/ninfer3.md §qwen35-vision-names."""
    if "vision_config" not in hf_config or not any(n.startswith(HF_VISION) for n in names):
        return VisionPart()
    vc = vision_config(hf_config, config["architectures"][0])
    hidden = config["hidden_size"]
    resources = {}
    for role in VISION_RESOURCE_ROLES:
        path = src / role
        if not path.is_file():
            raise NotFoundError(
                "qwen35.import.missing_file", f"{path} is missing (a vision resource)", path=role
            )
        resources[role] = path.read_bytes()
    component = {
        "config": vc,
        "target": "text",
        "resources": resource_ids(resources),
    }
    return VisionPart(
        component,
        vision_parents(vc, hidden, fmt, recipe),
        resources,
        hf_names(vc, hidden),
        vision_uses(vc, hidden),
        tuple(vision_parameters(vc, hidden)),
    )
