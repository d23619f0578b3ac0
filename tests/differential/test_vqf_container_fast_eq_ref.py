"""The fast writer writes the reference's bytes, and the fast validator reports what ref does."""

from hypothesis import given
from hypothesis import strategies as st
from strategies.vqf import vqf_files

from weightfile.fast.vqf import validate as fast_validate
from weightfile.fast.vqf import write as fast_write
from weightfile.ref.vqf import validate as ref_validate
from weightfile.ref.vqf import write as ref_write


@given(vqf_files(), st.integers(0, 2**32 - 1), st.binary(min_size=1, max_size=8))
def test_fast_write_and_validate_equal_ref(tmp_path_factory, spec, where, junk):
    folder = tmp_path_factory.mktemp("diff")
    a = ref_write.write_vqf(folder / "ref.vqf", **spec)
    b = fast_write.write_vqf(folder / "fast.vqf", **spec)
    assert a.read_bytes() == b.read_bytes()
    blob = bytearray(b.read_bytes())  # then damage one spot and compare the verdicts
    at = where % len(blob)
    blob[at : at + len(junk)] = junk
    b.write_bytes(bytes(blob[: len(blob)]))
    assert fast_validate.validate(b, checksum=True) == ref_validate.validate(b, checksum=True)
