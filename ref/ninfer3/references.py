"""Open-time checks of everything that refers to objects: resource roles, bindings, uses.

spec/ninfer3.md §component (resources), spec/ninfer3.md §binding (Binding, Part), spec/ninfer3.md
§use (Use) and spec/ninfer3.md §validation steps 5-7.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from weightfile.ref.ninfer3.records import Binding, ObjectEntry, Part, Use, member_path
from weightfile.ref.ninfer3.require import (
    Sink,
    attempt,
    fail,
    need_id,
    need_members,
    need_type,
    require,
)
from weightfile.spec.ninfer3.directory import ACTIVATION_POLICIES, PART, USE
from weightfile.spec.ninfer3.domains import U64_MAX, elements, is_u64


def check_resources(value: Any, objects: dict[str, ObjectEntry], path: str) -> dict[str, str]:
    """resources: role (ID) → id of a **resource** object (spec/ninfer3.md §component)."""
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


def check_bindings(
    value: Any, objects: dict[str, ObjectEntry], sink: Sink = None
) -> dict[str, Binding]:
    """bindings: parameter name (ID) → Binding (spec/ninfer3.md §binding); with a sink, a broken one
    is left out."""
    if attempt(sink, need_type, value, dict, "bindings") is None:
        return {}
    out: dict[str, Binding] = {}
    for name, record in value.items():
        binding = attempt(sink, check_named_binding, name, record, objects)
        if binding is not None:
            out[name] = binding
    return out


def check_named_binding(name: Any, record: Any, objects: dict[str, ObjectEntry]) -> Binding:
    """One member of bindings: an ID naming a Binding (spec/ninfer3.md §binding)."""
    path = member_path("bindings", name)
    need_id(name, path)
    return check_binding(record, objects, path)


def check_binding(record: Any, objects: dict[str, ObjectEntry], path: str) -> Binding:
    """Exactly {object} or exactly {parts: [Part, …]} (spec/ninfer3.md §binding)."""
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
    """{object, range}: a tensor and 0 <= begin < end <= elements(shape) (spec/ninfer3.md
    §binding)."""
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
    """An object id naming an existing **tensor** (spec/ninfer3.md §binding)."""
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
    value: Any, bindings: Collection[str], objects: dict[str, ObjectEntry], sink: Sink = None
) -> tuple[Use, ...]:
    """uses: closed records, bound parameters, unique pairs, policy spelling (spec/ninfer3.md §use).

    `bindings` holds the bound parameter names; with a sink, a broken use is left out."""
    if attempt(sink, need_type, value, list, "uses") is None:
        return ()
    out: list[Use] = []
    pairs: set[tuple[str, str]] = set()
    for i, record in enumerate(value):
        use = attempt(sink, check_use, i, record, bindings, objects, pairs)
        if use is not None:
            out.append(use)
    return tuple(out)


def check_use(
    index: int,
    record: Any,
    bindings: Collection[str],
    objects: dict[str, ObjectEntry],
    pairs: set[tuple[str, str]],
) -> Use:
    """One Use: closed members, a bound parameter, a new (parameter, input) pair, a registered
    activation_policy and valid auxiliaries (spec/ninfer3.md §use)."""
    path = f"uses[{index}]"
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
    pairs.add((parameter, use_input))  # even if a later member breaks: the pair is taken
    policy = record.get("activation_policy")
    require(
        "activation_policy" not in record
        or (type(policy) is str and policy in ACTIVATION_POLICIES),
        "ninfer3.uses.policy",
        f"activation_policy {policy!r:.40}",
        f"{path}.activation_policy",
    )
    auxiliaries = check_auxiliaries(record.get("auxiliaries", {}), objects, path)
    return Use(index, parameter, use_input, policy, auxiliaries)


def check_auxiliaries(
    value: Any, objects: dict[str, ObjectEntry], use_path: str
) -> dict[str, Binding]:
    """auxiliaries: role (ID) → Binding, same rules as spec/ninfer3.md §binding
    (spec/ninfer3.md §use)."""
    path = f"{use_path}.auxiliaries"
    need_type(value, dict, path)
    out: dict[str, Binding] = {}
    for role, record in value.items():
        role_path = member_path(path, role)
        need_id(role, role_path)
        out[role] = check_binding(record, objects, role_path)
    return out
