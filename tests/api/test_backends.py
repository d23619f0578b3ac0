"""Engine names and the backends (ref/backend.py, fast/backend.py, weightfile/backends.py)."""

from __future__ import annotations

import numpy as np
import pytest

import weightfile
from weightfile.backends import ENGINES, as_backend, backend_named
from weightfile.examples import EXAMPLE_PATH
from weightfile.fast.backend import FAST
from weightfile.ref.backend import REFERENCE


def test_the_engine_names_map_to_the_two_backends():
    assert ENGINES == ("ref", "fast")
    assert backend_named("ref") is REFERENCE and backend_named("fast") is FAST
    assert as_backend("fast") is FAST and as_backend(REFERENCE) is REFERENCE
    with pytest.raises(ValueError, match="engine must be one of"):
        backend_named("numpy")


def test_each_backend_carries_its_own_engines_codecs_and_checksum():
    assert REFERENCE.vqf_codecs.codec("q8_0").__name__ == "weightfile.ref.codecs.vqf.q8_0"
    assert FAST.vqf_codecs.codec("q8_0").__name__ == "weightfile.fast.codecs.vqf.q8_0"
    assert REFERENCE.ninfer_codecs.__name__ == "weightfile.ref.codecs.ninfer3.codec"
    assert FAST.ninfer_codecs.__name__ == "weightfile.fast.codecs.ninfer3.codec"
    data = bytes(range(256)) * 5
    assert FAST.checksum(data, 7) == REFERENCE.checksum(data, 7)


def test_decode_takes_an_engine_name_or_a_backend():
    with weightfile.open(EXAMPLE_PATH) as f:
        for name in ("q4_q", "attn_norm"):
            by_name = f.decode_words(name, engine="ref")
            by_value = f.decode_words(name, engine=REFERENCE)
            assert by_name.keys() == by_value.keys()
            assert all(np.array_equal(by_name[k], by_value[k]) for k in by_name)
            assert np.array_equal(f.decode(name, engine=FAST), f.decode(name, engine="fast"))
        with pytest.raises(ValueError, match="engine must be one of"):
            f.decode("q4_q", engine="numpy")


def test_validate_checksums_with_the_engine_asked_for():
    assert weightfile.validate(EXAMPLE_PATH, checksum=True, engine="fast") == []
    assert weightfile.validate(EXAMPLE_PATH, checksum=True, engine=REFERENCE) == []
