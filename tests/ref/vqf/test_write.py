"""The writer: spec/vqf.md §directory-order order, refusal of bad input, atomic publication
(spec/vqf.md §placement, §directory-order, §fnv-trailer)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import DestinationExistsError, InvalidError
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import DIRECTORY_ORDER
from weightfile.spec.vqf.qtypes import QType


def write_tiny(path, **kw):
    kw.setdefault("tensors", tiny_tensors(TINY_ARCH))
    kw.setdefault("flags", TINY_FLAGS)
    return write_vqf(path, arch=TINY_ARCH, **kw)


def test_tensors_are_placed_in_the_spec_order(tmp_path):
    shuffled = list(reversed(tiny_tensors(TINY_ARCH)))
    path = write_tiny(tmp_path / "m.vqf", tensors=shuffled)
    with open_vqf(path) as vqf:
        names = [e.name for e in vqf.entries]
    rank = [k.name for k in DIRECTORY_ORDER]
    assert names == sorted(names, key=rank.index)
    assert validate(path, checksum=True) == []


def test_chunked_and_numpy_payloads_write_the_same_bytes(tmp_path):
    plain = tiny_tensors(TINY_ARCH)
    chunked = [
        TensorSource(t.name, t.qtype, t.rows, t.cols, [t.data[:7], t.data[7:100], t.data[100:]])
        for t in plain
    ]
    arrays = [
        TensorSource(t.name, t.qtype, t.rows, t.cols, np.frombuffer(t.data, np.uint8))
        for t in plain
    ]
    a = write_tiny(tmp_path / "a.vqf", tensors=plain).read_bytes()
    assert write_tiny(tmp_path / "b.vqf", tensors=chunked).read_bytes() == a
    assert write_tiny(tmp_path / "c.vqf", tensors=arrays).read_bytes() == a


def test_an_existing_file_is_never_replaced_unless_asked(tmp_path):
    path = tmp_path / "m.vqf"
    path.write_bytes(b"precious")
    with pytest.raises(DestinationExistsError) as info:
        write_tiny(path)
    assert info.value.rule == "vqf.writer.destination"
    assert path.read_bytes() == b"precious"
    write_tiny(path, overwrite=True)
    assert validate(path) == []
    assert sorted(os.listdir(tmp_path)) == ["m.vqf"]


def failing_source():
    yield b"\0" * 100
    raise OSError("disk on fire")


@pytest.mark.parametrize(
    ("change", "error", "rule"),
    [
        (lambda ts: ts.__setitem__(0, TensorSource("x" * 32, 1, 1, 1, bytes(4))), InvalidError,
         "vqf.writer.name"),
        (lambda ts: ts.__setitem__(0, TensorSource("tøken", 1, 1, 1, bytes(4))), InvalidError,
         "vqf.writer.name"),
        (lambda ts: ts.__setitem__(0, TensorSource("", 1, 1, 1, bytes(4))), InvalidError,
         "vqf.writer.name"),
        (lambda ts: ts.__setitem__(1, TensorSource("final_norm", 1, 64, 1, bytes(255))),
         InvalidError, "vqf.writer.payload"),
        (lambda ts: ts.__setitem__(1, TensorSource("final_norm", 1, 64, 1, bytes(257))),
         InvalidError, "vqf.writer.payload"),
        (lambda ts: ts.__setitem__(1, TensorSource("final_norm", 1, 2**32, 1, None, 4)),
         InvalidError, "vqf.writer.field"),
        (lambda ts: ts.__setitem__(1, TensorSource("final_norm", 1, 64, 1, failing_source())),
         OSError, None),
    ],
)  # fmt: skip
def test_a_failed_write_leaves_nothing(tmp_path, change, error, rule):
    tensors = tiny_tensors(TINY_ARCH)
    change(tensors)
    with pytest.raises(error) as info:
        write_tiny(tmp_path / "m.vqf", tensors=tensors)
    if rule:
        assert info.value.rule == rule
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("kw", "rule"),
    [
        ({"layout": "legacy", "version": 3}, "vqf.writer.legacy"),
        ({"arch": {**TINY_ARCH, "dim": -1}}, "vqf.writer.field"),
        ({"arch": {**TINY_ARCH, "vocab_size": 2**32}}, "vqf.writer.field"),
        ({"tensors": [TensorSource("final_norm", QType.F32, 0, 1, b"")]}, "vqf.writer.empty"),
    ],
)
def test_invalid_header_requests_are_refused(tmp_path, kw, rule):
    arch = kw.pop("arch", TINY_ARCH)
    with pytest.raises(InvalidError) as info:
        write_vqf(tmp_path / "m.vqf", arch=arch, **{"tensors": tiny_tensors(TINY_ARCH), **kw})
    assert info.value.rule == rule
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("flag", [VQFFlag.ENC, VQFFlag.SIGNED])
def test_protected_flags_are_refused_by_the_plaintext_writer(tmp_path, flag):
    with pytest.raises(InvalidError, match="encrypt_vqf") as info:
        write_tiny(tmp_path / "m.vqf", flags=TINY_FLAGS | flag)
    assert info.value.rule == "vqf.writer.protect"
    assert os.listdir(tmp_path) == []


def test_legacy_layout_reads_back_with_its_offsets(tmp_path):
    path = write_tiny(tmp_path / "legacy.vqf", layout="legacy")
    blob = path.read_bytes()
    with open_vqf(path) as vqf:
        assert vqf.header.layout == "legacy"
        # spec/vqf.md §legacy-header: data_offset u64 @184, file_len u64 @192 in the legacy layout
        assert int.from_bytes(blob[184:192], "little") == vqf.header.data_offset == 4096
        assert int.from_bytes(blob[192:200], "little") == vqf.header.file_len == len(blob) - 8
        assert blob[200:448] == bytes(248)  # enc_iv, enc_rsvd, sig, 16-byte tail: all zero
    assert validate(path, checksum=True) == []
