"""FNV-1a-64 known answers and the zero-run identity the writer relies on (spec/vqf.md
§fnv-trailer)."""

from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.vqf.fnv1a64 import fnv1a64, fnv1a64_zeros


def test_known_answers():
    """spec/vqf.md §fnv-trailer gives "" and "a"; "foobar" is the FNV authors' published test
    vector."""
    assert fnv1a64(b"") == 0xCBF29CE484222325
    assert fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a64(b"foobar") == 0x85944171F73967E8


def test_hand_derived_single_byte():
    """One step by hand: (basis ^ 0x61) * prime mod 2**64."""
    assert fnv1a64(b"a") == ((0xCBF29CE484222325 ^ 0x61) * 0x100000001B3) % 2**64


@given(st.binary(max_size=200), st.binary(max_size=200))
def test_hash_continues_across_pieces(a, b):
    assert fnv1a64(b, fnv1a64(a)) == fnv1a64(a + b)


@given(st.integers(0, 3000), st.integers(0, 2**64 - 1))
def test_zero_run_identity(n, h):
    assert fnv1a64_zeros(n, h) == fnv1a64(bytes(n), h)
