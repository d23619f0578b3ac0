"""`weightfile inspect FILE [--json] [--layer N] [--filter GLOB]`: header, arch, flags by name
and the directory; with --layer/--filter, the chosen tensors' logical shapes and the parameter
count instead, one row per tensor as gguf-dump lists them.

A file that parses but breaks rules is still shown, followed by its violations (the JSON's
`violations`, in verify --json's form); only a file that cannot be parsed is refused. The JSON
document is tagged `"schema": "weightfile.inspect/1"` and shares its top-level vocabulary with
verify --json: `schema`, `format` ("vqf" | "ninfer3"), `path`, `file_bytes`, `violations`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from weightfile._table import aligned
from weightfile.formats import sniff
from weightfile.spec.errors import WeightfileError

from ._common import add_file_argument, add_passphrase_argument, passphrase, resolve_file


def register(sub: Any) -> None:
    parser = sub.add_parser("inspect", help="show a file's header, architecture and directory")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print JSON for tools")
    parser.add_argument(
        "--layer", type=int, metavar="N", default=None,
        help="list layer N's tensors, one row each: elements, shape, type, name (as gguf-dump), "
        "and the parameter count",
    )  # fmt: skip
    parser.add_argument(
        "--filter", metavar="GLOB", default=None,
        help="list the tensors whose name matches GLOB (fnmatch: 'q4_*', '*norm*'), as --layer",
    )  # fmt: skip
    add_passphrase_argument(parser)
    parser.set_defaults(run=run)


SCHEMA = "weightfile.inspect/1"


def run(args: argparse.Namespace) -> int:
    path = resolve_file("inspect", args)
    kind = sniff(path)
    key = passphrase(args)
    if args.layer is not None or args.filter is not None:
        return run_tensor_list(path, key, args)
    if kind == "vqf":
        description = describe_vqf(path, key)
        format_text = format_vqf
    else:
        from weightfile.ref.ninfer3.describe import describe

        description = describe(path)
        format_text = format_ninfer3
    violations = rule_violations(path, key)
    if args.json:
        doc = json_document(description, violations)
        if kind != "vqf":
            doc["inventory"] = ninfer3_inventory(description)
        print(json.dumps(doc, indent=2))
        return 0
    print(format_text(description))
    if kind == "vqf":
        print(f"engine: {engine_defaults_line(path, key)}")
        for line in engine_defect_lines(path, key):
            print(line)
    if violations:
        print(f"\n{len(violations)} violation(s) (weightfile verify lists the same):")
        for v in violations:
            print(f"  {v.error_class}: {v}")
    return 0


def describe_vqf(path: Any, key: bytes | None) -> dict[str, Any]:
    """The VQF description; a directory entry past the file's end (a rule, not a parse error)
    is shown rather than refused."""
    from weightfile.ref.vqf.describe import describe
    from weightfile.ref.vqf.read import open_vqf
    from weightfile.spec.errors import InvalidError

    try:
        vqf = open_vqf(path, passphrase=key)
    except InvalidError as exc:
        if exc.rule != "vqf.directory.tensor_range":
            raise
        vqf = open_vqf(path, passphrase=key, check_ranges=False)
    with vqf:
        return describe(vqf, passphrase=key)


def rule_violations(path: Any, key: bytes | None) -> list[Any]:
    """Every violation the strict validator finds (no checksum: inspect reads no payload)."""
    from weightfile.model_file import validate

    return validate(path, passphrase=key)


def violation_json(v: Any) -> dict[str, Any]:
    """One violation as verify --json and inspect --json write it."""
    return {
        "rule": v.rule,
        "error_class": v.error_class,
        "detail": v.detail,
        "offset": v.offset,
        "path": v.path,
    }


def json_document(description: dict[str, Any], violations: list[Any]) -> dict[str, Any]:
    """The description under the shared top-level vocabulary (module docstring)."""
    d = dict(description)
    if "file_size" in d:  # the VQF describer's name for what .ninfer calls file_bytes
        d["file_bytes"] = d.pop("file_size")
    head = {k: d.pop(k) for k in ("format", "path", "file_bytes") if k in d}
    return {
        "schema": SCHEMA,
        **head,
        **d,
        "violations": [violation_json(v) for v in violations],
    }


def engine_defaults_line(path: Any, key: bytes | None) -> str:
    """Would a default board engine load it (spec/vqf.md §engine-defaults), as one line."""
    from weightfile.ref.vqf.engine_load import engine_load_file
    from weightfile.ref.vqf.read import open_vqf

    try:
        with open_vqf(path, passphrase=key, check_ranges=False) as vqf:
            return engine_load_file(vqf).summary()
    except WeightfileError as exc:  # shown above with the violations; say why here too
        return f"not checked ({exc.rule})"


def engine_defect_lines(path: Any, key: bytes | None) -> list[str]:
    """One line per known engine defect the file's geometry triggers (spec/numerics.md
    §board-defects); none when the header cannot be read (the violations say why)."""
    from weightfile.ref.vqf.engine_defects import engine_defects_file
    from weightfile.ref.vqf.read import open_vqf

    try:
        with open_vqf(path, passphrase=key, check_ranges=False) as vqf:
            return [f"engine: defect [{d.rule}] {d.detail}" for d in engine_defects_file(vqf)]
    except WeightfileError:
        return []


# -- text: through the one table printer (weightfile/_table.py) -------------------------------
#: Arch field groups a text-only dense file leaves all zero (spec/vqf.md §arch-semantics): the
#: vision tower with MRoPE and its token ids, and the MoE tail of version 3.
VISION_FIELDS = ("has_mrope", "has_vision", "mrope_n_sec", "mrope_sections", "image_token_id",
                 "video_token_id")  # fmt: skip


def shown_arch(arch: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The arch without the vision and MoE groups whose every field is zero, and the groups
    left out (a plain Qwen3 file prints its own geometry, not ~30 zeros)."""
    from weightfile.spec.vqf.arch import MOE_FIELD_NAMES

    vision = [k for k in arch if k.startswith(("vis_", "vision_")) or k in VISION_FIELDS]
    groups = {"vision": vision, "MoE": [k for k in MOE_FIELD_NAMES if k in arch]}

    def zero(value: Any) -> bool:
        return not any(value) if isinstance(value, list) else not value

    omitted = [g for g, keys in groups.items() if keys and all(zero(arch[k]) for k in keys)]
    hidden = {k for g in omitted for k in groups[g]}
    return {k: v for k, v in arch.items() if k not in hidden}, omitted


