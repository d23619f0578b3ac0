"""fast.numerics.rope gives the reference's correctly rounded RoPE rows (spec/numerics.md §rope)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast.numerics.rope import FastRopeTables
from weightfile.ref.numerics.rope import RopeTables


@pytest.fixture(scope="module", params=[(10000.0, 64), (1000000.0, 128), (5000.0, 8)])
def tables(request) -> tuple[RopeTables, FastRopeTables]:
    theta, dim = request.param
    ref = RopeTables(np.float32(theta), dim)
    return ref, FastRopeTables(ref)


@settings(max_examples=15)
@given(position=st.one_of(st.integers(0, 64), st.integers(0, 2**20)))
def test_rows_equal_the_reference(tables, position: int) -> None:
    ref, fast = tables
    want_cos, want_sin = ref.row(position)
    got_cos, got_sin = fast.row(position)
    assert (
        got_cos.view(np.uint32).tolist() == np.array(want_cos, np.float32).view(np.uint32).tolist()
    )
    assert (
        got_sin.view(np.uint32).tolist() == np.array(want_sin, np.float32).view(np.uint32).tolist()
    )


def test_an_unsure_value_goes_to_the_exact_evaluation(monkeypatch) -> None:
    """With a margin so wide every value is unsure, every value takes the mpmath path."""
    from weightfile.fast.numerics import rope

    calls = []
    real = rope.correctly_rounded
    monkeypatch.setattr(rope, "MIDPOINT_MARGIN", 1.0)
    monkeypatch.setattr(rope, "correctly_rounded", lambda *a: calls.append(a) or real(*a))
    ref = RopeTables(np.float32(10000.0), 8)
    cos, _ = FastRopeTables(ref).row(7)
    assert len(calls) == 8
    assert cos.tolist() == [float(v) for v in ref.row(7)[0]]
