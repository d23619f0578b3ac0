"""Codec cases checked against goldens that do not come from weightfile: numpy's float16 for the
VQF f16 encoder and decoder, a bit shift for bfloat16, and the spec's decode formulas applied
with numpy float32 arithmetic to the hand-packed Q8_0 / Q4_0 blocks (spec/vqf.md §f16, §q8-0, §q4-0,
§f16-rne; spec/ninfer3.md §direct-formats)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from weightfile.conformance.generate import CORPUS_DIR


def load(cid: str) -> tuple[dict, dict, dict[str, bytes]]:
    folder = CORPUS_DIR / cid
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    return case, want, files


def array(doc: dict) -> np.ndarray:
    shape = [int(n) for n in doc["shape"]]
    return np.frombuffer(
        bytes.fromhex(doc["hex"]), np.dtype(doc["dtype"]).newbyteorder("<")
    ).reshape(shape)


def test_f16_special_encodes_finite_values_as_numpy_float16_does():
    _, want, files = load("vqf/v1/codec/f16/special")
    x = np.frombuffer(files["values.bin"], "<f4")
    ours = np.frombuffer(files["payload.bin"], "<u2")
    finite = np.isfinite(x)
    assert finite.sum() > 40
    with np.errstate(over="ignore"):  # values past 65520 round to inf, as they should
        numpy_f16 = x[finite].astype(np.float16).view(np.uint16)
    assert np.array_equal(ours[finite], numpy_f16)
    nan = np.isnan(x)  # spec/vqf.md §f16-rne: NaN -> sign | 0x7E00
    assert np.array_equal(ours[nan], (x[nan].view(np.uint32) >> 16 & 0x8000) | 0x7E00)
    assert want["encoded_sha256"] == hashlib.sha256(files["payload.bin"]).hexdigest()
    decoded = array(want["values"]).reshape(-1)
    assert np.array_equal(
        decoded.view(np.uint32)[~nan],
        ours[~nan].view(np.float16).astype(np.float32).view(np.uint32),
    )


def test_bf16_special_decodes_as_the_high_half_of_float32():
    _, want, files = load("ninfer3/v1/codec/bf16.contiguous_le_v1/special")
    words = np.frombuffer(files["payload.bin"], "<u2").astype(np.uint32)
    assert np.array_equal(array(want["values"]).view(np.uint32).reshape(-1), words << 16)


@pytest.mark.parametrize("name", ["q8_0", "q4_0"])
def test_hand_packed_blocks_decode_by_the_spec_formula(name):
    _, want, files = load(f"vqf/v1/codec/{name}/words-extremes")
    raw = files["payload.bin"]
    size = 34 if name == "q8_0" else 18
    expected = []
    for at in range(0, len(raw), size):
        d = np.frombuffer(raw[at : at + 2], "<f2").astype(np.float32)[0]
        body = np.frombuffer(raw[at + 2 : at + size], np.uint8)
        if name == "q8_0":
            codes = body.view(np.int8).astype(np.float32)
        else:  # spec/vqf.md §q4-0: element j in the low nibble of byte j, j + 16 in the high nibble
            codes = np.concatenate([body & 0xF, body >> 4]).astype(np.float32) - np.float32(8)
        expected.append(codes * d)  # one float32 multiply per element
    got = array(want["values"]).reshape(-1)
    assert np.array_equal(got.view(np.uint32), np.concatenate(expected).view(np.uint32))
