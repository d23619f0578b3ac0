"""The strict validator: the engine's loader chain (spec/vqf.md §loader-chain) plus the extra checks
of spec/vqf.md §strict-checks.

`validate` lists every violation it finds, each with its rule id (spec/vqf/rules.py), the byte
offset and the field path. A failure of the loader chain's framing steps (magic, version, arch
gate, layout detection) leaves nothing else to check and is reported alone.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from weightfile.ref.backend import REFERENCE, Backend
from weightfile.spec.errors import Violation, WeightfileError
from weightfile.spec.vqf.constants import ALIGN, HEADER_BYTES, NAME_BYTES
from weightfile.spec.vqf.flags import KNOWN_MASK, VQFFlag
from weightfile.spec.vqf.header import VQFHeader, arch_field_offset, sig_field_offset
from weightfile.spec.vqf.inventory import KINDS, ORDER_INDEX, VISION_KINDS, X8_KINDS, Geometry
from weightfile.spec.vqf.placement import data_offset_for, directory_end, round_up
from weightfile.spec.vqf.qtypes import QType, tensor_bytes
from weightfile.spec.vqf.rules import RULES
from weightfile.spec.vqf.sig import VQFSig
from weightfile.spec.vqf.tensor import VQFTensor

from . import protect
from .fnv1a64 import Progress, file_checksum
from .read import Entry, Header, VQFFile, open_vqf


def validate(
    path: str | os.PathLike[str],
    *,
    checksum: bool = False,
    backend: Backend = REFERENCE,
    progress: Progress | None = None,
    passphrase: bytes | None = None,
    trusted_pub: bytes | None = None,
) -> list[Violation]:
    """Every violation of spec/vqf.md §loader-chain and §strict-checks in the file at `path`; an
    empty list means valid.

    An ENC file is authenticated with `passphrase` whenever it is given (spec/vqf.md §sm4-hmac), and
    a SIGNED file's signature is checked against `trusted_pub` whenever it is given, whatever the
    engine's policy would do (spec/vqf.md §sm2-signature). Without them the file is reported as
    unverifiable (`vqf.enc.no_key`, `vqf.sig.no_key`, UnsupportedError), never as valid. With
    `checksum`, the FNV-1a-64 trailer (spec/vqf.md §fnv-trailer) is recomputed by
    `backend.checksum`.
    """
    try:
        vqf = open_vqf(path, check_ranges=False)
    except WeightfileError as exc:
        return [exc.violation]
    with vqf:
        found: list[Violation] = []
        report = Reporter(found)
        # spec/vqf.md §loader-chain step 12 and §strict-checks names, qtypes, sizes, placement
        check_directory(vqf, report)
        check_required_tensors(vqf, report)  # spec/vqf.md §loader-chain step 13
        check_header_fields(vqf.header, report)
        check_placement(vqf, report)
        check_arch(vqf.header, report)
        check_flags(vqf, report)
        check_zero_fill(vqf, report)
        check_protection(vqf, report, passphrase, trusted_pub, progress)
        if checksum and not vqf.header.encrypted:
            check_fnv(vqf, report, backend.checksum, progress)
        return found


class Reporter:
    """Appends a Violation whose error class comes from the rule table."""

    def __init__(self, sink: list[Violation]) -> None:
        self.sink = sink

    def __call__(self, rule: str, detail: str, offset: int | None, path: str | None) -> None:
        self.sink.append(Violation(rule, detail, offset, path, RULES[rule].error_class))


# -- directory (spec/vqf.md §entry, §qtype-codes, §size-function, §inventory, §loader-chain step 12)
# -------------------------------------------------
_FIELD = {sc.name: VQFTensor.subcons[: i + 1] for i, sc in enumerate(VQFTensor.subcons)}


def entry_field_offset(e: Entry, name: str) -> int:
    """Absolute offset of a field of directory entry `e` (from the VQFTensor schema)."""
    return e.entry_offset + sum(sc.sizeof() for sc in _FIELD[name][:-1])


def check_directory(vqf: VQFFile, report: Reporter) -> None:
    geometry = Geometry.from_arch(vqf.header.arch)
    seen: set[str] = set()
    for e in vqf.entries:
        where = f"directory[{e.index}]"
        if e.offset + e.bytes > vqf.header.file_len:
            report(
                "vqf.directory.tensor_range",
                f"tensor {e.name!r} [{e.offset}, {e.end}) is out of range "
                f"(file_len {vqf.header.file_len})",
                entry_field_offset(e, "offset"),
                f"{where}.offset",
            )
        check_name_field(e, report)
        if e.name in seen:
            report("vqf.directory.name_unique", f"name {e.name!r} repeats", e.entry_offset, where)
        seen.add(e.name)
        if any(e.pad):
            report(
                "vqf.directory.entry_padding",
                "entry pad is not zero",
                entry_field_offset(e, "pad"),
                f"{where}.pad",
            )
        check_qtype_and_size(e, geometry, report)


def check_name_field(e: Entry, report: Reporter) -> None:
    """NUL-terminated within 32 bytes, zero after the NUL, and a name of spec/vqf.md §inventory
    (spec/vqf.md §strict-checks)."""
    where = f"directory[{e.index}].name"
    nul = e.name_field.find(b"\0")
    if nul < 0:
        report(
            "vqf.directory.name_terminated",
            f"no NUL in the {NAME_BYTES}-byte name field",
            e.entry_offset + NAME_BYTES - 1,
            where,
        )
        return
    tail = e.name_field[nul:]
    if any(tail):
        first = next(i for i, b in enumerate(tail) if b)
        report(
            "vqf.directory.name_padding",
            "byte after the name's NUL is not zero",
            e.entry_offset + nul + first,
            where,
        )
    if e.name not in KINDS:
        report("vqf.directory.name_known", f"unknown tensor name {e.name!r}", e.entry_offset, where)


def check_qtype_and_size(e: Entry, g: Geometry, report: Reporter) -> None:
    """qtype registered and of the name's family; bytes and rows·cols as the arch implies, in the
    directory shape the engine's writer records (spec/vqf.md §geometry)."""
    where = f"directory[{e.index}]"
    if e.qtype not in QType.__members__.values():
        report(
            "vqf.directory.qtype_known",
            f"qtype {e.qtype:#x} is not registered",
            entry_field_offset(e, "qtype"),
            f"{where}.qtype",
        )
        return
    kind = KINDS.get(e.name)
    if kind is not None and e.qtype not in kind.qtypes:
        allowed = "/".join(q.name for q in kind.qtypes)
        report(
            "vqf.directory.qtype_family",
            f"{e.name} is {QType(e.qtype).name}, expected {allowed}",
            entry_field_offset(e, "qtype"),
            f"{where}.qtype",
        )
    expected = tensor_bytes(e.qtype, e.rows * e.cols)
    if e.bytes != expected:
        report(
            "vqf.directory.bytes",
            f"{e.name}: bytes {e.bytes} != {expected} for {e.rows}×{e.cols} {QType(e.qtype).name}",
            entry_field_offset(e, "bytes"),
            f"{where}.bytes",
        )
    if kind is not None and e.rows * e.cols != kind.elements(g):
        report(
            "vqf.directory.geometry",
            f"{e.name}: {e.rows}×{e.cols} = {e.rows * e.cols} elements, the arch implies "
            f"{kind.elements(g)}",
            entry_field_offset(e, "rows"),
            f"{where}.rows",
        )
    elif kind is not None and (e.rows, e.cols) != kind.directory_shape(g):
        rows, cols = kind.directory_shape(g)
        report(
            "vqf.directory.shape",
            f"{e.name}: rows × cols {e.rows}×{e.cols}, the engine's writer records {rows}×{cols} "
            "(spec/vqf.md §geometry)",
            entry_field_offset(e, "rows"),
            f"{where}.rows",
        )


