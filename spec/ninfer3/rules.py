"""Every `.ninfer` v3 rule id, its error class and its meaning, in one table
(spec/ninfer3.md §1-§2).

Rule ids are ``ninfer3.<area>.<rule>``: the area is the header, the JSON text, a directory
member (files, objects, components, bindings, uses, metadata), a continuation volume (part),
a range read, a deferred object check (object), an architecture-binder check (binder) or the
writer. `tests/ref/ninfer3/test_ninfer3_rules.py` checks that every id here is raised by a test
and that the code raises no id missing from this table.
"""

from __future__ import annotations

from weightfile.spec.rule import Rule, table

MAL, INV, EXISTS = "MalformedError", "InvalidError", "DestinationExistsError"
UNS, NOT_FOUND = "UnsupportedError", "NotFoundError"

# The layer that raises each area's rules (spec/rule.py ORIGINS); the rest are "container".
_ORIGIN = {
    "part": "reader",
    "range": "reader",
    "object": "deferred",
    "binder": "binder",
    "text": "binder",
    "writer": "writer",
}


def _rule(rule_id: str, error_class: str, meaning: str, section: str) -> Rule:
    """A row of this table: `section` is a heading of spec/ninfer3.md, written without the §."""
    area = rule_id.split(".")[1]
    origin = (
        "importer" if rule_id.startswith("ninfer3.text.hf_") else _ORIGIN.get(area, "container")
    )
    return Rule(rule_id, error_class, origin, f"§{section}", meaning)


