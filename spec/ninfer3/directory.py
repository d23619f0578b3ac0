"""The JSON directory schema as declarative data (spec/ninfer3.md §root, §component, §objects,
§binding, §use, §metadata, §closed-sets, §json-serialisation).

Every closed record is one `Record` with its required and optional member names; open maps
(components, bindings, resources, auxiliaries) and open objects (metadata, provenance) are
listed too. The reader checks member sets from these records and the writer emits members in
the `emit` order, so there is no second table of member names anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Record:
    """A closed JSON record: exactly the required members plus any of the optional ones."""

    name: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()

    @property
    def members(self) -> frozenset[str]:
        return frozenset(self.required + self.optional)


# spec/ninfer3.md §root root; metadata and provenance default to {} when absent.
ROOT = Record(
    "root", ("components", "objects", "bindings", "uses", "files"), ("metadata", "provenance")
)
# spec/ninfer3.md §component component record; `proposal` is legal on the `text` component only.
COMPONENT = Record("component", ("config",), ("target", "resources", "proposal"))
PROPOSAL = Record("proposal", ("domain",), ("rows",))
# spec/ninfer3.md §objects object descriptors, one record per kind.
TENSOR = Record("tensor", ("id", "kind", "shape", "format", "layout", "offset", "bytes"))
RESOURCE = Record("resource", ("id", "kind", "encoding", "offset", "bytes"))
OBJECT_KINDS: dict[str, Record] = {"tensor": TENSOR, "resource": RESOURCE}
# spec/ninfer3.md §files-table files record.
FILE = Record("file", ("path", "payload_bytes"))
# spec/ninfer3.md §binding the two mutually exclusive Binding forms and the Part record.
WHOLE_BINDING = Record("whole binding", ("object",))
PARTS_BINDING = Record("parts binding", ("parts",))
PART = Record("part", ("object", "range"))
# spec/ninfer3.md §use Use.
USE = Record("use", ("parameter", "input"), ("activation_policy", "auxiliaries"))

TEXT_COMPONENT = "text"  # the mandatory main-model component (spec/ninfer3.md §component)
KNOWN_COMPONENTS = ("text", "vision", "mtp", "dflash", "dflash2")
PROPOSAL_DOMAINS = ("full", "indexed")  # `rows` absent for full, required for indexed
#: Activation policies and the activation precisions each one admits (spec/ninfer3.md §use),
#: spelling exact.
ACTIVATION_POLICIES: dict[str, tuple[str, ...]] = {
    "A16Only": ("A16",),
    "AllowA8": ("A16", "A8"),
    "AllowA4": ("A16", "A8", "A4"),
}
#: Auxiliary roles the Qwen binder accepts (spec/ninfer3.md §use).
AUXILIARY_ROLES = ("activation_input_divisor", "hadamard_signs")
#: Resource roles the text runtime requires (spec/ninfer3.md §qwen35-names).
TEXT_RESOURCE_ROLES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "generation_config.json",
)

# spec/ninfer3.md §json-serialisation member order the reference writer emits (order has no meaning
# to readers).
ROOT_EMIT_ORDER = ("components", "objects", "bindings", "uses", "metadata", "provenance", "files")
TENSOR_EMIT_ORDER = ("id", "shape", "format", "layout", "offset", "bytes", "kind")
RESOURCE_EMIT_ORDER = ("id", "encoding", "offset", "bytes", "kind")

assert set(ROOT_EMIT_ORDER) == ROOT.members
assert set(TENSOR_EMIT_ORDER) == TENSOR.members
assert set(RESOURCE_EMIT_ORDER) == RESOURCE.members
