"""The bundled example file is exactly what its generator writes (no drift), and it is valid."""

from weightfile.examples import EXAMPLE_PATH, write_example
from weightfile.ref.vqf.validate import validate


def test_bundled_example_regenerates_byte_identical(tmp_path):
    fresh = write_example(tmp_path / "example.vqf")
    assert fresh.read_bytes() == EXAMPLE_PATH.read_bytes(), (
        "regenerate with: python -c 'from weightfile.examples import *; "
        "write_example(EXAMPLE_PATH, overwrite=True)'"
    )


def test_bundled_example_is_valid():
    assert validate(EXAMPLE_PATH, checksum=True) == []