RULES: dict[str, Rule] = table(
    (
        # -- framing (spec/ninfer3.md §1.1, §1.3, §2.9 step 1)
        # ------------------------------------------------
        _rule("ninfer3.header.truncated", MAL, "entry file shorter than the 32-byte header", "1.3"),
        _rule("ninfer3.header.magic", MAL, "entry magic is not NINFER\\0\\3 (v2 named)", "1.3"),
        _rule("ninfer3.header.json_bytes", MAL, "json_bytes outside [1, entry size - 32]", "1.3"),
        _rule("ninfer3.header.json_limit", UNS, "json_bytes above the reader's 256 MiB", "9.1"),
        _rule("ninfer3.json.bom", MAL, "JSON text starts with a UTF-8 byte order mark", "2.1"),
        _rule("ninfer3.json.utf8", MAL, "JSON text is not valid UTF-8", "2.1"),
        _rule("ninfer3.json.syntax", MAL, "JSON text is not standard JSON", "2.1"),
        _rule("ninfer3.json.duplicate_member", MAL, "a member name repeats in one object", "2.1"),
        _rule("ninfer3.json.non_finite", MAL, "NaN / Infinity / -Infinity literal", "2.1"),
        # -- generic record and value domains (spec/ninfer3.md §2.1, §2.8)
        # -------------------------------------
        _rule("ninfer3.record.type", INV, "a member has the wrong JSON type", "2.1"),
        _rule("ninfer3.record.members", INV, "closed record: missing or unlisted member", "2.8"),
        _rule("ninfer3.value.id", INV, "not an ID (non-empty UTF-8 string without U+0000)", "2.1"),
        _rule("ninfer3.value.u64", INV, "not a JSON integer in [0, 2^64-1]", "2.1"),
        _rule("ninfer3.value.positive_u64", INV, "not a U64 >= 1", "2.1"),
        _rule("ninfer3.value.shape", INV, "not 0..16 PositiveU64 dims, product <= 2^64-1", "2.1"),
        # -- files (spec/ninfer3.md §1.4)
        # ----------------------------------------------------------------------
        _rule("ninfer3.files.empty", INV, "files is an empty array", "1.4"),
        _rule("ninfer3.files.entry_path", INV, "files[0].path is not null", "1.4"),
        _rule("ninfer3.files.path", INV, "continuation path has / or \\, or is . or ..", "1.4"),
        _rule("ninfer3.files.path_unique", INV, "two continuation paths are equal", "1.4"),
        _rule("ninfer3.files.path_entry", INV, "continuation path equals the entry's name", "1.4"),
        _rule("ninfer3.files.total", INV, "sum of payload_bytes exceeds 2^64-1", "1.4"),
        # -- objects (spec/ninfer3.md §2.4)
        # --------------------------------------------------------------------
        _rule("ninfer3.objects.empty", INV, "objects is an empty array", "2.2"),
        _rule("ninfer3.objects.kind", INV, "kind is neither tensor nor resource", "2.4"),
        _rule("ninfer3.objects.end_overflow", INV, "offset + bytes exceeds 2^64-1", "2.4"),
        _rule("ninfer3.objects.order", INV, "offset below the previous object's end", "2.4"),
        _rule("ninfer3.objects.bounds", INV, "object ends past the logical payload", "2.4"),
        _rule("ninfer3.objects.id_unique", INV, "the same object id twice", "2.4"),
        # -- components (spec/ninfer3.md §2.3)
        # -----------------------------------------------------------------
        _rule("ninfer3.components.text", INV, "components has no text component", "2.3"),
        _rule("ninfer3.components.target", INV, "target names no existing component", "2.3"),
        _rule("ninfer3.components.resource_ref", INV, "resource role names no resource", "2.3"),
        _rule("ninfer3.components.proposal_component", INV, "proposal on a non-text one", "2.3"),
        _rule(
            "ninfer3.components.proposal_domain", INV, "proposal domain/rows inconsistent", "2.3"
        ),
        # -- bindings (spec/ninfer3.md §2.5)
        # -------------------------------------------------------------------
        _rule("ninfer3.bindings.form", INV, "binding is not exactly {object} or {parts}", "2.5"),
        _rule("ninfer3.bindings.parts_empty", INV, "parts is an empty array", "2.5"),
        _rule("ninfer3.bindings.object_ref", INV, "binding names no existing object", "2.5"),
        _rule("ninfer3.bindings.object_kind", INV, "binding names a resource, not a tensor", "2.5"),
        _rule("ninfer3.bindings.range_form", INV, "range is not an array of two U64s", "2.5"),
        _rule("ninfer3.bindings.range", INV, "range not 0 <= begin < end <= elements", "2.5"),
        _rule("ninfer3.bindings.total", INV, "running part total exceeds 2^64-1", "2.5"),
        # -- uses (spec/ninfer3.md §2.6)
        # -----------------------------------------------------------------------
        _rule("ninfer3.uses.parameter", INV, "use names a parameter with no binding", "2.6"),
        _rule("ninfer3.uses.unique", INV, "(parameter, input) repeats across uses", "2.6"),
        _rule("ninfer3.uses.policy", INV, "activation_policy is not a registered spelling", "2.6"),
        # -- entry length (spec/ninfer3.md §1.3 step 5, §2.9 step 9)
        # -------------------------------------------
        _rule("ninfer3.entry.length", MAL, "entry size != payload start + files[0] bytes", "1.3"),
        # -- continuation volumes, checked lazily (spec/ninfer3.md §1.3 step 6)
        # --------------------------------
        _rule("ninfer3.part.missing", MAL, "a needed continuation volume is absent", "1.3"),
        _rule("ninfer3.part.truncated", MAL, "continuation shorter than its 32-byte header", "1.3"),
        _rule("ninfer3.part.magic", MAL, "continuation magic is not NINPRT\\0\\3", "1.3"),
        _rule("ninfer3.part.index", INV, "part_index differs from the files index", "1.3"),
        _rule("ninfer3.part.artifact_id", INV, "artifact_id differs from the entry's", "1.3"),
        _rule("ninfer3.part.length", MAL, "volume size != 4096 + payload_bytes", "1.3"),
        _rule("ninfer3.part.outside", MAL, "a volume resolves outside the entry's folder", "9.1"),
        # -- range reads (spec/ninfer3.md §1.6)
        # ----------------------------------------------------------------
        _rule("ninfer3.range.bounds", INV, "read range ends past the logical payload", "1.6"),
        _rule("ninfer3.range.closed", "ClosedError", "a read after the file set was closed", "1.6"),
        _rule("ninfer3.range.words", UNS, "binding words: parts cut rows or mix encodings", "2.5"),
        # -- deferred object checks, on use (spec/ninfer3.md §2.9)
        # ---------------------------------------------
        _rule("ninfer3.object.unknown", INV, "no object with the requested id", "2.9"),
        _rule("ninfer3.object.format", INV, "tensor format is not registered", "2.9"),
        _rule("ninfer3.object.layout", INV, "tensor layout is not registered", "2.9"),
        _rule("ninfer3.object.layout_accepts", INV, "layout does not accept the format", "4.1"),
        _rule(
            "ninfer3.object.shape", INV, "shape rank/divisibility does not fit the layout", "4.1"
        ),
        _rule("ninfer3.object.bytes", INV, "bytes != encoded_size(layout, format, shape)", "2.4"),
        _rule("ninfer3.object.offset_alignment", INV, "offset not a multiple of 256", "4.1"),
        _rule("ninfer3.object.encoding", INV, "resource encoding is not raw_bytes_v1", "2.9"),
        # -- architecture binder (spec/ninfer3.md §2.5, §2.6, §2.9, §2.9)
        # -------------------------------------
        _rule("ninfer3.binder.parameter", INV, "a required parameter has no binding", "2.9"),
        _rule("ninfer3.binder.shape", INV, "whole binding shape != parameter shape", "2.5"),
        _rule("ninfer3.binder.coverage", INV, "parts total != parameter element count", "2.5"),
        _rule("ninfer3.binder.component", INV, "selected component is not in the file", "2.9"),
        _rule("ninfer3.binder.component_target", INV, "selected component not on text", "2.3"),
        _rule("ninfer3.binder.resource", INV, "a required resource role is absent", "2.9"),
        _rule("ninfer3.binder.auxiliary_role", INV, "auxiliary role the binder rejects", "2.6"),
        _rule("ninfer3.binder.divisor", INV, "divisor is not one FP32 element", "2.6"),
        _rule("ninfer3.binder.hadamard", INV, "signs not a ±1 bf16 vector of K % 1024 == 0", "2.6"),
        # -- Qwen3.5 text binder: the closed config (spec/ninfer3.md §6.1)
        # ------------------------------------
        _rule(
            "ninfer3.text.key", INV, "config key outside the closed set or of the other FFN", "6.1"
        ),
        _rule(
            "ninfer3.text.missing", INV, "a required or conditionally required key is absent", "6.1"
        ),
        _rule("ninfer3.text.value", INV, "a config value outside its domain", "6.1"),
        _rule(
            "ninfer3.text.architecture", INV, "unknown architecture or unpaired model_type", "6.1"
        ),
        _rule("ninfer3.text.layer_types", INV, "layer_types length or entry is wrong", "6.1"),
        _rule("ninfer3.text.heads", INV, "heads not a multiple of kv heads (or GDN v of k)", "6.1"),
        _rule("ninfer3.text.rope", INV, "rope members, theta, factor or rotary width", "6.1"),
        _rule("ninfer3.text.mrope_section", INV, "not 3 ints fitting the rotary", "6.1"),
        _rule("ninfer3.text.experts", INV, "num_experts_per_tok exceeds num_experts", "6.1"),
        # -- Qwen3.5 text binder: parameters and uses (spec/ninfer3.md §6.2, §2.9)
        # ---------------------------
        _rule("ninfer3.text.unexpected_parameter", INV, "a text/ binding no layer declares", "6.2"),
        _rule("ninfer3.text.direct_format", INV, "direct parameter of another format", "2.9"),
        _rule("ninfer3.text.use_missing", INV, "a declared input of a parameter has no Use", "2.9"),
        _rule("ninfer3.text.use_policy", INV, "a consumed Use has no activation_policy", "2.9"),
        _rule(
            "ninfer3.text.use_unexpected", INV, "a text parameter used at no declared input", "6.2"
        ),
        _rule("ninfer3.text.hadamard", UNS, "hadamard_signs on a text Use (not in ref)", "2.6"),
        # -- Qwen3.5 text from a transformers checkpoint (the importer's source side) --------
        _rule("ninfer3.text.hf_config", INV, "not a Qwen3.5 text config of transformers", "6.1"),
        _rule("ninfer3.text.hf_rope", UNS, "a scaled rope_type (only default is defined)", "6.1"),
        _rule("ninfer3.text.hf_tensor", NOT_FOUND, "a checkpoint tensor is missing", "6.2"),
        _rule("ninfer3.text.hf_shape", INV, "a checkpoint tensor has the wrong shape", "6.2"),
        # -- writer (spec/ninfer3.md §1.7)
        # ---------------------------------------------------------------------
        _rule("ninfer3.writer.objects", INV, "empty object list, duplicate id or bad size", "1.7"),
        _rule("ninfer3.writer.limit", INV, "limit too small for the header and JSON", "1.7"),
        _rule("ninfer3.writer.coverage", INV, "object bytes written twice or not at all", "1.7"),
        _rule("ninfer3.writer.exists", EXISTS, "a destination file already exists", "1.7"),
        _rule("ninfer3.writer.json_limit", UNS, "directory JSON above the reader's 256 MiB", "9.1"),
    )
)

