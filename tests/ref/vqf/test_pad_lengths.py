"""Every pad after a payload must be zero (spec/vqf.md §placement, `vqf.data.padding`), whatever
its length: one non-zero byte anywhere in a pad of 1 … 63 bytes is reported with the rule, the
byte's absolute offset and the path `directory[i].pad`.

The registered qtypes all have even payload sizes (spec/vqf.md §qtype-codes), so a writer-made
valid file has only even pads; the odd lengths come from an entry whose `bytes` is not the size
function's (the writer's `nbytes`), which the placement rules still place and pad — the validator
then reports `vqf.directory.bytes` for the entry and must still check the pad.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies.vqf import patch_bytes, vqf_files

from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import TensorSource, write_vqf


def padding(found) -> list[tuple[int | None, str | None, str]]:
    return [(v.offset, v.path, v.error_class) for v in found if v.rule == "vqf.data.padding"]


def trimmed(t: TensorSource, pad: int) -> TensorSource:
    """`t` declaring `pad` bytes fewer (its sizes are multiples of 64 here: the pad is `pad`)."""
    assert len(t.data) % 64 == 0 and len(t.data) > pad  # type: ignore[arg-type]
    n = len(t.data) - pad  # type: ignore[arg-type]
    return TensorSource(t.name, t.qtype, t.rows, t.cols, t.data[:n], nbytes=n)  # type: ignore[index]


@pytest.mark.parametrize("pad", range(1, 64))
def test_every_pad_length_reports_each_end_and_the_middle(tmp_path: Path, pad: int) -> None:
    """The tiny model with its first payload (pad bounded by the next offset) and its last one
    (bounded by file_len) each `pad` bytes short of a 64 multiple."""
    tensors = tiny_tensors(TINY_ARCH)
    last = len(tensors) - 1
    tensors[0], tensors[last] = trimmed(tensors[0], pad), trimmed(tensors[last], pad)
    path = write_vqf(tmp_path / "p.vqf", arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS)
    with open_vqf(path) as vqf:
        ends = {i: vqf.entries[i].end for i in (0, last)}
        assert [vqf.entries[i].end % 64 for i in (0, last)] == [64 - pad] * 2
    baseline = validate(path)
    assert [v.rule for v in baseline] == ["vqf.directory.bytes"] * 2 and padding(baseline) == []
    for i, end in ends.items():
        for j in sorted({0, pad // 2, pad - 1}):
            patch_bytes(path, end + j, b"\x80")
            want = [(end + j, f"directory[{i}].pad", "InvalidError")]
            assert padding(validate(path)) == want, (i, j)
            patch_bytes(path, end + j, b"\x00")


@st.composite
def files_with_a_dirty_pad(draw: st.DrawFn) -> tuple[dict, int, int, int]:
    """A file of the existing strategy, one payload maybe trimmed to reach any pad length, and a
    pad byte to make non-zero: (write_vqf kwargs, entry index, position in its pad, byte)."""
    spec = draw(vqf_files())
    tensors = list(spec["tensors"])
    k = draw(st.integers(0, len(tensors) - 1), label="trimmed")
    t = tensors[k]
    cut = draw(st.integers(0, min(63, max(len(t.data) - 1, 0))), label="cut")
    n = len(t.data) - cut
    tensors[k] = TensorSource(t.name, t.qtype, t.rows, t.cols, t.data[:n], nbytes=n)
    spec = {**spec, "tensors": tensors}
    padded = [i for i, s in enumerate(tensors) if s.size % 64]
    if not padded:
        return spec, -1, 0, 0
    i = draw(st.sampled_from(padded), label="entry")
    j = draw(st.integers(0, 63 - tensors[i].size % 64), label="position")
    return spec, i, j, draw(st.integers(1, 255), label="byte")


@given(case=files_with_a_dirty_pad())
def test_any_pad_byte_of_any_file_is_reported(tmp_path_factory, case) -> None:
    spec, i, j, byte = case
    path = write_vqf(tmp_path_factory.mktemp("pad") / "f.vqf", **spec)
    assert padding(validate(path)) == []
    if i < 0:
        return
    with open_vqf(path) as vqf:
        end = vqf.entries[i].end
    patch_bytes(path, end + j, bytes([byte]))
    assert padding(validate(path)) == [(end + j, f"directory[{i}].pad", "InvalidError")]