def check_required_tensors(vqf: VQFFile, report: Reporter) -> None:
    """token_embed and q8_q or q4_q; for MoE also moe_router, a gate and n_experts (spec/vqf.md
    §loader-chain step 13)."""
    names = {e.name for e in vqf.entries}
    missing = []
    if "token_embed" not in names:
        missing.append("token_embed")
    if not names & {"q8_q", "q4_q"}:
        missing.append("q8_q or q4_q")
    if vqf.header.is_moe:
        if "moe_router" not in names:
            missing.append("moe_router")
        if not names & {"q8_gate", "q4_gate"}:
            missing.append("q8_gate or q4_gate")
        if not vqf.header.arch["n_experts"]:
            missing.append("n_experts > 0")
    if missing:
        report(
            "vqf.directory.missing_core",
            f"missing core tensors: {', '.join(missing)}",
            None,
            "directory",
        )


# -- header (spec/vqf.md §header-layout, §signature-block, §placement)
# --------------------------------------------------------------------
def check_header_fields(h: Header, report: Reporter) -> None:
    if h.flags & ~KNOWN_MASK:
        report("vqf.header.unknown_flags", f"flags {h.flags:#x} set bits 10-31", 8, "header.flags")
    first_nonzero(
        h.pad_arch, h.schema_offset("pad_arch"), "vqf.header.padding", "header.pad_arch", report
    )
    first_nonzero(h.legacy_tail, 432, "vqf.header.padding", "header.legacy_tail", report)
    first_nonzero(
        h.enc_rsvd, h.schema_offset("enc_rsvd"), "vqf.header.enc_rsvd", "header.enc_rsvd", report
    )
    if not h.encrypted:
        first_nonzero(
            h.enc_iv, h.schema_offset("enc_iv"), "vqf.header.enc_iv", "header.enc_iv", report
        )
    if not h.signed:
        sig = VQFSig.build(h.sig)
        first_nonzero(sig, h.schema_offset("sig"), "vqf.header.sig", "header.sig", report)