def format_vqf(d: dict[str, Any]) -> str:
    """The VQF describer's result (ref/vqf/describe.py) as text: header lines, the arch
    wrapped, the directory table."""
    h, a = d["header"], d["arch"]
    lines = [
        f"{d['path']}: VQF version {h['version']}, {h['layout']} {h['header_bytes']}-byte header, "
        f"{d['file_size']:,} bytes",
        f"  flags        {h['flags']:#06x}  {' | '.join(h['flag_names']) or '-'}",
        f"  tensors      {h['n_tensors']}  data_offset {h['data_offset']:,}  "
        f"file_len {h['file_len']:,}",
        f"  trailer      {h['trailer']} {h['trailer_value']}",
    ]
    p = d.get("protection", {})
    if "ENC" in h["flag_names"]:
        lines.append(f"  encrypted    SM4-CTR, iv {h['enc_iv']}; tag {p['tag']}")
        lines.append(f"  writer kind  {p['writer_kind']}")
        lines.append(f"  loader       {p['loader_decrypt']}")
    if h["signed"]:
        lines.append(f"  signed       SM2 by pub {p['signer_pub']}")
    if p:
        lines.append(f"  loader       {p['loader_policy']}")
    shown, omitted = shown_arch(a)
    lines.append("arch" + (f"  ({' and '.join(omitted)} fields all 0: omitted; --json lists "
                           "every field)" if omitted else ""))  # fmt: skip
    items = [f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()]
    line = ""
    for item in items:  # wrap at ~96 columns
        if line and len(line) + 2 + len(item) > 96:
            lines.append(line)
            line = ""
        line = f"{line}  {item}"
    lines.append(line)
    lines.append("directory")
    header = ("#", "name", "qtype", "rows × cols", "offset", "bytes")
    rows = [
        (
            str(t["index"]),
            t["name"],
            t["qtype_name"],
            f"{t['rows']} × {t['cols']}",
            f"{t['offset']:,}",
            f"{t['bytes']:,}",
        )
        for t in d["tensors"]
    ]
    lines += aligned(header, rows, right={0, 3, 4, 5})
    return "\n".join(lines)


