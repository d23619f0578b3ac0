"""The corpus's expected codec values agree with outside implementations (conformance/crosscheck.py:
gguf-py, NumPy, ml_dtypes), every check can tell a wrong value, and the generator refuses a corpus
that disagrees (conformance/README.md, "Where the expected values come from")."""

from __future__ import annotations

import json

import numpy as np
import pytest

from weightfile.conformance import crosscheck, generate
from weightfile.conformance.generate import CORPUS_DIR

README = CORPUS_DIR.parent / "README.md"


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    return {
        p.relative_to(CORPUS_DIR).as_posix(): p.read_bytes()
        for p in CORPUS_DIR.rglob("*")
        if p.is_file()
    }


def codec_folders(files: dict[str, bytes]) -> dict[str, dict]:
    """Codec case folder → its case.json, every codec case of the committed corpus."""
    out = {}
    for path, blob in files.items():
        if path.endswith("/case.json") and json.loads(blob)["kind"] == "codec":
            out[path.removesuffix("case.json")] = json.loads(blob)
    return out


def test_the_committed_corpus_agrees_with_every_outside_oracle(files) -> None:
    assert crosscheck.check_all(files) == []


def test_every_codec_case_has_a_cross_check(files) -> None:
    folders = codec_folders(files)
    assert len(folders) >= 57
    assert all(crosscheck.check_for(case) is not None for case in folders.values())


def one_case_per_check(files) -> dict[str, str]:
    """A case folder for each check function, the first in path order."""
    chosen: dict[str, str] = {}
    for folder, case in sorted(codec_folders(files).items()):
        chosen.setdefault(crosscheck.check_for(case).__name__, folder)
    return chosen


def flip_first_value(want: bytes) -> bytes:
    """want.json with the lowest bit of the first decoded value's first byte flipped."""
    doc = json.loads(want)
    raw = bytearray(bytes.fromhex(doc["values"]["hex"]))
    raw[0] ^= 1
    doc["values"]["hex"] = raw.hex()
    return json.dumps(doc).encode()


@pytest.mark.parametrize(
    "check", ["vqf_ggml", "vqf_f16", "exact_bytes", "ninfer_bf16", "fp8_row", "nvfp4", "grouped"]
)
def test_each_check_tells_a_wrong_decoded_value(files, check: str) -> None:
    folder = one_case_per_check(files)[check]
    wrong = dict(files)
    wrong[folder + "want.json"] = flip_first_value(files[folder + "want.json"])
    problems = crosscheck.check_codecs(wrong)
    assert problems and all(
        p.startswith(json.loads(files[folder + "case.json"])["id"]) for p in problems
    )


def test_a_q8_payload_that_ggml_would_not_write_is_told(files) -> None:
    folder = "vqf/v1/codec/q8_0/special/"
    values = np.frombuffer(files[folder + "values.bin"], "<f4").copy()
    values[0] = values[0] * 2 + 1  # the encoder's input no longer matches the stored payload
    wrong = dict(files)
    wrong[folder + "values.bin"] = values.tobytes()
    assert any("beyond §vs-ggml" in p for p in crosscheck.check_codecs(wrong))


def test_the_documented_differences_are_exactly_those_of_the_spec_table() -> None:
    zero = np.zeros(32, np.float32)
    ggml_q4 = np.frombuffer(b"\x00\x80" + b"\x88" * 16, np.uint8)  # d = -0.0, nibbles 8
    ours_q4 = np.frombuffer(b"\x00\x3c" + b"\x88" * 16, np.uint8)  # Kestrel: d := 1.0
    assert crosscheck.documented_difference("q4_0", zero, ours_q4, ggml_q4)
    one = zero.copy()
    one[0] = 1.0
    assert not crosscheck.documented_difference("q4_0", one, ours_q4, ggml_q4)
    # Q8: x·127/amax = 0.5 − 2⁻²⁵ at lane 1 — Kestrel's trunc(x·r + 0.5) says 1, ggml's roundf 0
    x = zero.copy()
    x[0] = 127.0
    x[1] = np.float32(0.5 - 2.0**-25)
    scale = b"\x00\x3c"
    ggml = np.frombuffer(scale + bytes([127, 0] + [0] * 30), np.uint8)
    ours = np.frombuffer(scale + bytes([127, 1] + [0] * 30), np.uint8)
    assert crosscheck.documented_difference("q8_0", x, ours, ggml)
    x[1] = 0.25  # not at the tie: a different code is a real disagreement
    assert not crosscheck.documented_difference("q8_0", x, ours, ggml)
    other_scale = np.frombuffer(b"\x01\x3c" + bytes(ours[2:]), np.uint8)
    assert not crosscheck.documented_difference("q8_0", x, other_scale, ggml)


def test_the_generator_refuses_a_corpus_an_oracle_disagrees_with(monkeypatch, tmp_path) -> None:
    real = crosscheck.check_all
    seen: list[int] = []

    def disagree(files):
        seen.append(len(real(files)))
        return ["vqf/v1/codec/f16/special: invented disagreement"]

    sources = generate.sources
    monkeypatch.setattr(crosscheck, "check_all", disagree)
    # the format-level sources only (containers, codecs): the model builders take minutes
    monkeypatch.setattr(generate, "sources", lambda: sources()[:6])
    with pytest.raises(RuntimeError, match="outside oracle: vqf/v1/codec/f16/special"):
        generate.write_corpus(tmp_path / "corpus")
    assert seen == [0] and not (tmp_path / "corpus").exists()


def test_the_readme_table_is_the_oracles_table() -> None:
    text = README.read_text()
    for topic, oracle in crosscheck.ORACLES.items():
        assert f"| {topic} | {oracle} |" in text, topic
