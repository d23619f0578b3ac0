"""fast FNV-1a-64 (C kernel) equals the reference loop bit for bit, on any bytes and any start."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.fast import _native
from weightfile.fast.vqf import fnv1a64 as fast
from weightfile.ref.vqf import fnv1a64 as ref


@pytest.fixture(scope="module", autouse=True)
def _require_native():
    if _native.library() is None:
        pytest.fail("the C kernels did not build; the fast path would only test its fallback")


@given(st.binary(max_size=4096), st.integers(0, 2**64 - 1))
def test_fast_fnv1a64_equals_ref_on_any_bytes(data, h):
    assert fast.fnv1a64(data, h) == ref.fnv1a64(data, h)


@given(st.binary(min_size=1, max_size=512), st.integers(0, 511))
def test_fast_fnv1a64_accepts_read_only_and_offset_views(data, start):
    view = memoryview(data)[min(start, len(data)) :]
    assert fast.fnv1a64(view) == ref.fnv1a64(bytes(view))


def test_fast_fnv1a64_on_a_numpy_buffer():
    arr = np.arange(1000, dtype=np.uint16)
    assert fast.fnv1a64(memoryview(arr).cast("B")) == ref.fnv1a64(arr.tobytes())