def format_ninfer3(description: dict[str, Any]) -> str:
    """The .ninfer describer's result (ref/ninfer3/describe.py) as readable sections with
    tables: header, files, components, objects, bindings, uses."""
    h = description["header"]
    out = [
        f"{description['path']}: .ninfer v3",
        f"  artifact_id          {h['artifact_id']}",
        f"  json_bytes           {h['json_bytes']:,}",
        f"  entry_payload_start  {h['entry_payload_start']:,}",
        f"  payload_bytes        {description['payload_bytes']:,}",
        f"  file_bytes (set)     {description['file_bytes']:,}",
    ]
    out += _ninfer3_files(description)
    out += _ninfer3_components(description)
    out += _ninfer3_objects(description)
    out += _ninfer3_bindings_and_uses(description)
    out += _ninfer3_inventory(description)
    return "\n".join(out) + "\n"


#: A parameter name's first part -> the inventory column it counts in
#: (spec/ninfer3.md §recipes "Counting").
INVENTORY_ORDER = ("text", "mtp", "vision", "proposal", "resources", "other")


def _owner(name: str) -> str:
    head = name.split("/", 1)[0]
    return head if head in INVENTORY_ORDER[:4] else "other"


def ninfer3_inventory(description: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Objects, bindings and uses per component (spec/ninfer3.md §recipes "Counting"): a binding
    and a Use count for the component that prefixes their parameter's name (`proposal/` apart);
    an object for the first binding that reads it, a resource (raw bytes) under `resources`,
    one only a Use's auxiliary reads under that Use's parameter's component."""
    counts = {c: {"objects": 0, "bindings": 0, "uses": 0} for c in INVENTORY_ORDER}
    owner: dict[str, str] = {}
    for b in description["bindings"]:
        counts[_owner(b["name"])]["bindings"] += 1
        for part in [b] if "object" in b else b["parts"]:
            owner.setdefault(part["object"], _owner(b["name"]))
    for u in description["uses"]:
        counts[_owner(u["parameter"])]["uses"] += 1
        for a in u["auxiliaries"].values():
            for part in [a] if "object" in a else a["parts"]:
                owner.setdefault(part["object"], _owner(u["parameter"]))
    for o in description["objects"]:
        where = "resources" if o["kind"] == "resource" else owner.get(o["id"], "other")
        counts[where]["objects"] += 1
    return {c: n for c, n in counts.items() if any(n.values())}


def _ninfer3_inventory(description: dict[str, Any]) -> list[str]:
    """The per-component counts and their totals."""
    inv = ninfer3_inventory(description)
    rows = [
        [c, f"{n['objects']:,}", f"{n['bindings']:,}", f"{n['uses']:,}"] for c, n in inv.items()
    ]
    rows.append(
        [
            "total",
            *(f"{sum(n[k] for n in inv.values()):,}" for k in ("objects", "bindings", "uses")),
        ]
    )
    return [
        "",
        "Inventory",
        *aligned(["component", "objects", "bindings", "uses"], rows, rule=True),
    ]


def _ninfer3_files(description: dict[str, Any]) -> list[str]:
    """The files table: each volume's payload share, logical range and size on disk."""
    out = ["", f"Files ({len(description['files'])})"]
    rows = [
        [
            str(f["index"]),
            f["name"] + ("" if f["path"] is not None else " (entry)"),
            f"{f['payload_bytes']:,}",
            f"[{f['logical_start']:,}, {f['logical_end']:,})",
            f"{f['file_bytes']:,}",
            "missing" if f["actual_bytes"] is None else f"{f['actual_bytes']:,}",
        ]
        for f in description["files"]
    ]
    out += aligned(
        ["#", "name", "payload_bytes", "logical range", "size", "on disk"], rows, rule=True
    )
    return out


def _ninfer3_components(description: dict[str, Any]) -> list[str]:
    """Each component with its target, config, resources and proposal."""
    out = ["", f"Components ({len(description['components'])})"]
    for c in description["components"]:
        target = f" -> {c['target']}" if c["target"] else ""
        out.append(f"  {c['id']}{target}")
        for key, value in c["config"].items():
            out.append(f"    config   {key:<28} {_compact(value)}")
        for role, object_id in c["resources"].items():
            out.append(f"    resource {role:<28} {object_id}")
        if c["proposal"]:
            out.append(f"    proposal {c['proposal']}")
    return out


def _ninfer3_objects(description: dict[str, Any]) -> list[str]:
    """The objects table, and the objects that span more than one file."""
    out = ["", f"Objects ({len(description['objects'])})"]
    rows = [
        [
            o["id"],
            o["kind"],
            o["format"] or o["encoding"] or "",
            o["layout"] or "",
            "" if o["shape"] is None else "x".join(map(str, o["shape"])) or "[]",
            f"{o['offset']:,}",
            f"{o['bytes']:,}",
            "/".join(map(str, o["files"])) + (" *" if len(o["files"]) > 1 else ""),
        ]
        for o in description["objects"]
    ]
    out += aligned(
        ["id", "kind", "format", "layout", "shape", "offset", "bytes", "files"], rows, rule=True
    )
    spanning = [o for o in description["objects"] if len(o["files"]) > 1]
    if spanning:
        out.append("  * spans files: " + ", ".join(_span(o) for o in spanning))
    return out


def _ninfer3_bindings_and_uses(description: dict[str, Any]) -> list[str]:
    """The bindings table, then the uses table."""
    out = ["", f"Bindings ({len(description['bindings'])})"]
    rows = [[b["name"], _binding_text(b)] for b in description["bindings"]]
    out += aligned(["parameter", "binding"], rows, rule=True)
    out += ["", f"Uses ({len(description['uses'])})"]
    rows = [
        [
            u["parameter"],
            u["input"],
            u["activation_policy"] or "-",
            ", ".join(f"{r}={_binding_text(b)}" for r, b in u["auxiliaries"].items()) or "-",
        ]
        for u in description["uses"]
    ]
    out += aligned(["parameter", "input", "policy", "auxiliaries"], rows, rule=True)
    return out


def _compact(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= width else text[: width - 3] + "..."


def _span(o: dict[str, Any]) -> str:
    return f"{o['id']} (files {' and '.join(map(str, o['files']))})"


def _binding_text(b: dict[str, Any]) -> str:
    if "object" in b:
        return f"-> {b['object']}"
    return " + ".join(f"{p['object']}[{p['range'][0]}:{p['range'][1]}]" for p in b["parts"])


# -- --layer / --filter: the tensors one by one, as gguf-dump lists them ------------------------
TENSORS_SCHEMA = "weightfile.inspect.tensors/1"


def run_tensor_list(path: Any, key: bytes | None, args: argparse.Namespace) -> int:
    """Print (or --json) the tensors --layer and --filter choose, and their parameter count."""
    from weightfile.model_file import open_model_file

    from ._common import UsageError

    options = {} if key is None else {"passphrase": key}
    with open_model_file(path, **options) as f:
        layers = layer_count(f)
        if args.layer is not None and not 0 <= args.layer < layers:
            raise UsageError(f"--layer {args.layer}: the model has layers 0..{layers - 1}")
        rows = tensor_rows(f, args.layer, args.filter)
    params = sum(r["elements"] for r in rows if not r["copy"])
    if args.json:
        doc = {"schema": TENSORS_SCHEMA, "path": str(path), "layer": args.layer,
               "filter": args.filter, "tensors": rows, "parameters": params}  # fmt: skip
        print(json.dumps(doc, indent=2))
        return 0
    header = ("#", "elements", "shape", "type", "name")
    table = [
        (str(i), f"{r['elements']:,}", "[" + ", ".join(map(str, r["shape"])) + "]", r["type"],
         r["name"] + (" (copy)" if r["copy"] else ""))
        for i, r in enumerate(rows)
    ]  # fmt: skip
    print("\n".join(aligned(header, table, right={0, 1})))
    copies = sum(r["copy"] for r in rows)
    note = f" ({copies} copies of other tensors not counted)" if copies else ""
    print(f"{len(rows)} tensors, {params:,} parameters{note}")
    return 0


def layer_count(f: Any) -> int:
    """Decoder layers: the VQF arch's n_layers, the .ninfer text config's num_hidden_layers."""
    if f.format == "vqf":
        return int(f.geometry.nl)
    meta = f.artifact.directory.components.get("text", {}).get("config", {})
    return int(meta.get("num_hidden_layers", 0))


def tensor_rows(f: Any, layer: int | None, pattern: str | None) -> list[dict[str, Any]]:
    """One row per tensor: name, type, logical shape (row-major, outermost first), elements,
    and whether it is a copy (a dual file's q4_* beside its q8_*, an x8_* copy of a q4_*)."""
    import fnmatch
    import math

    present = set(f.names()) if f.format == "vqf" else set()
    rows = []
    for name, kind, shape in named_shapes(f, layer):
        if pattern is not None and not fnmatch.fnmatchcase(name, pattern):
            continue
        rows.append({"name": name, "type": kind, "shape": list(shape),
                     "elements": math.prod(shape), "copy": is_copy(present, name)})  # fmt: skip
    return rows


def named_shapes(f: Any, layer: int | None) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, type, shape) of every tensor; with `layer`, only layer N's, a stacked VQF tensor
    as its slice `name[N]` (spec/vqf.md §text-tensors: per-layer matrices are stacked)."""
    import re

    if f.format != "vqf":
        d = f.artifact.directory
        names = list(d.bindings) or [o.id for o in d.objects if o.kind != "resource"]
        if layer is not None:
            names = [n for n in names if re.search(rf"(^|\.)layers\.{layer}\.", n)]
        return [(n, _ninfer_type(d, n), tuple(f.shape(n))) for n in names]
    out = []
    for name in f.names():
        count, rows, cols = f._matrices(f.file.entry(name))
        shape = tuple(f.shape(name))
        per_layer = not name.startswith("v_") and count >= f.geometry.nl > 0
        per_layer = per_layer and count % f.geometry.nl == 0 and count > 1
        if layer is None:
            out.append((name, f.codec(name), shape))
        elif per_layer:  # its count // nl matrices of layer N
            k = count // f.geometry.nl
            inner = (cols,) if rows == 1 else (rows, cols)
            sliced = (k, *inner) if k > 1 else inner
            out.append((f"{name}[{layer}]", f.codec(name), sliced))
    return out


def _ninfer_type(d: Any, name: str) -> str:
    """An object's format, or the formats of the objects a binding's parts read."""
    if name in d.objects_by_id:
        return str(d.objects_by_id[name].format or d.objects_by_id[name].kind)
    parts = d.bindings[name].get("parts", []) if isinstance(d.bindings[name], dict) else []
    formats = {str(d.objects_by_id[p["object"]].format) for p in parts if "object" in p}
    return "+".join(sorted(formats)) or "binding"


def is_copy(present: set[str], name: str) -> bool:
    """A second copy of weights the VQF file already holds (`present`: its tensor names): x8_*
    (of q4_*), and q4_* beside q8_* of the same matrix (a dual file, spec/vqf.md
    §weight-modes)."""
    base = name.split("[")[0]
    return base.startswith("x8_") or (base.startswith("q4_") and "q8_" + base[3:] in present)