def first_nonzero(blob: bytes, base: int, rule: str, path: str, report: Reporter) -> None:
    """Report the first non-zero byte of a region that must be zero."""
    for i, b in enumerate(blob):
        if b:
            report(rule, f"byte {b:#04x} where zero is required", base + i, path)
            return


def check_placement(vqf: VQFFile, report: Reporter) -> None:
    """data_offset, the offset chain, order and file_len exactly as spec/vqf.md §placement,
    §directory-order place them."""
    h = vqf.header
    want = data_offset_for(h.n_tensors)
    if h.data_offset != want:
        report(
            "vqf.header.data_offset",
            f"data_offset {h.data_offset} != {want}",
            h.schema_offset("data_offset"),
            "header.data_offset",
        )
    expected = h.data_offset
    for e in vqf.entries:
        if e.offset != expected:
            report(
                "vqf.directory.offset",
                f"{e.name}: offset {e.offset} != {expected}",
                entry_field_offset(e, "offset"),
                f"directory[{e.index}].offset",
            )
        expected = round_up(e.end, ALIGN)  # chain from the actual offset: one fault, one report
    if h.file_len != expected:
        report(
            "vqf.header.file_len",
            f"file_len {h.file_len} != {expected}",
            h.schema_offset("file_len"),
            "header.file_len",
        )
    known = [e for e in vqf.entries if e.name in ORDER_INDEX]
    for prev, e in itertools.pairwise(known):
        if ORDER_INDEX[e.name] < ORDER_INDEX[prev.name]:
            report(
                "vqf.directory.order",
                f"{e.name} comes after {prev.name}",
                e.entry_offset,
                f"directory[{e.index}]",
            )
            break


# -- arch (spec/vqf.md §arch-semantics, §strict-checks)
# ------------------------------------------------------------------------------
def check_arch(h: Header, report: Reporter) -> None:
    a = h.arch

    def at(name: str) -> int:
        return arch_field_offset(VQFHeader, name)

    if h.is_moe and a["ffn_dim"] != a["n_experts"] * a["moe_ffn"]:
        report(
            "vqf.arch.moe_ffn",
            f"ffn_dim {a['ffn_dim']} != n_experts·moe_ffn {a['n_experts']}·{a['moe_ffn']}",
            at("ffn_dim"),
            "header.arch.ffn_dim",
        )
    if not h.is_moe:
        for name in ("moe_ffn", "top_k", "shared_experts"):
            if a[name]:
                report(
                    "vqf.arch.moe_ffn",
                    f"dense model with {name} = {a[name]}",
                    at(name),
                    f"header.arch.{name}",
                )
    n_sec, sections = a["mrope_n_sec"], a["mrope_sections"]
    if n_sec > 4 or any(sections[n_sec:]):
        report(
            "vqf.arch.mrope_sections",
            f"mrope_n_sec {n_sec} with sections {sections}",
            at("mrope_n_sec"),
            "header.arch.mrope_n_sec",
        )
    elif a["has_mrope"] and 2 * sum(sections[:n_sec]) != a["head_dim"]:
        report(
            "vqf.arch.mrope_sections",
            f"sum of mrope_sections {sections[:n_sec]} != head_dim/2 = {a['head_dim'] / 2:g}",
            at("mrope_sections"),
            "header.arch.mrope_sections",
        )
    if a["head_dim_full"] != a["head_dim"]:
        report(
            "vqf.arch.reserved",
            f"head_dim_full {a['head_dim_full']} != head_dim",
            at("head_dim_full"),
            "header.arch.head_dim_full",
        )
    if a["kv_lora_rank"]:
        report(
            "vqf.arch.reserved",
            f"kv_lora_rank {a['kv_lora_rank']} != 0",
            at("kv_lora_rank"),
            "header.arch.kv_lora_rank",
        )


