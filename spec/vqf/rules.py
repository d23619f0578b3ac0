"""Every VQF rule id, the error class it raises and what it means (vqf.md §2–§4, §9, §9.1).

The table is declarative: the reader, the writer and the validator raise these ids, the tests
break each one, and the conformance corpus names them. `loader` rules are the engine's own chain
(§9); `strict` rules are the extra checks of §9.1 that the engine does not make.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    error_class: str
    # "loader" (§9) | "strict" (§9.1) | "writer" | "reader" | "binder" | "importer" | "feature"
    # | "protected": a check of ENC/SIGNED files that needs a passphrase or a trusted key (§4);
    # the corpus v1 protocol carries no keys, so these have no v1 case (tests/ref/vqf/
    # test_protect.py breaks each). Their meaning says which the loader makes (§4.3: all but id).
    origin: str
    section: str
    meaning: str


_RULES = (
    # --- file framing and header (§9 steps 1-5, §2.4) ---
    Rule("vqf.file.too_small", "MalformedError", "loader", "§9.1", "file shorter than 448 + 64"),
    Rule("vqf.header.magic", "MalformedError", "loader", "§9.2", "magic is not 0x57465146"),
    Rule("vqf.header.version", "UnsupportedError", "loader", "§9.3", "version not 2 or 3"),
    Rule("vqf.header.arch_geometry", "InvalidError", "loader", "§2.4.2",
         "dim, n_layers, n_heads, head_dim, ffn_dim or vocab_size is 0"),
    Rule("vqf.directory.bounds", "MalformedError", "loader", "§2.4.1",
         "the directory 448 + 64·n runs past the end of the file"),
    Rule("vqf.header.layout", "MalformedError", "loader", "§2.4.3",
         "neither or both of the current/legacy (data_offset, file_len) pairs are valid"),
    Rule("vqf.header.legacy_protected", "UnsupportedError", "loader", "§2.4.4",
         "legacy 432-byte layout with ENC or SIGNED"),
    Rule("vqf.directory.tensor_range", "InvalidError", "loader", "§9.12",
         "offset + bytes > file_len"),
    Rule("vqf.directory.missing_core", "InvalidError", "loader", "§9.13",
         "token_embed, q8_q/q4_q (and for MoE moe_router, q4/q8_gate, n_experts) missing"),
    Rule("vqf.trailer.fnv", "ChecksumError", "loader", "§3.5",
         "stored FNV-1a-64 differs from the directory and data region"),
    # --- strict checks (§9.1) ---
    Rule("vqf.trailer.fnv_missing", "ChecksumError", "strict", "§3.5",
         "stored FNV is 0 (the engine then skips the check) but the bytes hash otherwise"),
    Rule("vqf.header.unknown_flags", "InvalidError", "strict", "§2.5", "flag bits 10-31 set"),
    Rule("vqf.header.padding", "InvalidError", "strict", "§2.2", "header padding not zero"),
    Rule("vqf.header.enc_rsvd", "InvalidError", "strict", "§2.2", "enc_rsvd not zero"),
    Rule("vqf.header.enc_iv", "InvalidError", "strict", "§2.2", "enc_iv not zero without ENC"),
    Rule("vqf.header.sig", "InvalidError", "strict", "§2.3", "sig block not zero without SIGNED"),
    Rule("vqf.header.data_offset", "InvalidError", "strict", "§3.3",
         "data_offset != round_up(448 + 64·n, 4096)"),
    Rule("vqf.header.file_len", "InvalidError", "strict", "§3.3",
         "file_len != round_up(end of last tensor, 64)"),
    Rule("vqf.file.gap", "InvalidError", "strict", "§3.3",
         "byte between the directory and data_offset not zero"),
    Rule("vqf.data.padding", "InvalidError", "strict", "§3.3",
         "inter-tensor or final pad byte not zero"),
    Rule("vqf.directory.name_terminated", "InvalidError", "strict", "§3.1",
         "name has no NUL within 32 bytes"),
    Rule("vqf.directory.name_padding", "InvalidError", "strict", "§3.1",
         "byte after the name's NUL not zero"),
    Rule("vqf.directory.name_unique", "InvalidError", "strict", "§9.1", "name used twice"),
    Rule("vqf.directory.name_known", "InvalidError", "strict", "§9.1", "name not in §7"),
    Rule("vqf.directory.entry_padding", "InvalidError", "strict", "§3.1", "entry pad not zero"),
    Rule("vqf.directory.qtype_known", "InvalidError", "strict", "§3.2", "qtype not registered"),
    Rule("vqf.directory.qtype_family", "InvalidError", "strict", "§7.1",
         "qtype does not match the name family"),
    Rule("vqf.directory.bytes", "InvalidError", "strict", "§5.9",
         "bytes != size(qtype, rows·cols)"),
    Rule("vqf.directory.geometry", "InvalidError", "strict", "§7.1",
         "rows·cols differs from the arch's element count"),
    Rule("vqf.directory.offset", "InvalidError", "strict", "§3.3",
         "offset breaks the placement chain (first = data_offset, 64-aligned, contiguous)"),
    Rule("vqf.directory.order", "InvalidError", "strict", "§3.4", "entries not in §3.4 order"),
    Rule("vqf.flags.emb_f16", "InvalidError", "strict", "§9.1", "EMB_F16 != (token_embed is F16)"),
    Rule("vqf.flags.vision", "InvalidError", "strict", "§9.1",
         "VISION != (all 27 v_* tensors present)"),
    Rule("vqf.flags.x8", "InvalidError", "strict", "§9.1", "X8 != (all 7 x8_* tensors present)"),
    Rule("vqf.flags.moe", "InvalidError", "strict", "§9.1",
         "MOE, version 3, n_experts > 0 and moe_router disagree"),
    Rule("vqf.flags.q8buf_q4", "InvalidError", "strict", "§9.1",
         "Q8BUF_Q4 with Q8_8X8 or with q4_* tensors"),
    Rule("vqf.flags.tiling", "InvalidError", "strict", "§5.6-§5.8",
         "a flagged tiling's row group or 32-column block does not divide the matrix"),
    Rule("vqf.arch.moe_ffn", "InvalidError", "strict", "§9.1",
         "ffn_dim != n_experts·moe_ffn (MoE), or MoE fields set in a dense model"),
    Rule("vqf.arch.mrope_sections", "InvalidError", "strict", "§9.1",
         "sum of mrope_sections != head_dim / 2 with has_mrope, or count > 4"),
    Rule("vqf.arch.reserved", "InvalidError", "strict", "§8",
         "head_dim_full != head_dim or kv_lora_rank != 0"),
    # --- lookups by callers ---
    Rule("vqf.directory.name", "NotFoundError", "reader", "§9.12", "no tensor of that name"),
    Rule("vqf.file.range", "MalformedError", "reader", "§1", "a byte range outside the file"),
    # --- protected files (§4): SM4-CTR + HMAC-SM3 (ENC), SM2 (SIGNED) ---
    Rule("vqf.enc.no_key", "UnsupportedError", "protected", "§4.1",
         "an ENC file but no passphrase: its tag and contents cannot be verified"),
    Rule("vqf.enc.tag", "ChecksumError", "protected", "§4.2",
         "HMAC-SM3 over H' || directory || ciphertext differs from the stored tag"),
    Rule("vqf.enc.fnv", "UnsupportedError", "reader", "§3.5",
         "the FNV-1a-64 trailer of an ENC file was asked for; it has a tag instead"),
    Rule("vqf.sig.no_key", "UnsupportedError", "protected", "§4.3",
         "a SIGNED file but no trusted public key: its signature cannot be verified"),
    Rule("vqf.sig.digest", "InvalidError", "protected", "§4.3",
         "sig.digest differs from SM3(H'' || directory || plaintext)"),
    Rule("vqf.sig.pub", "InvalidError", "protected", "§4.3",
         "sig.pub is not the trusted public key"),
    Rule("vqf.sig.signature", "InvalidError", "protected", "§4.3",
         "(r, s) is not an SM2 signature of the digest under the trusted key and the fixed ID"),
    Rule("vqf.sig.id", "InvalidError", "protected", "§2.3",
         "strict only (the loader ignores it): sig id is not 'vllm-shs-vqf' zero padded, "
         "id_len is not 12, or rsvd is not 0"),
    Rule("vqf.sig.key", "InvalidError", "writer", "§4.3",
         "a private key file does not hold 64 hex characters of a valid SM2 key"),
    Rule("vqf.writer.protect", "InvalidError", "writer", "§4",
         "encrypt of an ENC or SIGNED file, or decrypt of a plaintext file"),
    # --- retired with corpus v1: what a build without crypto reported (§4) ---
    Rule("vqf.enc.not_implemented", "UnsupportedError", "feature", "§4.2",
         "SM4-CTR decryption and the HMAC-SM3 tag are not implemented yet"),
    Rule("vqf.sig.not_implemented", "UnsupportedError", "feature", "§4.3",
         "SM2 signature verification is not implemented yet"),
    # --- binding a file to the Qwen3 decoder (ref/model/bind_vqf.py) ---
    Rule("vqf.bind.missing_tensor", "NotFoundError", "binder", "§7.2",
         "a tensor the decoder needs is absent"),
    Rule("vqf.bind.qtype", "InvalidError", "binder", "§7.1",
         "a tensor has a qtype its inventory row does not allow"),
    Rule("vqf.bind.size", "InvalidError", "binder", "§7.1",
         "rows·cols or the byte count disagrees with the arch"),
    Rule("vqf.bind.arch", "InvalidError", "binder", "§8",
         "the arch cannot describe a Qwen3 decoder"),
    Rule("vqf.bind.unsupported", "UnsupportedError", "binder", "§8",
         "MoE, no q/k norm, or an unknown family was asked for"),
    # --- importing a Hugging Face checkpoint (weightfile/import_hf.py) ---
    Rule("vqf.import.missing_file", "NotFoundError", "importer", "§8",
         "config.json or the *.safetensors files are absent"),
    Rule("vqf.import.config", "InvalidError", "importer", "§8",
         "config.json is not JSON or does not describe a Qwen3 decoder"),
    Rule("vqf.import.safetensors", "MalformedError", "importer", "§7.1",
         "a safetensors header or byte range is broken"),
    Rule("vqf.import.dtype", "UnsupportedError", "importer", "§7.1",
         "a tensor dtype other than F32, F16 or BF16"),
    Rule("vqf.import.duplicate", "InvalidError", "importer", "§7.1",
         "one tensor name in two shards"),
    Rule("vqf.import.missing_tensor", "NotFoundError", "importer", "§7.1",
         "a tensor the inventory needs is absent"),
    Rule("vqf.import.shape", "InvalidError", "importer", "§7.1",
         "a tensor's shape disagrees with config.json"),
    Rule("vqf.import.qtype", "UnsupportedError", "importer", "§7.2", "an unknown --qtype"),
    Rule("vqf.import.layout", "UnsupportedError", "importer", "§2.5", "an unknown --layout"),
    Rule("vqf.import.geometry", "UnsupportedError", "importer", "§5.9",
         "a matrix width is not a multiple of the 32-element block"),
    # --- writer inputs ---
    Rule("vqf.writer.name", "InvalidError", "writer", "§3.1",
         "name empty, longer than 31 bytes, not ASCII or containing NUL"),
    Rule("vqf.writer.payload", "InvalidError", "writer", "§3.3",
         "payload length differs from the entry's bytes"),
    Rule("vqf.writer.field", "InvalidError", "writer", "§2.2", "a value does not fit its field"),
    Rule("vqf.writer.legacy", "InvalidError", "writer", "§2.4",
         "legacy layout requested for version 3, MoE fields, ENC or SIGNED"),
    Rule("vqf.writer.empty", "InvalidError", "writer", "§2.4",
         "the data region would be empty, which no loader accepts"),
    Rule("vqf.writer.destination", "DestinationExistsError", "writer", "§3.3",
         "the destination exists and overwrite was not asked for"),
)  # fmt: skip

RULES: dict[str, Rule] = {r.id: r for r in _RULES}

#: Rules no implementation raises any more, and the rule that reports the same file today. The
#: corpus keeps their published v1 cases; the generator and the runner accept the successor.
RETIRED: dict[str, str] = {
    "vqf.enc.not_implemented": "vqf.enc.no_key",
    "vqf.sig.not_implemented": "vqf.sig.no_key",
}
assert len(RULES) == len(_RULES), "duplicate rule id"
