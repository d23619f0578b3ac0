"""Round trips of the fast codecs: decode obeys each format's reconstruction rule (checked with
numpy's own float16 widening), re-encoding a decoded payload reproduces it (a fixed point of the
Kestrel quantisers for inputs away from the 1e-10 floors), and random valid words survive the
tiled layouts byte for byte."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies.codecs_vqf import any_f32_bits, payloads, shapes

from weightfile.fast.codecs.vqf import codec, f16, f32
from weightfile.spec.codecs.vqf.registry import CODECS

QUANTISED = ["q8_0", "q4_0", "q4i8", "g256", "q8_0_8x8", "q8_0_4x4", "q4_0_4x4", "q4_0_8x8l",
             "g256_8x8", "g256_4x4"]  # fmt: skip


def _codec(name: str):  # type: ignore[no-untyped-def]
    return codec(name)


@pytest.mark.parametrize("name", QUANTISED)
@given(data=st.data())
def test_decode_is_code_times_scale(name: str, data: st.DataObject) -> None:
    payload, rows, cols = data.draw(payloads(name))
    codec = _codec(name)
    words = codec.decode_words(payload, rows, cols)
    codes = words["codes"].astype(np.float32).reshape(-1)
    if words["codes"].dtype == np.uint8:  # Q4 nibbles: value = (code - 8)·d
        codes = codes - np.float32(8)
    scales = words["scales"].reshape(-1).view(np.float16).astype(np.float32)
    per_element = np.repeat(scales, 32)[: rows * cols]
    with np.errstate(all="ignore"):
        want = (codes * per_element).reshape(rows, cols)
    assert codec.decode(payload, rows, cols).tobytes() == want.tobytes()


@st.composite
def well_scaled(draw: st.DrawFn, name: str) -> np.ndarray:
    """Values that are 0 or of magnitude in [2^-10, 2^10]: no block reaches the 1e-10 floors."""
    rows, cols = draw(shapes(name))
    mag = hnp.arrays(np.float32, (rows, cols), elements=st.floats(2.0**-10, 2.0**10, width=32))
    sign = draw(hnp.arrays(np.int8, (rows, cols), elements=st.sampled_from([-1, 0, 1])))
    return (draw(mag) * sign).astype(np.float32)


@pytest.mark.parametrize("name", QUANTISED)
@given(data=st.data())
def test_encode_decode_encode_is_a_fixed_point(name: str, data: st.DataObject) -> None:
    x = data.draw(well_scaled(name))
    codec = _codec(name)
    payload = codec.encode(x, *x.shape)
    assert codec.encode(codec.decode(payload, *x.shape), *x.shape) == payload


@pytest.mark.parametrize("name", [n for n in QUANTISED if CODECS[n].tiling])
@given(data=st.data())
def test_tiled_payloads_round_trip_through_their_words(name: str, data: st.DataObject) -> None:
    """Random valid words, laid out by the base codec, tiled, read back untiled: the same words."""
    rows, cols = data.draw(shapes(name))
    base = _codec(CODECS[name].base)
    values = data.draw(hnp.arrays(np.float32, (rows, cols), elements=st.floats(-4, 4, width=32)))
    tiled = _codec(name)
    payload = tiled.encode(values, rows, cols)
    legacy = base.encode(values, rows, cols)
    assert len(payload) == len(legacy)  # tiling never changes the size (spec/vqf.md §size-function)
    for key, want in base.decode_words(legacy, rows, cols).items():
        assert np.array_equal(tiled.decode_words(payload, rows, cols)[key], want)
    got = tiled.decode(payload, rows, cols).tobytes()
    assert got == base.decode(legacy, rows, cols).tobytes()


@given(st.lists(any_f32_bits(), max_size=64))
def test_f32_round_trips_every_bit_pattern(bits: list[int]) -> None:
    x = np.array(bits, dtype=np.uint32).view(np.float32).reshape(1, -1)
    payload = f32.encode(x, *x.shape)
    assert f32.decode(payload, *x.shape).view(np.uint32).tobytes() == x.view(np.uint32).tobytes()


@given(st.lists(st.integers(0, 0xFFFF), max_size=64))
def test_f16_decode_then_rne_encode_is_the_identity_except_nan_payloads(words: list[int]) -> None:
    h = np.array(words, dtype=np.uint16)
    payload = h.astype("<u2").tobytes()
    again = np.frombuffer(f16.encode(f16.decode(payload, 1, h.size), 1, h.size), dtype="<u2")
    nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x3FF) != 0)
    assert np.array_equal(again[~nan], h[~nan])
    assert np.all(again[nan] == (h[nan] & 0x8000) | 0x7E00)


def test_decoders_accept_any_contiguous_buffer_without_changing_the_result() -> None:
    x = np.random.default_rng(2).standard_normal((8, 64)).astype(np.float32)
    for name in ["f32", "f16", *QUANTISED]:
        c = codec(name)
        payload = c.encode(x, 8, 64)
        framed = bytearray(b"\x01" * 3 + payload + b"\x02" * 5)
        view = memoryview(framed)[3 : 3 + len(payload)]
        assert c.decode(view, 8, 64).tobytes() == c.decode(payload, 8, 64).tobytes()
        assert c.validate(view, 8, 64) == c.validate(payload, 8, 64)
