"""The reader: zero-copy views, lookups, ENC/SIGNED recognised, hostile bytes never crash it."""

from __future__ import annotations

import contextlib
import mmap

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.vqf import patch_header

import weightfile
from weightfile.backends import backend_named
from weightfile.examples import EXAMPLE_PATH, TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import (
    ClosedError,
    MalformedError,
    NotFoundError,
    UnsupportedError,
    WeightfileError,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

BASE = EXAMPLE_PATH.read_bytes()


def test_payloads_are_views_of_the_map():
    with open_vqf(EXAMPLE_PATH) as vqf:
        view = vqf.payload("q4_q")
        assert isinstance(view, memoryview)
        assert isinstance(view.obj, mmap.mmap)  # no copy was made
        e = vqf.entry("q4_q")
        assert bytes(view) == BASE[e.offset : e.end]
        del view


def test_close_with_a_view_still_alive_does_not_raise():
    vqf = open_vqf(EXAMPLE_PATH)
    view = vqf.payload("final_norm")
    vqf.close()
    assert len(bytes(view)) == 256


def test_lookups_name_what_is_missing():
    with open_vqf(EXAMPLE_PATH) as vqf:
        with pytest.raises(NotFoundError, match="no tensor named 'nope'") as info:
            vqf.payload("nope")
        assert isinstance(info.value, LookupError)
        with pytest.raises(MalformedError) as info:
            vqf.bytes_at(0, vqf.size + 1)
        assert info.value.rule == "vqf.file.range"


def test_a_duplicate_name_resolves_to_the_later_entry_as_in_the_engine(tmp_path):
    tensors = tiny_tensors(TINY_ARCH)
    tensors.append(TensorSource("final_norm", 1, 64, 1, b"\x01" * 256))
    path = write_vqf(tmp_path / "dup.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    with open_vqf(path) as vqf:
        assert bytes(vqf.payload("final_norm")) == b"\x01" * 256
    assert [v.rule for v in validate(path)] == ["vqf.directory.name_unique"]


def test_encrypted_files_are_recognised_not_misparsed(tmp_path):
    path = tmp_path / "enc.vqf"
    path.write_bytes(BASE + bytes(24))  # a 32-byte tag instead of the 8-byte FNV
    patch_header(path, lambda h: h.update({"flags": h["flags"] | VQFFlag.ENC, "enc_iv": b"k" * 16}))
    with open_vqf(path) as vqf:
        assert vqf.header.encrypted
        assert vqf.stored_tag() == BASE[-8:] + bytes(24)
        with pytest.raises(UnsupportedError, match="give its passphrase") as info:
            vqf.payload("q4_q")  # no passphrase: nothing is decoded from ciphertext
        assert info.value.rule == "vqf.enc.no_key"
        with pytest.raises(UnsupportedError):
            vqf.stored_fnv()
    assert [v.rule for v in validate(path, checksum=True)] == ["vqf.enc.no_key"]
    assert [v.rule for v in validate(path, passphrase=b"pw")] == ["vqf.enc.tag"]


@given(st.integers(0, 4095), st.binary(min_size=1, max_size=16))
def test_hostile_header_and_directory_bytes_give_typed_errors_only(tmp_path_factory, at, junk):
    path = tmp_path_factory.mktemp("hostile") / "x.vqf"
    blob = bytearray(BASE)
    blob[at : at + len(junk)] = junk
    path.write_bytes(bytes(blob[: len(BASE)]))
    with contextlib.suppress(WeightfileError):
        open_vqf(path).close()
    for v in validate(path, checksum=True):
        assert v.rule and v.error_class


@given(st.integers(0, len(BASE) - 1))
def test_every_truncation_is_a_malformed_error(tmp_path_factory, size):
    path = tmp_path_factory.mktemp("trunc") / "x.vqf"
    path.write_bytes(BASE[:size])
    with pytest.raises(MalformedError) as info:
        open_vqf(path).close()
    assert info.value.rule in ("vqf.file.too_small", "vqf.directory.bounds", "vqf.header.layout")


def test_a_file_whose_directory_is_empty_is_reported_not_crashed(tmp_path):
    """Regression (found by the fast==ref property): n_tensors patched to 0."""
    path = tmp_path / "empty-dir.vqf"
    path.write_bytes(BASE)
    patch_header(path, lambda h: h.update({"n_tensors": 0}))
    rules = {v.rule for v in validate(path, checksum=True)}
    assert "vqf.directory.missing_core" in rules


def test_name_lookup_is_a_dict_built_once_with_the_same_answers_and_errors(tmp_path):
    """spec/vqf.md §loader-chain step 12: a lookup no longer scans the directory (a 60k-tensor file
    paid a linear scan per decode); the later duplicate still wins and a missing name is still
    ours."""
    tensors = tiny_tensors(TINY_ARCH)
    tensors.append(TensorSource("final_norm", 1, 64, 1, b"\x01" * 256))
    path = write_vqf(tmp_path / "dup.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    with open_vqf(path) as vqf:
        later = max((e for e in vqf.entries if e.name == "final_norm"), key=lambda e: e.index)

        class NoScan(list):
            def __iter__(self):
                raise AssertionError("entry() scanned the directory")

            __reversed__ = __iter__

        vqf.entries = NoScan(vqf.entries)
        assert vqf.entry("final_norm") is later
        assert bytes(vqf.payload("final_norm")) == b"\x01" * 256
        with pytest.raises(NotFoundError) as info:
            vqf.entry("nope")
        assert info.value.rule == "vqf.directory.name" and info.value.path == "nope"


def test_a_read_after_close_is_a_closed_error_not_an_assertion():
    """spec/vqf.md §file-layout: the map is gone after close(); every read says so with our
    error."""
    vqf = open_vqf(EXAMPLE_PATH)
    vqf.close()
    assert vqf.closed
    for read in (lambda: vqf.payload("q4_q"), lambda: vqf.bytes_at(0, 4), vqf.directory_bytes):
        with pytest.raises(ClosedError) as info:
            read()
        assert info.value.rule == "vqf.file.closed" and isinstance(info.value, ValueError)
    with weightfile.open(EXAMPLE_PATH) as f:
        pass
    for engine in ("ref", "fast"):
        with pytest.raises(ClosedError) as info:
            f.decode("q4_q", engine=engine)
        assert info.value.rule == "vqf.file.closed"


# Q4_8X8L is left out: its codec is chosen by an x8_* name only (spec/vqf.md §q4-8x8l)
@pytest.mark.parametrize("qtype", [q for q in QType if q != QType.Q4_8X8L])
@pytest.mark.parametrize("engine", ["ref", "fast"])
def test_a_tensor_of_zero_rows_decodes_to_empty_words(tmp_path, qtype, engine):
    """spec/vqf.md §size-function: rows = 0 has size 0; its words are empty arrays of the codec's
    row widths (they raised numpy's ValueError: a -1 axis of an empty array)."""
    tensors = [*tiny_tensors(TINY_ARCH), TensorSource("extra", int(qtype), 0, 64, b"")]
    path = write_vqf(tmp_path / "zero.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    with weightfile.open(path) as f:
        assert f.decode("extra", engine=engine).shape == (0, 64)
        words = f.decode_words("extra", engine=engine)
        module = backend_named(engine).vqf_codecs.codec(f.codec("extra"))
        want = module.decode_words(b"", 0, 64)
    assert words.keys() == want.keys()
    for k, v in words.items():
        assert v.shape == want[k].shape and v.shape[0] == 0 and v.dtype == want[k].dtype
