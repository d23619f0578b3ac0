"""fast == ref for resources in `raw_bytes_v1`: the bytes, verbatim, both ways."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies.codecs_ninfer3 import assert_identical, outcome

from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_codec
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_codec

REF, FAST = ref_codec(None, "raw_bytes_v1"), fast_codec(None, "raw_bytes_v1")


@given(payload=st.binary(min_size=1, max_size=64), extra=st.integers(-1, 1))
def test_raw_bytes_fast_eq_ref(payload: bytes, extra: int) -> None:
    """Same arrays and bytes; the same MalformedError when the stated length is off by one."""
    shape = (len(payload) + extra,) if len(payload) + extra > 0 else (len(payload),)
    for name in ("validate", "decode_words", "decode"):
        assert_identical(
            outcome(getattr(REF, name), payload, shape),
            outcome(getattr(FAST, name), payload, shape),
        )
    values = np.frombuffer(payload, dtype=np.uint8).copy()
    shape = values.shape
    assert_identical(outcome(REF.encode, values, shape), outcome(FAST.encode, values, shape))
    assert REF.encode(values, shape) == payload
