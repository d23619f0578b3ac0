"""Every VQF rule id, the error class it raises and what it means (spec/vqf.md §header, §directory,
§protected, §loader-chain, §strict-checks).

The table is declarative: the reader, the writer and the validator raise these ids, the tests break
each one, and the conformance corpus names them. `loader` rules are the engine's own chain
(spec/vqf.md §loader-chain, each row naming its step, or the spec/vqf.md §legacy-header
detection step it belongs to); `strict` rules are the extra checks of spec/vqf.md §strict-checks
that the engine does not make. The rows are of the one `Rule` type (spec/rule.py); spec/rules.py
merges this table with the others.
"""

from __future__ import annotations

from weightfile.spec.rule import CHECKSUM, CLOSED, EXISTS, INV, MAL, NOT_FOUND, UNS, Rule, table
from weightfile.spec.vqf.defects import DEFECT_RULES

_RULES = (
    # --- file framing and header (spec/vqf.md §loader-chain steps 1-5, spec/vqf.md §legacy-header)
    # ---
    Rule("vqf.file.too_small", MAL, "loader", "§9", "file shorter than 448 + 64",
         step=1),
    Rule("vqf.header.magic", MAL, "loader", "§9", "magic is not 0x57465146", step=2),
    Rule("vqf.header.version", UNS, "loader", "§9", "version not 2 or 3", step=3),
    Rule("vqf.header.arch_geometry", INV, "loader", "§2.4",
         "dim, n_layers, n_heads, head_dim, ffn_dim or vocab_size is 0", step=2),
    Rule("vqf.directory.bounds", MAL, "loader", "§2.4",
         "the directory 448 + 64·n runs past the end of the file", step=1),
    Rule("vqf.header.layout", MAL, "loader", "§2.4",
         "neither or both of the current/legacy (data_offset, file_len) pairs are valid", step=3),
    Rule("vqf.header.legacy_protected", UNS, "loader", "§2.4",
         "legacy 432-byte layout with ENC or SIGNED", step=4),
    Rule("vqf.directory.tensor_range", INV, "loader", "§9",
         "offset + bytes > file_len", step=12),
    Rule("vqf.directory.missing_core", INV, "loader", "§9",
         "token_embed, q8_q/q4_q (and for MoE moe_router, q4/q8_gate, n_experts) missing", step=13),
    Rule("vqf.trailer.fnv", CHECKSUM, "loader", "§3.5",
         "stored FNV-1a-64 differs from the directory and data region"),
    # --- strict checks (spec/vqf.md §strict-checks) ---
    Rule("vqf.trailer.fnv_missing", CHECKSUM, "strict", "§3.5",
         "stored FNV is 0 (the engine then skips the check) but the bytes hash otherwise"),
    Rule("vqf.header.unknown_flags", INV, "strict", "§2.5", "flag bits 10-31 set"),
    Rule("vqf.header.padding", INV, "strict", "§2.2", "header padding not zero"),
    Rule("vqf.header.enc_rsvd", INV, "strict", "§2.2", "enc_rsvd not zero"),
    Rule("vqf.header.enc_iv", INV, "strict", "§2.2", "enc_iv not zero without ENC"),
    Rule("vqf.header.sig", INV, "strict", "§2.3", "sig block not zero without SIGNED"),
    Rule("vqf.header.data_offset", INV, "strict", "§3.3",
         "data_offset != round_up(448 + 64·n, 4096)"),
    Rule("vqf.header.file_len", INV, "strict", "§3.3",
         "file_len != round_up(end of last tensor, 64)"),
    Rule("vqf.file.gap", INV, "strict", "§3.3",
         "byte between the directory and data_offset not zero"),
    Rule("vqf.data.padding", INV, "strict", "§3.3",
         "inter-tensor or final pad byte not zero"),
    Rule("vqf.directory.name_terminated", INV, "strict", "§3.1",
         "name has no NUL within 32 bytes"),
    Rule("vqf.directory.name_padding", INV, "strict", "§3.1",
         "byte after the name's NUL not zero"),
    Rule("vqf.directory.name_unique", INV, "strict", "§9.1", "name used twice"),
    Rule("vqf.directory.name_known", INV, "strict", "§9.1", "name not in §7"),
    Rule("vqf.directory.entry_padding", INV, "strict", "§3.1", "entry pad not zero"),
    Rule("vqf.directory.qtype_known", INV, "strict", "§3.2", "qtype not registered"),
    Rule("vqf.directory.qtype_family", INV, "strict", "§7.1",
         "qtype does not match the name family"),
    Rule("vqf.directory.bytes", INV, "strict", "§5.9",
         "bytes != size(qtype, rows·cols)"),
    Rule("vqf.directory.geometry", INV, "strict", "§7.1",
         "rows·cols differs from the arch's element count"),
    Rule("vqf.directory.shape", INV, "strict", "§7.3",
         "rows × cols is not the §7.1 directory shape though rows·cols is"),
    Rule("vqf.directory.offset", INV, "strict", "§3.3",
         "offset breaks the placement chain (first = data_offset, 64-aligned, contiguous)"),
    Rule("vqf.directory.order", INV, "strict", "§3.4", "entries not in §3.4 order"),
    Rule("vqf.flags.emb_f16", INV, "strict", "§9.1", "EMB_F16 != (token_embed is F16)"),
    Rule("vqf.flags.vision", INV, "strict", "§9.1",
         "VISION != (all 27 v_* tensors present)"),
    Rule("vqf.flags.x8", INV, "strict", "§9.1", "X8 != (all 7 x8_* tensors present)"),
    Rule("vqf.flags.moe", INV, "strict", "§9.1",
         "MOE, version 3, n_experts > 0 and moe_router disagree"),
    Rule("vqf.flags.q8buf_q4", INV, "strict", "§9.1",
         "Q8BUF_Q4 with Q8_8X8 or with q4_* tensors"),
    Rule("vqf.flags.tiling", INV, "strict", "§5.6-§5.8",
         "a flagged tiling's row group or 32-column block does not divide the matrix"),
    Rule("vqf.arch.moe_ffn", INV, "strict", "§9.1",
         "ffn_dim != n_experts·moe_ffn (MoE), or MoE fields set in a dense model"),
    Rule("vqf.arch.mrope_sections", INV, "strict", "§9.1",
         "sum of mrope_sections != head_dim / 2 with has_mrope, or count > 4"),
    Rule("vqf.arch.reserved", INV, "strict", "§8",
         "head_dim_full != head_dim or kv_lora_rank != 0"),
    # --- lookups by callers ---
    Rule("vqf.directory.name", NOT_FOUND, "reader", "§9", "no tensor of that name", step=12),
    Rule("vqf.file.range", MAL, "reader", "§1", "a byte range outside the file"),
    Rule("vqf.file.closed", CLOSED, "reader", "§1", "a read after the file was closed"),
    # --- protected files (spec/vqf.md §protected): SM4-CTR + HMAC-SM3 (ENC), SM2 (SIGNED) ---
    Rule("vqf.enc.no_key", UNS, "protected", "§4.1",
         "an ENC file but no passphrase: its tag and contents cannot be verified"),
    Rule("vqf.enc.tag", CHECKSUM, "protected", "§4.2",
         "HMAC-SM3 over H' || directory || ciphertext differs from the stored tag"),
    Rule("vqf.enc.fnv", UNS, "reader", "§3.5",
         "the FNV-1a-64 trailer of an ENC file was asked for; it has a tag instead"),
    Rule("vqf.sig.no_key", UNS, "protected", "§4.3",
         "a SIGNED file but no trusted public key: its signature cannot be verified"),
    Rule("vqf.sig.digest", INV, "protected", "§4.3",
         "sig.digest differs from SM3(H'' || directory || plaintext)"),
    Rule("vqf.sig.pub", INV, "protected", "§4.3",
         "sig.pub is not the trusted public key"),
    Rule("vqf.sig.signature", INV, "protected", "§4.3",
         "(r, s) is not an SM2 signature of the digest under the trusted key and the fixed ID"),
    Rule("vqf.sig.id", INV, "protected", "§2.3",
         "strict only (the loader ignores it): sig id is not 'vllm-shs-vqf' zero padded, "
         "id_len is not 12, or rsvd is not 0"),
    Rule("vqf.sig.key", INV, "writer", "§4.3",
         "a private key file does not hold 64 hex characters of a valid SM2 key"),
    Rule("vqf.writer.protect", INV, "writer", "§4",
         "encrypt of an ENC or SIGNED file, or decrypt of a plaintext file"),
    # --- retired with corpus v1: what a build without crypto reported (spec/vqf.md §protected) ---
    Rule("vqf.enc.not_implemented", UNS, "feature", "§4.2",
         "SM4-CTR decryption and the HMAC-SM3 tag are not implemented yet",
         retired="vqf.enc.no_key"),
    Rule("vqf.sig.not_implemented", UNS, "feature", "§4.3",
         "SM2 signature verification is not implemented yet",
         retired="vqf.sig.no_key"),
    # --- binding a file to the Qwen3 decoder (ref/qwen3/bind_vqf.py) ---
    Rule("vqf.bind.missing_tensor", NOT_FOUND, "binder", "§7.2",
         "a tensor the decoder needs is absent"),
    Rule("vqf.bind.qtype", INV, "binder", "§7.1",
         "a tensor has a qtype its inventory row does not allow"),
    Rule("vqf.bind.size", INV, "binder", "§7.1",
         "rows·cols or the byte count disagrees with the arch"),
    Rule("vqf.bind.arch", INV, "binder", "§8",
         "the arch cannot describe a Qwen3 decoder"),
    Rule("vqf.bind.unsupported", UNS, "binder", "§8",
         "MoE, no q/k norm, or an unknown family was asked for"),
    # --- binding a version-3 file to the Qwen3-MoE decoder (ref/qwen3_moe/bind_vqf.py) ---
    Rule("vqf.bind.moe_experts", INV, "binder", "§8",
         "n_experts is 0, or top_k is 0 or larger than n_experts"),
    Rule("vqf.bind.moe_band", INV, "binder", "§7.1",
         "ffn_dim != n_experts·moe_ffn, or moe_ffn is not whole 32-column blocks"),
    Rule("vqf.bind.moe_router", INV, "binder", "§7.1",
         "moe_router is not F32 [n_layers·n_experts, dim]"),
    # --- binding a VISION file to the Qwen3-VL tower (ref/qwen3_vl/bind_vqf.py) ---
    Rule("vqf.bind.vision_arch", INV, "binder", "§8",
         "vision arch fields that describe no tower (vis_out_dim != dim, widths, heads, "
         "a non-square position table, DeepStack indexes outside the blocks)"),
    Rule("vqf.bind.vision_padding", INV, "binder", "§7.4",
         "a v_q8_fc2 padding column (vis_ffn up to its multiple of 32) has a non-zero code"),
    Rule("vqf.bind.vision_input", INV, "binder", "§8",
         "pixel_values or a grid the tower cannot take (not one frame, odd or short sides, "
         "rows not 3·T·P·P float32)"),
    # --- importing a Hugging Face checkpoint (weightfile/families/qwen3/to_vqf.py) ---
    Rule("vqf.import.missing_file", NOT_FOUND, "importer", "§8",
         "config.json or the *.safetensors files are absent"),
    Rule("vqf.import.config", INV, "importer", "§8",
         "config.json is not JSON or does not describe a Qwen3 decoder"),
    Rule("vqf.import.safetensors", MAL, "importer", "§7.1",
         "a safetensors header or byte range is broken"),
    Rule("vqf.import.dtype", UNS, "importer", "§7.1",
         "a tensor dtype other than F32, F16 or BF16"),
    Rule("vqf.import.duplicate", INV, "importer", "§7.1",
         "one tensor name in two shards"),
    Rule("vqf.import.missing_tensor", NOT_FOUND, "importer", "§7.1",
         "a tensor the inventory needs is absent"),
    Rule("vqf.import.shape", INV, "importer", "§7.1",
         "a tensor's shape disagrees with config.json"),
    Rule("vqf.import.qtype", UNS, "importer", "§7.2", "an unknown --qtype"),
    Rule("vqf.import.layout", UNS, "importer", "§2.5", "an unknown --layout"),
    Rule("vqf.import.geometry", UNS, "importer", "§5.9",
         "a matrix width is not a multiple of the 32-element block"),
    Rule("vqf.import.moe_config", UNS, "importer", "§8",
         "a Qwen3-MoE config a version-3 file cannot state (norm_topk_prob false, dense "
         "layers, decoder_sparse_step != 1, a shared expert)"),
    # --- weightfile convert (weightfile/convert/dispatch.py, vqf_plan.py) ---
    Rule("vqf.import.option", UNS, "importer", "§7.7",
         "an unknown weight mode, quantizer or embedding, or --x8 outside weight mode q4"),
    Rule("vqf.import.source", UNS, "importer", "§7.7",
         "no converter from the source's kind (format, model_type) to the target's"),
    Rule("vqf.import.target", NOT_FOUND, "cli", "§7.7",
         "convert: a Qwen3.5 checkpoint given a DST other than .ninfer (the only format it "
         "converts to; a usage error, exit 2)"),
    Rule("vqf.import.gguf", MAL, "importer", "§7.7",
         "gguf-py cannot read the GGUF source"),
    Rule("vqf.import.requantize", UNS, "importer", "§7.7",
         "a GGUF tensor's blocks are not its VQF entry's and --requantize was not given"),
    # --- writer inputs ---
    Rule("vqf.writer.name", INV, "writer", "§3.1",
         "name empty, longer than 31 bytes, not ASCII or containing NUL"),
    Rule("vqf.writer.payload", INV, "writer", "§3.3",
         "payload length differs from the entry's bytes"),
    Rule("vqf.writer.field", INV, "writer", "§2.2", "a value does not fit its field"),
    Rule("vqf.writer.legacy", INV, "writer", "§2.4",
         "legacy layout requested for version 3, MoE fields, ENC or SIGNED"),
    Rule("vqf.writer.empty", INV, "writer", "§2.4",
         "the data region would be empty, which no loader accepts"),
    Rule("vqf.writer.destination", EXISTS, "writer", "§3.3",
         "the destination exists and overwrite was not asked for"),
    Rule("vqf.writer.keys", INV, "writer", "§4",
         "protect_vqf was given neither a passphrase nor a private key"),
    Rule("vqf.writer.arch", INV, "writer", "§8",
         "weightfile.write_vqf was given an arch without a field a decoder needs"),
    # --- the board's tokenizer file, vocab.bin (spec/vqf.md §vocab-bin) ---
    Rule("vqf.vocab.count", INV, "reader", "§vocab-bin-loader",
         "vocab.bin count is 0, above 151,936, or more records than the file can hold"),
    Rule("vqf.vocab.truncated", MAL, "reader", "§vocab-bin-loader",
         "a vocab.bin record's header or text runs past the end of the file (or a text "
         "longer than a u16 length holds)"),
    Rule("vqf.vocab.id_range", INV, "reader", "§vocab-bin-loader",
         "a vocab.bin record's id is not below the count (the engine leaves the slot empty), "
         "or a tokenizer.json leaves an id without a token"),
    Rule("vqf.vocab.id_duplicate", INV, "reader", "§vocab-bin-loader",
         "two vocab.bin records carry one id (the engine keeps the later)"),
    Rule("vqf.vocab.trailing", MAL, "reader", "§vocab-bin-loader",
         "bytes after the last vocab.bin record (the engine never reads them)"),
    Rule("vqf.vocab.raw_byte", INV, "reader", "§vocab-bin-text",
         "a token's text holds a raw byte 0x00-0x20 instead of its marker character "
         "U+0100-U+0120"),
)  # fmt: skip

#: The engine-defect rows (spec/vqf/defects.py) are VQF rules too: reported, never raised.
RULES: dict[str, Rule] = table((*_RULES, *DEFECT_RULES.values()))

#: Rules no implementation raises any more, and the rule that reports the same file today. The
#: corpus keeps their published v1 cases; the generator and the runner accept the successor.
RETIRED: dict[str, str] = {r.id: r.retired for r in _RULES if r.retired}
