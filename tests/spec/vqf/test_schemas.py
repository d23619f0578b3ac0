"""The construct schemas have the sizes and offsets spec/vqf.md §header, §directory states (numbers
typed from it)."""

import pytest

from weightfile.spec.vqf.arch import ARCH_FIELD_NAMES, VQFArch, VQFArchLegacy
from weightfile.spec.vqf.flags import VQFFlag, flag_names
from weightfile.spec.vqf.header import (
    VQFHeader,
    VQFHeaderLegacy,
    arch_field_offset,
    field_offset,
    sig_field_offset,
)
from weightfile.spec.vqf.placement import data_offset_for, file_len_for, tensor_offsets
from weightfile.spec.vqf.qtypes import QType, tensor_bytes
from weightfile.spec.vqf.sig import VQFSig
from weightfile.spec.vqf.tensor import VQFTensor


def test_record_sizes_are_the_specs():
    """spec/vqf.md §constants: VQFSig 200, VQFHeader 448 (legacy 432), VQFTensor 64; the arch is 45
    words."""
    assert VQFSig.sizeof() == 200
    assert VQFHeader.sizeof() == 448
    assert VQFHeaderLegacy.sizeof() == 432
    assert VQFTensor.sizeof() == 64
    assert VQFArch.sizeof() == 45 * 4
    assert VQFArchLegacy.sizeof() == 41 * 4


@pytest.mark.parametrize(
    ("field", "current", "legacy"),
    [
        ("data_offset", 200, 184),
        ("file_len", 208, 192),
        ("enc_iv", 216, 200),
        ("enc_rsvd", 232, 216),
        ("sig", 248, 232),
        ("pad_arch", 196, 180),
    ],
)
def test_header_tail_offsets_match_both_layouts(field, current, legacy):
    """spec/vqf.md §header-layout and §legacy-header list these absolute offsets."""
    assert field_offset(VQFHeader, field) == current
    assert field_offset(VQFHeaderLegacy, field) == legacy


@pytest.mark.parametrize(
    ("field", "offset"),
    [
        ("dim", 16),
        ("max_seq_len", 44),
        ("rope_theta", 48),
        ("norm_eps", 52),
        ("head_dim_full", 72),
        ("vis_ds_count", 124),
        ("mrope_n_sec", 128),
        ("vis_ds_idx", 132),
        ("mrope_sections", 148),
        ("vision_start_id", 164),
        ("video_token_id", 176),
        ("n_experts", 180),
        ("moe_ffn", 184),
        ("top_k", 188),
        ("shared_experts", 192),
    ],
)
def test_arch_field_offsets(field, offset):
    """The spec/vqf.md §header-layout byte map (abs off column)."""
    assert arch_field_offset(VQFHeader, field) == offset


def test_sig_offsets_in_the_current_layout():
    """spec/vqf.md §signature-block: pub 248, r 312, s 344, digest 376, id 408, id_len 440, rsvd
    444."""
    want = {"pub": 248, "r": 312, "s": 344, "digest": 376, "id": 408, "id_len": 440, "rsvd": 444}
    assert {k: sig_field_offset(VQFHeader, k) for k in want} == want


def test_entry_offsets():
    """spec/vqf.md §entry: name 0, qtype 32, rows 36, cols 40, pad 44, offset 48, bytes 56."""
    names = ("name", "qtype", "rows", "cols", "pad", "offset", "bytes")
    assert [field_offset(VQFTensor, n) for n in names] == [0, 32, 36, 40, 44, 48, 56]


def test_magic_bytes_read_fqfw():
    """spec/vqf.md §decisions item 2: 0x57465146 stored little-endian is ASCII 'FQFW'."""
    fields = {"version": 2, "flags": 0, "n_tensors": 0, "arch": _arch(), "sig": {}}
    blob = VQFHeader.build({**fields, "data_offset": 0, "file_len": 0})
    assert blob[:4] == b"FQFW"


def _arch():
    values = dict.fromkeys(ARCH_FIELD_NAMES, 0)
    values.update(vis_ds_idx=[0] * 4, mrope_sections=[0] * 4)
    return values


def test_flag_values_and_names():
    """spec/vqf.md §flags bit table; 0x223 is the observed 30B-A3B value."""
    assert [f.value for f in VQFFlag] == [1 << b for b in range(10)]
    assert flag_names(0x223) == ["Q8_8X8", "Q4_4X4", "EMB_F16", "MOE"]
    assert flag_names(0x063) == ["Q8_8X8", "Q4_4X4", "EMB_F16", "VISION"]
    assert flag_names(1 << 31) == ["bit31"]


@pytest.mark.parametrize(
    ("qtype", "n", "size"),
    [
        (QType.F32, 10, 40),
        (QType.F16, 10, 20),
        (QType.Q8_0, 32, 34),
        (QType.Q8_0, 33, 68),
        (QType.Q4_0, 64, 36),
        (QType.Q4_0, 1, 18),
        (QType.Q4_8X8L, 256, 144),
        (QType.Q4_0, 0, 0),
        # spec/vqf.md §worked-example: q4_q of Qwen3-VL-2B is 57344 × 2048 in Q4 -> 66,060,288 bytes
        (QType.Q4_0, 57344 * 2048, 66_060_288),
        (QType.F16, 151936 * 2048, 622_329_856),
    ],
)
def test_size_function(qtype, n, size):
    """spec/vqf.md §size-function: 4N, 2N, ceil(N/32)·34, ceil(N/32)·18."""
    assert tensor_bytes(qtype, n) == size


def test_placement_rules():
    """spec/vqf.md §placement: data_offset = round_up(448 + 64·n, 4096).

    spec/vqf.md §decisions item 12 says "4096 while n <= 56"; by its own formula it stays 4096 up to
    n = 57 (448 + 57·64 = 4096 exactly), and becomes 8192 at n = 58.
    """
    assert data_offset_for(0) == 4096
    assert data_offset_for(41) == 4096  # dir_end 3072 in the spec/vqf.md §worked-example example
    assert data_offset_for(56) == 4096
    assert data_offset_for(57) == 4096
    assert data_offset_for(58) == 8192
    assert tensor_offsets(4096, [10, 64, 1]) == [4096, 4160, 4224]
    assert file_len_for(4096, [10, 64, 1]) == 4288
    assert file_len_for(4096, []) == 4096
