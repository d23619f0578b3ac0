"""Every `.ninfer` v3 rule id, its error class and its meaning, in one table
(spec/ninfer3.md §1-§2).

Rule ids are ``ninfer3.<area>.<rule>``: the area is the header, the JSON text, a directory
member (files, objects, components, bindings, uses, metadata), a continuation volume (part),
a range read, a deferred object check (object), an architecture-binder check (binder) or the
writer. `tests/ref/ninfer3/test_ninfer3_rules.py` checks that every id here is raised by a test
and that the code raises no id missing from this table.
"""

from __future__ import annotations

from weightfile.spec.rule import CLOSED, EXISTS, INV, MAL, NOT_FOUND, UNS, Rule, table

RULES: dict[str, Rule] = table(
    (
        # -- framing (spec/ninfer3.md §1.1, §1.3, §2.9 step 1) --
        Rule("ninfer3.header.truncated", MAL, "container", "§1.3",
             "entry file shorter than the 32-byte header"),
        Rule("ninfer3.header.magic", MAL, "container", "§1.3",
             "entry magic is not NINFER\\0\\3 (v2 named)"),
        Rule("ninfer3.header.json_bytes", MAL, "container", "§1.3",
             "json_bytes outside [1, entry size - 32]"),
        Rule("ninfer3.header.json_limit", UNS, "container", "§9.1",
             "json_bytes above the reader's 256 MiB"),
        Rule("ninfer3.json.bom", MAL, "container", "§2.1",
             "JSON text starts with a UTF-8 byte order mark"),
        Rule("ninfer3.json.utf8", MAL, "container", "§2.1", "JSON text is not valid UTF-8"),
        Rule("ninfer3.json.syntax", MAL, "container", "§2.1", "JSON text is not standard JSON"),
        Rule("ninfer3.json.duplicate_member", MAL, "container", "§2.1",
             "a member name repeats in one object"),
        Rule("ninfer3.json.non_finite", MAL, "container", "§2.1",
             "NaN / Infinity / -Infinity literal"),
        # -- generic record and value domains (spec/ninfer3.md §2.1, §2.8) --
        Rule("ninfer3.record.type", INV, "container", "§2.1", "a member has the wrong JSON type"),
        Rule("ninfer3.record.members", INV, "container", "§2.8",
             "closed record: missing or unlisted member"),
        Rule("ninfer3.value.id", INV, "container", "§2.1",
             "not an ID (non-empty UTF-8 string without U+0000)"),
        Rule("ninfer3.value.u64", INV, "container", "§2.1", "not a JSON integer in [0, 2^64-1]"),
        Rule("ninfer3.value.positive_u64", INV, "container", "§2.1", "not a U64 >= 1"),
        Rule("ninfer3.value.shape", INV, "container", "§2.1",
             "not 0..16 PositiveU64 dims, product <= 2^64-1"),
        # -- files (spec/ninfer3.md §1.4) --
        Rule("ninfer3.files.empty", INV, "container", "§1.4", "files is an empty array"),
        Rule("ninfer3.files.entry_path", INV, "container", "§1.4", "files[0].path is not null"),
        Rule("ninfer3.files.path", INV, "container", "§1.4",
             "continuation path has / or \\, or is . or .."),
        Rule("ninfer3.files.path_unique", INV, "container", "§1.4",
             "two continuation paths are equal"),
        Rule("ninfer3.files.path_entry", INV, "container", "§1.4",
             "continuation path equals the entry's name"),
        Rule("ninfer3.files.total", INV, "container", "§1.4",
             "sum of payload_bytes exceeds 2^64-1"),
        # -- objects (spec/ninfer3.md §2.4) --
        Rule("ninfer3.objects.empty", INV, "container", "§2.2", "objects is an empty array"),
        Rule("ninfer3.objects.kind", INV, "container", "§2.4",
             "kind is neither tensor nor resource"),
        Rule("ninfer3.objects.end_overflow", INV, "container", "§2.4",
             "offset + bytes exceeds 2^64-1"),
        Rule("ninfer3.objects.order", INV, "container", "§2.4",
             "offset below the previous object's end"),
        Rule("ninfer3.objects.bounds", INV, "container", "§2.4",
             "object ends past the logical payload"),
        Rule("ninfer3.objects.id_unique", INV, "container", "§2.4", "the same object id twice"),
        # -- components (spec/ninfer3.md §2.3) --
        Rule("ninfer3.components.text", INV, "container", "§2.3",
             "components has no text component"),
        Rule("ninfer3.components.target", INV, "container", "§2.3",
             "target names no existing component"),
        Rule("ninfer3.components.resource_ref", INV, "container", "§2.3",
             "resource role names no resource"),
        Rule("ninfer3.components.proposal_component", INV, "container", "§2.3",
             "proposal on a non-text one"),
        Rule("ninfer3.components.proposal_domain", INV, "container", "§2.3",
             "proposal domain/rows inconsistent"),
        # -- bindings (spec/ninfer3.md §2.5) --
        Rule("ninfer3.bindings.form", INV, "container", "§2.5",
             "binding is not exactly {object} or {parts}"),
        Rule("ninfer3.bindings.parts_empty", INV, "container", "§2.5", "parts is an empty array"),
        Rule("ninfer3.bindings.object_ref", INV, "container", "§2.5",
             "binding names no existing object"),
        Rule("ninfer3.bindings.object_kind", INV, "container", "§2.5",
             "binding names a resource, not a tensor"),
        Rule("ninfer3.bindings.range_form", INV, "container", "§2.5",
             "range is not an array of two U64s"),
        Rule("ninfer3.bindings.range", INV, "container", "§2.5",
             "range not 0 <= begin < end <= elements"),
        Rule("ninfer3.bindings.total", INV, "container", "§2.5",
             "running part total exceeds 2^64-1"),
        # -- uses (spec/ninfer3.md §2.6) --
        Rule("ninfer3.uses.parameter", INV, "container", "§2.6",
             "use names a parameter with no binding"),
        Rule("ninfer3.uses.unique", INV, "container", "§2.6",
             "(parameter, input) repeats across uses"),
        Rule("ninfer3.uses.policy", INV, "container", "§2.6",
             "activation_policy is not a registered spelling"),
        # -- entry length (spec/ninfer3.md §1.3 step 5, §2.9 step 9) --
        Rule("ninfer3.entry.length", MAL, "container", "§1.3",
             "entry size != payload start + files[0] bytes"),
        # -- continuation volumes, checked lazily (spec/ninfer3.md §1.3 step 6) --
        Rule("ninfer3.part.missing", MAL, "reader", "§1.3",
             "a needed continuation volume is absent"),
        Rule("ninfer3.part.truncated", MAL, "reader", "§1.3",
             "continuation shorter than its 32-byte header"),
        Rule("ninfer3.part.magic", MAL, "reader", "§1.3", "continuation magic is not NINPRT\\0\\3"),
        Rule("ninfer3.part.index", INV, "reader", "§1.3",
             "part_index differs from the files index"),
        Rule("ninfer3.part.artifact_id", INV, "reader", "§1.3",
             "artifact_id differs from the entry's"),
        Rule("ninfer3.part.length", MAL, "reader", "§1.3", "volume size != 4096 + payload_bytes"),
        Rule("ninfer3.part.outside", MAL, "reader", "§9.1",
             "a volume resolves outside the entry's folder"),
        # -- range reads (spec/ninfer3.md §1.6) --
        Rule("ninfer3.range.bounds", INV, "reader", "§1.6",
             "read range ends past the logical payload"),
        Rule("ninfer3.range.closed", CLOSED, "reader", "§1.6",
             "a read after the file set was closed"),
        Rule("ninfer3.range.words", UNS, "reader", "§2.5",
             "binding words: parts cut rows or mix encodings"),
        # -- deferred object checks, on use (spec/ninfer3.md §2.9) --
        Rule("ninfer3.object.unknown", INV, "deferred", "§2.9", "no object with the requested id"),
        Rule("ninfer3.object.format", INV, "deferred", "§2.9", "tensor format is not registered"),
        Rule("ninfer3.object.layout", INV, "deferred", "§2.9", "tensor layout is not registered"),
        Rule("ninfer3.object.layout_accepts", INV, "deferred", "§4.1",
             "layout does not accept the format"),
        Rule("ninfer3.object.shape", INV, "deferred", "§4.1",
             "shape rank/divisibility does not fit the layout"),
        Rule("ninfer3.object.bytes", INV, "deferred", "§2.4",
             "bytes != encoded_size(layout, format, shape)"),
        Rule("ninfer3.object.offset_alignment", INV, "deferred", "§4.1",
             "offset not a multiple of 256"),
        Rule("ninfer3.object.encoding", INV, "deferred", "§2.9",
             "resource encoding is not raw_bytes_v1"),
        # -- architecture binder (spec/ninfer3.md §2.5, §2.6, §2.9, §2.9) --
        Rule("ninfer3.binder.parameter", INV, "binder", "§2.9",
             "a required parameter has no binding"),
        Rule("ninfer3.binder.shape", INV, "binder", "§2.5",
             "whole binding shape != parameter shape"),
        Rule("ninfer3.binder.coverage", INV, "binder", "§2.5",
             "parts total != parameter element count"),
        Rule("ninfer3.binder.component", INV, "binder", "§2.9",
             "selected component is not in the file"),
        Rule("ninfer3.binder.component_target", INV, "binder", "§2.3",
             "selected component not on text"),
        Rule("ninfer3.binder.resource", INV, "binder", "§2.9",
             "a required resource role is absent"),
        Rule("ninfer3.binder.auxiliary_role", INV, "binder", "§2.6",
             "auxiliary role the binder rejects"),
        Rule("ninfer3.binder.divisor", INV, "binder", "§2.6", "divisor is not one FP32 element"),
        Rule("ninfer3.binder.hadamard", INV, "binder", "§2.6",
             "signs not a ±1 bf16 vector of K % 1024 == 0"),
        # -- Qwen3.5 text binder: the closed config (spec/ninfer3.md §6.1) --
        Rule("ninfer3.text.key", INV, "binder", "§6.1",
             "config key outside the closed set or of the other FFN"),
        Rule("ninfer3.text.missing", INV, "binder", "§6.1",
             "a required or conditionally required key is absent"),
        Rule("ninfer3.text.value", INV, "binder", "§6.1", "a config value outside its domain"),
        Rule("ninfer3.text.architecture", INV, "binder", "§6.1",
             "unknown architecture or unpaired model_type"),
        Rule("ninfer3.text.layer_types", INV, "binder", "§6.1",
             "layer_types length or entry is wrong"),
        Rule("ninfer3.text.heads", INV, "binder", "§6.1",
             "heads not a multiple of kv heads (or GDN v of k)"),
        Rule("ninfer3.text.rope", INV, "binder", "§6.1",
             "rope members, theta, factor or rotary width"),
        Rule("ninfer3.text.mrope_section", INV, "binder", "§6.1", "not 3 ints fitting the rotary"),
        Rule("ninfer3.text.experts", INV, "binder", "§6.1",
             "num_experts_per_tok exceeds num_experts"),
        # -- Qwen3.5 text binder: parameters and uses (spec/ninfer3.md §6.2, §2.9) --
        Rule("ninfer3.text.unexpected_parameter", INV, "binder", "§6.2",
             "a text/ binding no layer declares"),
        Rule("ninfer3.text.direct_format", INV, "binder", "§2.9",
             "direct parameter of another format"),
        Rule("ninfer3.text.use_missing", INV, "binder", "§2.9",
             "a declared input of a parameter has no Use"),
        Rule("ninfer3.text.use_policy", INV, "binder", "§2.9",
             "a consumed Use has no activation_policy"),
        Rule("ninfer3.text.use_unexpected", INV, "binder", "§6.2",
             "a text parameter used at no declared input"),
        Rule("ninfer3.text.hadamard", UNS, "binder", "§2.6",
             "hadamard_signs on a text Use (not in ref)"),
        # -- Qwen3.5 text from a transformers checkpoint (the importer's source side) --------
        Rule("ninfer3.text.hf_config", INV, "importer", "§6.1",
             "not a Qwen3.5 text config of transformers"),
        Rule("ninfer3.text.hf_rope", UNS, "importer", "§6.1",
             "a scaled rope_type (only default is defined)"),
        Rule("ninfer3.text.hf_tensor", NOT_FOUND, "importer", "§6.2",
             "a checkpoint tensor is missing"),
        Rule("ninfer3.text.hf_shape", INV, "importer", "§6.2",
             "a checkpoint tensor has the wrong shape"),
        # -- writer (spec/ninfer3.md §1.7) --
        Rule("ninfer3.writer.objects", INV, "writer", "§1.7",
             "empty object list, duplicate id or bad size"),
        Rule("ninfer3.writer.limit", INV, "writer", "§1.7",
             "limit too small for the header and JSON"),
        Rule("ninfer3.writer.coverage", INV, "writer", "§1.7",
             "object bytes written twice or not at all"),
        Rule("ninfer3.writer.exists", EXISTS, "writer", "§1.7",
             "a destination file already exists"),
        Rule("ninfer3.writer.json_limit", UNS, "writer", "§9.1",
             "directory JSON above the reader's 256 MiB"),
    )
)  # fmt: skip