# -- flags (spec/vqf.md §flags, §q8-tiled, §q4-0, §q4-8x8l, §strict-checks)
# ----------------------------------------------------------------
def check_flags(vqf: VQFFile, report: Reporter) -> None:
    h, names = vqf.header, {e.name: e for e in vqf.entries}
    flag = h.flags

    def bad(rule: str, detail: str) -> None:
        report(rule, detail, 8, "header.flags")

    embed = names.get("token_embed")
    if embed is not None and bool(flag & VQFFlag.EMB_F16) != (embed.qtype == QType.F16):
        bad(
            "vqf.flags.emb_f16",
            f"EMB_F16 is {bool(flag & VQFFlag.EMB_F16)} but token_embed has qtype {embed.qtype:#x}",
        )
    for rule, bit, kinds in (
        ("vqf.flags.vision", VQFFlag.VISION, VISION_KINDS),
        ("vqf.flags.x8", VQFFlag.X8, X8_KINDS),
    ):
        present = sum(k.name in names for k in kinds)
        if (present, bool(flag & bit)) not in ((0, False), (len(kinds), True)):
            bad(rule, f"{bit.name} is {bool(flag & bit)} with {present} of {len(kinds)} tensors")
    moe = {
        "MOE flag": bool(flag & VQFFlag.MOE),
        "version 3": h.version == 3,
        "n_experts > 0": h.arch["n_experts"] > 0,
        "moe_router present": "moe_router" in names,
    }
    if len(set(moe.values())) > 1:
        bad("vqf.flags.moe", "disagree: " + ", ".join(f"{k}={v}" for k, v in moe.items()))
    if flag & VQFFlag.Q8BUF_Q4:
        q4 = sorted(n for n in names if n.startswith("q4_"))
        if flag & VQFFlag.Q8_8X8 or q4:
            bad(
                "vqf.flags.q8buf_q4",
                f"Q8BUF_Q4 with Q8_8X8={bool(flag & VQFFlag.Q8_8X8)}, q4 tensors {q4}",
            )
    check_tiling(vqf, names, report)


#: family -> (flag, rows per group) of the tilings that the flags make certain
#: (spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l).
_TILINGS: dict[str, tuple[VQFFlag | None, int]] = {
    "q8": (VQFFlag.Q8_8X8, 8),
    "q4": (VQFFlag.Q4_4X4, 4),
    "x8": (None, 8),
}


def check_tiling(vqf: VQFFile, names: dict[str, Entry], report: Reporter) -> None:
    """Each matrix a flag tiles must split into whole row groups and 32-column blocks."""
    g = Geometry.from_arch(vqf.header.arch)
    for name, e in names.items():
        kind = KINDS.get(name)
        if kind is None or kind.family not in _TILINGS:
            continue
        flag, group = _TILINGS[kind.family]
        if kind.family == "q8" and vqf.header.flags & VQFFlag.Q8BUF_Q4:
            continue  # Q4I8 payloads are never tiled (spec/vqf.md §q4i8)
        if flag is not None and not vqf.header.flags & flag:
            continue
        _, out, inner = kind.physical(g)
        if out % group or inner % 32:
            report(
                "vqf.flags.tiling",
                f"{name} [{out} × {inner}] is not a whole number of {group}-row × 32-column tiles",
                e.entry_offset,
                f"directory[{e.index}]",
            )


# -- zero fill (spec/vqf.md §placement)
# -----------------------------------------------------------------------------
def check_zero_fill(vqf: VQFFile, report: Reporter) -> None:
    """The gap before data_offset and each tensor's pad up to the next 64-byte boundary are zero."""
    h = vqf.header
    gap_start = directory_end(h.n_tensors)
    first_nonzero(
        bytes(vqf.bytes_at(gap_start, h.data_offset)), gap_start, "vqf.file.gap", "gap", report
    )
    if h.encrypted:
        return  # pads are ciphertext
    starts = [e.offset for e in vqf.entries[1:]] + [h.file_len]  # where each pad must end
    for e, next_start in zip(vqf.entries, starts, strict=False):  # no entries: no pads
        pad_end = min(round_up(e.end, ALIGN), next_start, h.file_len)
        if e.end < pad_end:
            first_nonzero(
                bytes(vqf.bytes_at(e.end, pad_end)),
                e.end,
                "vqf.data.padding",
                f"directory[{e.index}].pad",
                report,
            )


