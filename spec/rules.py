"""One registry of every rule id the project raises (spec/README.md).

The rows, all of the one `Rule` type (spec/rule.py), live in per-area tables: the VQF container
(spec/vqf/rules.py), the `.ninfer` v3 container and binders and the Qwen3.5 importer
(spec/ninfer3/rules.py), and the layers no single container owns (here: the codecs, format
sniffing, the frontend, the CLI). `RULES` merges them into one mapping and refuses a duplicate id.

Codec rules are families: ``vqf.codec.*.length`` stands for ``vqf.codec.<codec>.length`` for
every codec of the registry, because each codec raises the same rule under its own name
(spec/codecs/vqf/registry.py `rule`). `lookup` resolves a concrete id to its row.
"""

from __future__ import annotations

from weightfile.spec.ninfer3.rules import IMPORT_RULES
from weightfile.spec.ninfer3.rules import RULES as NINFER3_RULES
from weightfile.spec.rule import (
    DOCS,
    EXISTS,
    INV,
    MAL,
    NOT_FOUND,
    ORIGINS,
    PREFIXES,
    UNS,
    Rule,
    table,
)
from weightfile.spec.vqf.rules import RULES as VQF_RULES

__all__ = ["DOCS", "ORIGINS", "PREFIXES", "RULES", "Rule", "lookup", "table"]

# -- codecs: one family row per rule each codec raises under its own name ---------------------
CODEC_RULES = table(
    (
        # VQF codecs (spec/vqf.md §encodings, §quantisation; spec/codecs/vqf/registry.py,
        # ref/codecs/vqf/)
        Rule("vqf.codec.qtype", UNS, "codec", "§3.2", "a qtype that names no VQF encoding"),
        Rule("vqf.codec.q8_tiling", INV, "codec", "§5.6",
             "q8_tiling is not legacy/4x4, or 4x4 contradicts flag Q8_8X8"),
        Rule("vqf.codec.*.length", MAL, "codec", "§5.9", "payload length != the codec's size"),
        Rule("vqf.codec.*.shape", MAL, "codec", "§5.9",
             "rows/cols not integers >= 0, or a value count that differs from rows·cols"),
        Rule("vqf.codec.*.geometry", MAL, "codec", "§5.6-§5.8",
             "rows or cols not a multiple of the tiling's row group / 32-column block"),
        Rule("vqf.codec.*.mode", UNS, "codec", "§6", "an encoder mode the codec does not define"),
        Rule("vqf.codec.*.finite_input", INV, "codec", "§6", "quantiser input is NaN or Inf"),
        Rule("vqf.codec.*.scale_finite", INV, "codec", "§5.3", "a block scale is NaN or Inf"),
        Rule("vqf.codec.*.scale_sign", INV, "codec", "§5.3", "a block scale is negative"),
        Rule("vqf.codec.*.code_domain", INV, "codec", "§5.3", "a code outside the codec's range"),
        Rule("vqf.codec.*.padding", INV, "codec", "§5.9", "a padding code or nibble not neutral"),
        Rule("vqf.codec.*.zero_block", INV, "codec", "§6.2",
             "an all-zero Q4 block whose scale is not 0x3c00"),
        Rule("vqf.codec.*.unwritten_tail", INV, "codec", "§5.5",
             "G256: a block past the last group's written ones is not zero"),
        Rule("vqf.codec.*.scale_shared", INV, "codec", "§5.5",
             "G256: the blocks of one 256-element group do not share one scale"),
        # .ninfer v3 codecs (spec/ninfer3.md §formats, §layouts; spec/codecs/ninfer3/registry.py)
        Rule("ninfer3.codec.unknown_pair", INV, "codec", "§4.1",
             "no codec for the (format, layout) pair"),
        Rule("ninfer3.codec.*.length", MAL, "codec", "§4.1", "payload length != encoded size"),
        Rule("ninfer3.codec.*.shape", INV, "codec", "§4.1", "the shape does not fit the layout"),
        Rule("ninfer3.codec.*.code_domain", INV, "codec", "§3.3", "an illegal code word"),
        Rule("ninfer3.codec.*.scale_invalid", INV, "codec", "§3.3",
             "a negative, -0, infinite or NaN scale, or an invalid E4M3FN block scale"),
        Rule("ninfer3.codec.*.zero_scale_nonzero_code", INV, "codec", "§3.5",
             "a +0 scale with a non-zero code"),
        Rule("ninfer3.codec.*.padding_nonzero", INV, "codec", "§4.3",
             "a padding lane (column >= K) with a non-zero code bit"),
        Rule("ninfer3.codec.*.padding_scale_nonzero", INV, "codec", "§4.3",
             "a wholly padding group whose scale is not 0x0000"),
        Rule("ninfer3.codec.*.gap_nonzero", INV, "codec", "§4.3",
             "a non-zero byte in the zero gap between planes"),
        Rule("ninfer3.codec.*.divisor_invalid", INV, "codec", "§3.4",
             "the nvfp4 divisor is not finite and > 0"),
        Rule("ninfer3.codec.*.words", INV, "codec", "§4.1",
             "encode_words got words of the wrong shape or outside the code width"),
        Rule("ninfer3.codec.*.values", INV, "codec", "§4.1",
             "encode got values of the wrong shape or dtype"),
        Rule("ninfer3.codec.*.rows", INV, "codec", "§4.1",
             "a row view selects no row or a row outside [0, N)"),
        Rule("ninfer3.codec.*.no_encoder", UNS, "codec", "§3.1",
             "the pair has no value encoder (nvfp4, t2): import words instead"),
        Rule("ninfer3.codec.*.nonfinite", INV, "codec", "§3.6", "a NaN or Inf reached an encoder"),
        Rule("ninfer3.codec.*.scale_overflow", INV, "codec", "§3.6",
             "grouped_absmax: the binary16 scale rounds to infinity"),
        Rule("ninfer3.codec.*.inverse_overflow", INV, "codec", "§3.7",
             "fp8_row_maxabs: 1/scale is not finite"),
    )
)  # fmt: skip

