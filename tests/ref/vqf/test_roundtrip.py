"""Write -> read -> write is byte-identical and every field reads back (spec/vqf.md §header,
§directory)."""

from hypothesis import given
from strategies.vqf import vqf_files

from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.vqf.placement import data_offset_for, file_len_for, tensor_offsets


@given(vqf_files())
def test_write_read_write_is_byte_identical(tmp_path_factory, spec):
    folder = tmp_path_factory.mktemp("rt")
    first = write_vqf(folder / "a.vqf", **spec)
    with open_vqf(first) as vqf:
        h = vqf.header
        assert (h.layout, h.version, h.flags) == (spec["layout"], spec["version"], spec["flags"])
        assert h.n_tensors == len(spec["tensors"])
        assert h.arch == spec["arch"]
        sizes = [len(t.data) for t in spec["tensors"]]
        assert h.data_offset == data_offset_for(len(sizes))
        assert h.file_len == file_len_for(h.data_offset, sizes)
        assert [e.offset for e in vqf.entries] == tensor_offsets(h.data_offset, sizes)
        back = []
        for e, t in zip(vqf.entries, spec["tensors"], strict=True):
            assert (e.name, e.qtype, e.rows, e.cols, e.bytes) == (
                t.name, t.qtype, t.rows, t.cols, len(t.data),
            )  # fmt: skip
            assert bytes(vqf.payload(e)) == t.data
            back.append(TensorSource(e.name, e.qtype, e.rows, e.cols, bytes(vqf.payload(e))))
        arch = dict(h.arch)
    again = write_vqf(folder / "b.vqf", **{**spec, "arch": arch, "tensors": back})
    assert again.read_bytes() == first.read_bytes()