#: Converting a Hugging Face Qwen3.5 checkpoint to `.ninfer` (the importer, not the container):
#: kept apart from RULES because no `.ninfer` file can break them.
IMPORT_RULES: dict[str, Rule] = table(
    Rule(rule_id, error_class, "cli" if rule_id.endswith(".force") else "importer", section, text)
    for rule_id, error_class, section, text in (
        ("qwen35.import.missing_file", NOT_FOUND, "§6.2",
         "config.json, the *.safetensors files or a resource file is absent"),
        ("qwen35.import.config", INV, "§6.1", "config.json is not a Qwen3.5 config"),
        ("qwen35.import.unsupported", UNS, "§6.1",
         "a config the importer does not convert (non-interleaved MRoPE, MoE keys on a dense "
         "model_type, ...)"),
        ("qwen35.import.safetensors", MAL, "§6.2", "a safetensors header or tensor is broken"),
        ("qwen35.import.duplicate", INV, "§6.2", "one tensor name in two shards"),
        ("qwen35.import.dtype", UNS, "§6.2", "a tensor dtype other than F32, F16 or BF16"),
        ("qwen35.import.missing_tensor", NOT_FOUND, "§6.2", "a tensor the model needs is absent"),
        ("qwen35.import.unexpected_tensor", INV, "§6.2", "a checkpoint tensor no parameter uses"),
        ("qwen35.import.shape", INV, "§6.2", "a tensor's shape disagrees with config.json"),
        ("qwen35.import.resource", INV, "§2.3", "a tokenizer or template resource is empty"),
        ("qwen35.import.format", UNS, "§3.1", "an unknown --format"),
        ("qwen35.import.force", UNS, "§1.7",
         "--force given for a .ninfer output (the writer never replaces a file set)"),
    )
)  # fmt: skip


def rules_markdown() -> str:
    """The rule table as Markdown, spliced into spec/ninfer3/README.md between markers."""
    lines = ["| rule id | error class | meaning | § |", "|---|---|---|---|"]
    for r in RULES.values():
        meaning = r.meaning.replace("|", "\\|")
        section = r.section.removeprefix("§")  # the README's column predates the § form
        lines.append(f"| `{r.id}` | {r.error_class} | {meaning} | {section} |")
    return "\n".join(lines) + "\n"