# -- layers no single container owns ------------------------------------------------------------
COMMON_RULES = table(
    (
        Rule("format.magic", MAL, "reader", "§2.1",
             "the first bytes are neither the VQF nor the .ninfer magic, and the file name "
             "has no known extension", doc="vqf"),
        # opening and writing files, both containers (spec/ninfer3.md §safe-files)
        Rule("format.file.missing", MAL, "reader", "§9.1", "the file does not exist",
             doc="ninfer3"),
        Rule("format.file.not_regular", MAL, "reader", "§9.1",
             "a directory, FIFO, device or socket where a regular file is read", doc="ninfer3"),
        Rule("format.file.unreadable", MAL, "reader", "§9.1",
             "the open or a read fails: permission, a symlink loop, a name too long, I/O",
             doc="ninfer3"),
        Rule("format.file.address_space", MAL, "reader", "§9.1",
             "the file cannot be mapped: out of address space or memory", doc="ninfer3"),
        Rule("format.file.shrunk", MAL, "reader", "§9.1",
             "the file became shorter after it was opened", doc="ninfer3"),
        Rule("format.file.write", MAL, "writer", "§9.1",
             "a writer's OS call fails: read-only folder, permission, disk full, file too large",
             doc="ninfer3"),
        Rule("format.file.destination", MAL, "writer", "§9.1",
             "the destination is a symlink, directory, FIFO, device or socket: never followed, "
             "replaced or written into, with or without --force", doc="ninfer3"),
        Rule("format.file.exists", EXISTS, "writer", "§9.1",
             "an output (dump, trace, logits, sidecar, GGUF, key) exists and --force was not "
             "given", doc="ninfer3"),
        Rule("frontend.token_ids", INV, "frontend", "§qwen3-forward",
             "--token-ids is not a comma-separated list of ids inside the vocabulary",
             doc="models"),
        Rule("frontend.prompt", INV, "frontend", "§qwen3-forward",
             "the prompt is not UTF-8 text, or encodes to no tokens or to ids outside the "
             "vocabulary", doc="models"),
        Rule("frontend.tokenizer.missing", NOT_FOUND, "frontend", "§2.3",
             "no tokenizer.json given, beside the model or in the file", doc="ninfer3"),
        Rule("frontend.tokenizer.invalid", INV, "frontend", "§2.3",
             "the tokenizer.json cannot be parsed", doc="ninfer3"),
        Rule("frontend.resource.invalid", INV, "frontend", "§2.3",
             "a tokenizer, chat template or generation config resource is not usable",
             doc="ninfer3"),
        Rule("frontend.chat_template.unsafe", INV, "frontend", "§2.3",
             "the chat template breaks out of jinja2's sandbox", doc="ninfer3"),
        Rule("frontend.chat_template.error", INV, "frontend", "§2.3",
             "the chat template fails to render", doc="ninfer3"),
        Rule("frontend.profile.libm", UNS, "feature", "§board-c-library",
             "the kestrel-board profile needs the host's glibc libm (expf, powf, cosf, sinf)",
             doc="numerics"),
        Rule("frontend.profile.unsupported", UNS, "feature", "§board",
             "the kestrel-board profile was asked for a file it does not run (.ninfer)",
             doc="numerics"),
        # weightfile diff's inputs (weightfile/dumps/read.py; the command exits 4 on each)
        Rule("frontend.dump.format", MAL, "frontend", "§dump-diff",
             "weightfile diff: an input is neither an .npy, an .npz nor a safetensors file",
             doc="numerics"),
        Rule("frontend.dump.malformed", MAL, "frontend", "§dump-diff",
             "weightfile diff: a zip archive, .npy header or safetensors header that does not "
             "parse, or a member that cannot be read (bad CRC, cut short)", doc="numerics"),
        Rule("frontend.dump.size", MAL, "frontend", "§dump-diff",
             "weightfile diff: an .npy header describes more (or fewer) bytes than its file or "
             "archive member holds; refused before anything is allocated", doc="numerics"),
        Rule("frontend.dump.member", MAL, "frontend", "§dump-diff",
             "weightfile diff: an .npz member that is not an .npy array (another name, a second "
             "member of one name, encrypted, a compression numpy does not write)",
             doc="numerics"),
        Rule("frontend.dump.dtype", UNS, "frontend", "§dump-diff",
             "weightfile diff: an object (pickled) array or another non-numeric dtype; pickled "
             "data is never loaded", doc="numerics"),
        Rule("frontend.replay.input", INV, "frontend", "§replay",
             "weightfile replay: a dump's input array has another dtype or shape than the "
             "model's operation takes (moe.x_in: float32 [L <= layers, N, hidden]; a vision "
             "step's float32 rows of the tower's width, a geometry int32 [5])",
             doc="numerics"),
        Rule("frontend.chat_template.recursion", INV, "frontend", "§2.3",
             "rendering the chat template recurses too deeply", doc="ninfer3"),
        Rule("frontend.chat_template.output", INV, "frontend", "§2.3",
             "the chat template's output or one of its values exceeds the size limit",
             doc="ninfer3"),
        Rule("frontend.chat_template.time", INV, "frontend", "§2.3",
             "rendering the chat template runs past its time limit", doc="ninfer3"),
        # Qwen3-VL images (weightfile/frontend/image.py, the multimodal prompt)
        Rule("frontend.image.unreadable", INV, "frontend", "§qwen3-vl",
             "an --image file is missing or not a picture Pillow can decode", doc="models"),
        Rule("frontend.image.aspect", INV, "frontend", "§qwen3-vl",
             "smart_resize refuses the image: a side ratio above 200 or an empty side",
             doc="models"),
        Rule("frontend.image.grid", INV, "frontend", "§qwen3-vl",
             "the patch grid cannot be merged in 2x2 windows (odd or too small side)",
             doc="models"),
        Rule("frontend.image.size", INV, "frontend", "§qwen3-vl",
             "an --image file declares more pixels than --max-image-pixels, or is a "
             "decompression bomb", doc="models"),
        Rule("frontend.image.mode", UNS, "frontend", "§qwen3-vl",
             "an image preprocessing other than hf or board", doc="models"),
        Rule("frontend.image.count", INV, "frontend", "§qwen3-vl",
             "the prompt has more or fewer image places than images given", doc="models"),
        Rule("bench.synthetic.name", NOT_FOUND, "cli", "§machine-anchors",
             "no synthetic model of that name", doc="models"),
        Rule("native.isa", UNS, "cli", "§kernel-paths",
             "WEIGHTFILE_ISA names no kernel path, or one this CPU or build cannot run",
             doc="numerics"),
        Rule("native.cpus", UNS, "cli", "§threads",
             "--cpus names a CPU this machine lacks or this process may not use, or is no "
             "cpulist", doc="numerics"),
        Rule("demo.verify", INV, "cli", "§9.1",
             "the demo model breaks a rule of the strict validator", doc="vqf",
             untested="the demo writer produces valid files; only a writer bug could raise it"),
    )
)  # fmt: skip


#: Every row of every area table, keyed by id; a duplicate id across areas is refused.
RULES: dict[str, Rule] = table(
    r
    for area in (VQF_RULES, NINFER3_RULES, IMPORT_RULES, CODEC_RULES, COMMON_RULES)
    for r in area.values()
)


def lookup(rule_id: str) -> Rule | None:
    """The row of a concrete rule id (a codec id resolves to its family row), or None."""
    if rule_id in RULES:
        return RULES[rule_id]
    return next((r for r in RULES.values() if "*" in r.id and r.matches(rule_id)), None)
