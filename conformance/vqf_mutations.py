"""The mutation table: for every VQF file rule (spec/vqf.md §loader-chain, §strict-checks and the
unimplemented features of spec/vqf.md §protected), the fewest byte changes to a valid base file that
break that rule alone.

Each mutation goes through the schemas (vqf_patch) and refreshes the FNV trailer when the covered
bytes change. The conformance generator turns every entry into an invalid case; the tests in
tests/ref/vqf/test_rules.py check that each breaks exactly its own rule.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.vqf.read import Entry, open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

from .vqf_patch import (
    insert_zeros,
    patch_bytes,
    patch_entry,
    patch_header,
    read_header,
    refresh_fnv,
)

Mutation = Callable[[Path], Any]

#: Three layers of head_dim 8: q_norm and k_norm are 96 bytes, so they carry a 32-byte pad.
#: dim 32 and vocab 64 keep every case file near 26 KB (the corpus stays under 2 MB).
RULE_ARCH: dict[str, Any] = {
    **TINY_ARCH,
    "dim": 32,
    "n_layers": 3,
    "head_dim": 8,
    "head_dim_full": 8,
    "ffn_dim": 64,
    "vocab_size": 64,
}
Q_NORM, Q4_Q, Q4_GATE, Q4_UP, Q4_LM = 4, 6, 10, 11, 13


def write_base(path: Path, arch: dict[str, Any] = RULE_ARCH, **kw: Any) -> Path:
    kw.setdefault("flags", TINY_FLAGS)
    kw.setdefault("tensors", tiny_tensors(arch))
    return write_vqf(path, arch=arch, **kw)


def entry(path: Path, index: int) -> Entry:
    with open_vqf(path, check_ranges=False) as vqf:
        return vqf.entries[index]


def set_arch(**values: Any) -> Mutation:
    return lambda p: patch_header(p, lambda h: h["arch"].update(values))


def set_header(**values: Any) -> Mutation:
    return lambda p: patch_header(p, lambda h: h.update(values))


def set_flags(on: int = 0, off: int = 0) -> Mutation:
    return lambda p: patch_header(p, lambda h: h.update({"flags": (h["flags"] | on) & ~off}))


def corrupt_pad(p: Path) -> None:
    e = entry(p, Q_NORM)
    patch_bytes(p, e.end + 3, b"\x01", refresh=True)


def shift_data(p: Path) -> None:
    """Move the whole data region one page later and fix every offset: only data_offset is off."""
    h = read_header(p)
    insert_zeros(p, h["data_offset"], 4096)
    moved = {"data_offset": h["data_offset"] + 4096, "file_len": h["file_len"] + 4096}
    patch_header(p, lambda x: x.update(moved))
    for i in range(h["n_tensors"]):
        patch_entry(p, i, offset=entry(p, i).offset + 4096)


def grow_file_len(p: Path) -> None:
    h = read_header(p)
    insert_zeros(p, h["file_len"], 64)
    patch_header(p, lambda x: x.update({"file_len": x["file_len"] + 64}))
    refresh_fnv(p)


def move_last_tensor(p: Path) -> None:
    last = entry(p, Q4_LM)
    insert_zeros(p, last.offset, 64)
    patch_header(p, lambda x: x.update({"file_len": x["file_len"] + 64}))
    patch_entry(p, Q4_LM, offset=last.offset + 64)


def rename(index: int, name: bytes) -> Mutation:
    return lambda p: patch_entry(p, index, name=name.ljust(32, b"\0"))


def without(*names: str) -> Mutation:
    def build(p: Path) -> None:
        p.unlink()
        keep = [t for t in tiny_tensors(RULE_ARCH) if t.name not in names]
        write_base(p, tensors=keep)

    return build


def rewrite(arch: dict[str, Any] = RULE_ARCH, **kw: Any) -> Mutation:
    """Write the base file again from other arguments (the mutation can run any number of times)."""

    def build(p: Path) -> None:
        p.unlink()
        write_base(p, arch=arch, tensors=tiny_tensors(arch), **kw)

    return build


def make_encrypted(p: Path) -> None:
    """What an ENC file looks like: ENC flag, an IV, and a 32-byte tag instead of the FNV."""
    patch_header(p, lambda h: h.update({"flags": h["flags"] | VQFFlag.ENC, "enc_iv": bytes(16)}))
    with open(p, "ab") as fh:
        fh.write(bytes(range(24)))


def make_signed(p: Path) -> None:
    sig = {"pub": b"\x11" * 64, "r": b"\x22" * 32, "s": b"\x33" * 32, "digest": b"\x44" * 32,
           "id": b"vllm-shs-vqf".ljust(32, b"\0"), "id_len": 12, "rsvd": 0}  # fmt: skip
    patch_header(p, lambda h: h.update({"flags": h["flags"] | VQFFlag.SIGNED, "sig": sig}))


def legacy_signed(p: Path) -> None:
    p.unlink()
    write_base(p, layout="legacy")
    patch_header(p, lambda h: h.update({"flags": h["flags"] | VQFFlag.SIGNED}))


def both_layouts_valid(p: Path) -> None:
    """Put a valid (data_offset, file_len) pair in the legacy slots too (moe_ffn..)."""
    h = read_header(p)
    d, f = h["data_offset"], h["file_len"]
    set_arch(moe_ffn=d & 0xFFFFFFFF, top_k=d >> 32, shared_experts=f & 0xFFFFFFFF)(p)


def drop_one_element(p: Path) -> None:
    e = entry(p, Q4_Q)
    patch_entry(p, Q4_Q, rows=e.rows * e.cols - 1, cols=1)


def transposed_gate(p: Path) -> None:
    """q4_gate as nl·d × ff, the transpose earlier weightfile importers wrote (spec/vqf.md
    §geometry): the element count is right, the factorisation is not."""
    a = RULE_ARCH
    patch_entry(p, Q4_GATE, rows=a["n_layers"] * a["dim"], cols=a["ffn_dim"])


def tensor_beyond_file_len(p: Path) -> None:
    patch_entry(p, Q4_LM, bytes=entry(p, Q4_LM).bytes + 64)


DIM_AT = 16
#: rule id -> (mutation, expected rule set when the violation cannot stand alone)
CASES: dict[str, tuple[Mutation, set[str] | None]] = {
    "vqf.file.too_small": (lambda p: p.write_bytes(p.read_bytes()[:511]), None),
    "vqf.header.magic": (lambda p: patch_bytes(p, 0, b"V"), None),
    "vqf.header.version": (set_header(version=4), None),
    "vqf.header.arch_geometry": (set_arch(head_dim=0), None),
    "vqf.directory.bounds": (set_header(n_tensors=10**6), None),
    "vqf.header.layout": (set_header(data_offset=4100), None),
    "vqf.header.legacy_protected": (legacy_signed, None),
    # Reaching past file_len also breaks the size rule and the file_len placement rule.
    "vqf.directory.tensor_range": (
        tensor_beyond_file_len,
        {"vqf.directory.tensor_range", "vqf.directory.bytes", "vqf.header.file_len"},
    ),
    "vqf.directory.missing_core": (without("q4_q"), None),
    "vqf.trailer.fnv": (lambda p: patch_bytes(p, entry(p, Q4_Q).offset + 5, b"\xff"), None),
    "vqf.trailer.fnv_missing": (
        lambda p: patch_bytes(p, read_header(p)["file_len"], bytes(8)),
        None,
    ),
    "vqf.header.unknown_flags": (set_flags(on=1 << 20), None),
    "vqf.header.padding": (set_header(pad_arch=b"\0\0\x01\0"), None),
    "vqf.header.enc_rsvd": (set_header(enc_rsvd=b"\x01" + bytes(15)), None),
    "vqf.header.enc_iv": (set_header(enc_iv=bytes(15) + b"\x01"), None),
    "vqf.header.sig": (lambda p: patch_header(p, lambda h: h["sig"].update({"id_len": 12})), None),
    "vqf.header.data_offset": (shift_data, None),
    "vqf.header.file_len": (grow_file_len, None),
    "vqf.file.gap": (lambda p: patch_bytes(p, 4000, b"\x01"), None),
    "vqf.data.padding": (corrupt_pad, None),
    "vqf.directory.name_terminated": (rename(Q4_LM, b"x" * 32), None),
    "vqf.directory.name_padding": (rename(Q4_LM, b"q4_lm\0\0\0z"), None),
    "vqf.directory.name_unique": (rename(Q4_UP, b"q4_gate"), None),
    "vqf.directory.name_known": (rename(Q4_LM, b"q4_lm2"), None),
    "vqf.directory.entry_padding": (lambda p: patch_entry(p, Q4_LM, pad=b"\0\x01\0\0"), None),
    "vqf.directory.qtype_known": (lambda p: patch_entry(p, Q4_LM, qtype=9), None),
    "vqf.directory.qtype_family": (lambda p: patch_entry(p, Q4_LM, qtype=QType.Q4_8X8L), None),
    "vqf.directory.bytes": (lambda p: patch_entry(p, Q_NORM, bytes=100), None),
    # One Q4 element fewer needs the same number of blocks: only the element count is off.
    "vqf.directory.geometry": (drop_one_element, None),
    "vqf.directory.shape": (transposed_gate, None),
    "vqf.directory.offset": (move_last_tensor, None),
    "vqf.directory.order": (
        lambda p: (rename(Q4_GATE, b"q4_up")(p), rename(Q4_UP, b"q4_gate")(p)),
        None,
    ),
    "vqf.flags.emb_f16": (set_flags(off=VQFFlag.EMB_F16), None),
    "vqf.flags.vision": (set_flags(on=VQFFlag.VISION), None),
    "vqf.flags.x8": (set_flags(on=VQFFlag.X8), None),
    "vqf.flags.moe": (set_arch(n_experts=1), None),
    "vqf.flags.q8buf_q4": (set_flags(on=VQFFlag.Q8BUF_Q4), None),
    "vqf.flags.tiling": (rewrite(arch={**RULE_ARCH, "vocab_size": 250}), None),
    "vqf.arch.moe_ffn": (set_arch(top_k=1), None),
    "vqf.arch.mrope_sections": (
        set_arch(has_mrope=1, mrope_n_sec=3, mrope_sections=[24, 20, 20, 0]),
        None,
    ),
    "vqf.arch.reserved": (set_arch(kv_lora_rank=1), None),
    "vqf.enc.not_implemented": (make_encrypted, None),
    "vqf.sig.not_implemented": (make_signed, None),
}
LOADER_CHAIN = {
    "vqf.file.too_small", "vqf.header.magic", "vqf.header.version", "vqf.header.arch_geometry",
    "vqf.directory.bounds", "vqf.header.layout", "vqf.header.legacy_protected",
    "vqf.directory.tensor_range",
}  # fmt: skip
