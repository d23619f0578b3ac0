"""Open-time checks of everything that refers to objects: resource roles, bindings, uses.

ninfer-v3.md §2.3 (resources), §2.5 (Binding, Part), §2.6 (Use) and §2.9 steps 5-7.
"""

from __future__ import annotations

from typing import Any

from weightfile.ref.ninfer3.records import Binding, ObjectEntry, Part, Use, member_path
from weightfile.ref.ninfer3.require import (
    fail,
    need_id,
    need_members,
    need_type,
    require,
)
from weightfile.spec.ninfer3.directory import ACTIVATION_POLICIES, PART, USE
from weightfile.spec.ninfer3.domains import U64_MAX, elements, is_u64


def check_resources(value: Any, objects: dict[str, ObjectEntry], path: str) -> dict[str, str]:
    """resources: role (ID) → id of a **resource** object (§2.3)."""
    need_type(value, dict, path)
    for role, object_id in value.items():
        role_path = member_path(path, role)
        need_id(role, role_path)
        need_id(object_id, role_path)
        target = objects.get(object_id)
        require(
            target is not None and target.kind == "resource",
            "ninfer3.components.resource_ref",
            f"{object_id!r} is not a resource object",
            role_path,
        )
    return dict(value)


def check_bindings(value: Any, objects: dict[str, ObjectEntry]) -> dict[str, Binding]:
    """bindings: parameter name (ID) → Binding (§2.5)."""
    need_type(value, dict, "bindings")
    out: dict[str, Binding] = {}
    for name, record in value.items():
        path = member_path("bindings", name)
        need_id(name, path)
        out[name] = check_binding(record, objects, path)
    return out


def check_binding(record: Any, objects: dict[str, ObjectEntry], path: str) -> Binding:
    """Exactly {object} or exactly {parts: [Part, …]} (§2.5)."""
    need_type(record, dict, path)
    members = set(record)
    if members == {"object"}:
        object_id = check_tensor_ref(record["object"], objects, f"{path}.object")
        return Binding(path, object_id=object_id)
    if members != {"parts"}:
        fail("ninfer3.bindings.form", f"members {sorted(members)} are neither form", path)
    parts = need_type(record["parts"], list, f"{path}.parts")
    require(len(parts) > 0, "ninfer3.bindings.parts_empty", "parts is empty", f"{path}.parts")
    checked: list[Part] = []
    total = 0
    for i, part in enumerate(parts):
        checked.append(check_part(part, objects, f"{path}.parts[{i}]"))
        total += checked[-1].end - checked[-1].begin
        require(total <= U64_MAX, "ninfer3.bindings.total", "total exceeds 2^64-1", path)
    return Binding(path, parts=tuple(checked))


def check_part(record: Any, objects: dict[str, ObjectEntry], path: str) -> Part:
    """{object, range}: a tensor and 0 <= begin < end <= elements(shape) (§2.5)."""
    need_members(record, PART, path)
    object_id = check_tensor_ref(record["object"], objects, f"{path}.object")
    rng = record["range"]
    require(
        type(rng) is list and len(rng) == 2 and all(is_u64(v) for v in rng),
        "ninfer3.bindings.range_form",
        f"range {rng!r:.60} is not [begin, end]",
        f"{path}.range",
    )
    begin, end = rng
    shape = objects[object_id].shape
    assert shape is not None
    count = elements(shape)
    require(
        begin < end <= count,
        "ninfer3.bindings.range",
        f"range [{begin}, {end}) outside the parent's {count} elements",
        f"{path}.range",
    )
    return Part(object_id, begin, end)


def check_tensor_ref(value: Any, objects: dict[str, ObjectEntry], path: str) -> str:
    """An object id naming an existing **tensor** (§2.5)."""
    object_id = need_id(value, path)
    target = objects.get(object_id)
    require(target is not None, "ninfer3.bindings.object_ref", f"no object {object_id!r}", path)
    require(
        target.kind == "tensor",
        "ninfer3.bindings.object_kind",
        f"{object_id!r} is a resource",
        path,
    )
    return object_id


def check_uses(
    value: Any, bindings: dict[str, Binding], objects: dict[str, ObjectEntry]
) -> tuple[Use, ...]:
    """uses: closed records, bound parameters, unique pairs, policy spelling (§2.6)."""
    need_type(value, list, "uses")
    out: list[Use] = []
    pairs: set[tuple[str, str]] = set()
    for i, record in enumerate(value):
        path = f"uses[{i}]"
        need_members(record, USE, path)
        parameter = need_id(record["parameter"], f"{path}.parameter")
        require(
            parameter in bindings,
            "ninfer3.uses.parameter",
            f"no binding {parameter!r}",
            f"{path}.parameter",
        )
        use_input = need_id(record["input"], f"{path}.input")
        require((parameter, use_input) not in pairs, "ninfer3.uses.unique", "repeats", path)
        pairs.add((parameter, use_input))
        policy = record.get("activation_policy")
        require(
            "activation_policy" not in record
            or (type(policy) is str and policy in ACTIVATION_POLICIES),
            "ninfer3.uses.policy",
            f"activation_policy {policy!r:.40}",
            f"{path}.activation_policy",
        )
        auxiliaries = check_auxiliaries(record.get("auxiliaries", {}), objects, path)
        out.append(Use(i, parameter, use_input, policy, auxiliaries))
    return tuple(out)


def check_auxiliaries(
    value: Any, objects: dict[str, ObjectEntry], use_path: str
) -> dict[str, Binding]:
    """auxiliaries: role (ID) → Binding, same rules as §2.5 (§2.6)."""
    path = f"{use_path}.auxiliaries"
    need_type(value, dict, path)
    out: dict[str, Binding] = {}
    for role, record in value.items():
        role_path = member_path(path, role)
        need_id(role, role_path)
        out[role] = check_binding(record, objects, role_path)
    return out