#: Converting a Hugging Face Qwen3.5 checkpoint to `.ninfer` (the importer, not the container):
#: kept apart from RULES because no `.ninfer` file can break them.
IMPORT_RULES: dict[str, Rule] = table(
    (
        Rule("qwen35.import.missing_file", NOT_FOUND, "importer", "§6.2",
             "config.json, the *.safetensors files or a resource file is absent"),
        Rule("qwen35.import.config", INV, "importer", "§6.1",
             "config.json is not a Qwen3.5 config"),
        Rule("qwen35.import.unsupported", UNS, "importer", "§6.1",
             "a config the importer does not convert (non-interleaved MRoPE, MoE keys on a dense "
             "model_type, ...)"),
        Rule("qwen35.import.safetensors", MAL, "importer", "§6.2",
             "a safetensors header or tensor is broken"),
        Rule("qwen35.import.duplicate", INV, "importer", "§6.2", "one tensor name in two shards"),
        Rule("qwen35.import.dtype", UNS, "importer", "§6.2",
             "a tensor dtype other than F32, F16 or BF16"),
        Rule("qwen35.import.missing_tensor", NOT_FOUND, "importer", "§6.2",
             "a tensor the model needs is absent"),
        Rule("qwen35.import.unexpected_tensor", INV, "importer", "§6.2",
             "a checkpoint tensor no parameter uses"),
        Rule("qwen35.import.shape", INV, "importer", "§6.2",
             "a tensor's shape disagrees with config.json"),
        Rule("qwen35.import.resource", INV, "importer", "§2.3",
             "a tokenizer or template resource is empty"),
        Rule("qwen35.import.format", UNS, "importer", "§3.1", "an unknown --format"),
        Rule("qwen35.import.force", UNS, "cli", "§1.7",
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