def check_protection(
    vqf: VQFFile,
    report: Reporter,
    passphrase: bytes | None,
    trusted: bytes | None,
    progress: Progress | None,
) -> None:
    """The tag of an ENC file, its pads, and the signature of a SIGNED file (spec/vqf.md
    §protected).

    The tag is compared before anything derived from the plaintext is reported: with a wrong
    tag, the tag rule is the only finding of this step (fail closed).
    """
    h = vqf.header
    if h.signed:
        for problem in protect.signer_id_problems(h.sig):
            report(*problem)
    if not (h.encrypted or h.signed):
        return
    if not report_missing_keys(h, report, passphrase, trusted):
        return
    covered = protect.covered_header(vqf.bytes_at(0, HEADER_BYTES))
    view = vqf.bytes_at(0, vqf.size)
    digest_header = covered if h.signed and trusted is not None else None
    if not h.encrypted and digest_header is None:
        return
    keys = protect.derive_keys(passphrase) if h.encrypted else None  # type: ignore[arg-type]
    done = protect.pass_region(
        view,
        h,
        vqf.entries,
        keys=keys,
        mac_headers=[covered] if keys else [],
        digest_header=digest_header,
        progress=progress,
        release=vqf.release_pages,
    )
    kind: str | None = protect.ONE_STREAM
    if keys is not None:
        if not tag_matches(vqf, done, report):
            return  # fail closed: nothing derived from the plaintext is reported
        kind = protect.detect_kind(keys, h, vqf.entries, done.pads)
        if kind is None:
            report_encrypted_pads(keys, vqf, done.pads, report)
    if digest_header is not None:
        digest = done.digests[protect.stream_kind(kind)]
        for problem in protect.check_signature(h.sig, digest, trusted):  # type: ignore[arg-type]
            report(*problem)


def report_missing_keys(
    h: Header, report: Reporter, passphrase: bytes | None, trusted: bytes | None
) -> bool:
    """A protected file checked without its key is reported unverifiable, never valid
    (spec/vqf.md §protected, strict verification). False when nothing more can be checked: an ENC
    file without its passphrase. Every missing key is named, not only the first: an ENC and
    SIGNED file without either needs both."""
    locked = h.encrypted and passphrase is None
    if locked:
        report(
            "vqf.enc.no_key",
            "encrypted file: no passphrase given (--passphrase-file or "
            "VLLM_VQF_KEY), so its tag and contents are unverified",
            h.file_len,
            "trailer",
        )
    if h.signed and trusted is None:
        report(
            "vqf.sig.no_key",
            "signed file: no trusted public key given (--sign-pub or "
            "VLLM_VQF_SIGN_PUB), so its signature is unverified",
            sig_field_offset(VQFHeader, "r"),
            "header.sig",
        )
    return not locked


def tag_matches(vqf: VQFFile, done: protect.RegionPass, report: Reporter) -> bool:
    """The stored tag equals HMAC-SM3(H′ ‖ directory ‖ ciphertext) (spec/vqf.md §sm4-hmac); a
    mismatch is reported as `vqf.enc.tag`."""
    if protect.tags_equal(done.tags[0], vqf.stored_tag()):
        return True
    report(
        "vqf.enc.tag",
        "HMAC-SM3 tag mismatch (wrong passphrase, or the file was changed)",
        vqf.header.file_len,
        "trailer",
    )
    return False


def report_encrypted_pads(
    keys: protect.Keys, vqf: VQFFile, pads: list[tuple[int, bytes]], report: Reporter
) -> None:
    """Pads that decrypt to zeros under neither writer kind: reported as one-stream plaintext."""
    for start, stored in pads:
        plain = protect.keystream_at(
            keys, vqf.header, vqf.entries, protect.ONE_STREAM, start, stored
        )
        if any(plain):
            index = next(e.index for e in vqf.entries if e.end == start)
            first_nonzero(plain, start, "vqf.data.padding", f"directory[{index}].pad", report)


def check_fnv(vqf: VQFFile, report: Reporter, hasher: Any, progress: Progress | None) -> None:
    """The stored FNV-1a-64 equals the hash of directory ‖ data region (spec/vqf.md §fnv-trailer,
    §loader-chain step 8)."""
    stored = vqf.stored_fnv()
    computed = file_checksum(vqf, hasher=hasher, progress=progress)
    if stored == 0 and computed != 0:
        report(
            "vqf.trailer.fnv_missing",
            f"stored FNV is 0 (unchecked by the engine); the bytes hash to {computed:#018x}",
            vqf.header.file_len,
            "trailer",
        )
    elif stored != computed:
        report(
            "vqf.trailer.fnv",
            f"stored FNV {stored:#018x} != computed {computed:#018x}",
            vqf.header.file_len,
            "trailer",
        )
