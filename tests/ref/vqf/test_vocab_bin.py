"""vocab.bin, the board's tokenizer file (spec/vqf.md §vocab-bin): layout, typed refusals, the
byte markers, the writer, and the engine's greedy longest-match encoder.

Golden values: the spec's worked bytes; the byte-level alphabet of the `tokenizers` library
(ByteLevel pre-tokenizer), independent of our mapping; hand-derived encodings of a small table.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.ref.vqf import vocab_bin as vb
from weightfile.spec.errors import DestinationExistsError, InvalidError, MalformedError

TWO = bytes.fromhex("0200000000000000 0100 2101000000 0300 C4A061".replace(" ", ""))


def test_the_worked_example_round_trips():
    """spec/vqf.md §vocab-bin-layout: tokens 0 = '!' and 1 = 'Ġa' are these 20 bytes."""
    assert len(TWO) == 20
    assert vb.to_bytes([b"!", "Ġa".encode()]) == TWO
    assert vb.parse(TWO).tokens == (b"!", b"\xc4\xa0a")


def record(tid: int, text: bytes) -> bytes:
    return struct.pack("<IH", tid, len(text)) + text


@pytest.mark.parametrize(
    ("data", "rule", "offset"),
    [
        (b"\x01\x00", "vqf.vocab.truncated", 0),
        (struct.pack("<I", 0), "vqf.vocab.count", 0),
        (struct.pack("<I", 151_937) + record(0, b"a") * 151_937, "vqf.vocab.count", 0),
        (struct.pack("<I", 1000) + record(0, b"a"), "vqf.vocab.count", 0),  # 6 bytes a record
        (struct.pack("<I", 2) + record(0, b"a") + b"\x01\x00\x00\x00\x05\x00ab" + b"\0" * 0,
         "vqf.vocab.truncated", 15),
        (struct.pack("<I", 2) + record(0, b"a") + record(2, b"b"), "vqf.vocab.id_range", 11),
        (struct.pack("<I", 2) + record(1, b"a") + record(1, b"b"), "vqf.vocab.id_duplicate", 11),
        (TWO + b"\0", "vqf.vocab.trailing", 20),
        (struct.pack("<I", 1) + record(0, b"a b"), "vqf.vocab.raw_byte", 11),
        (struct.pack("<I", 1) + record(0, b"\n"), "vqf.vocab.raw_byte", 10),
    ],
)  # fmt: skip
def test_each_fault_is_refused_with_its_rule_and_offset(data, rule, offset):
    with pytest.raises((InvalidError, MalformedError)) as exc:
        vb.parse(data)
    assert (exc.value.rule, exc.value.offset) == (rule, offset)


def test_a_huge_count_is_refused_before_anything_is_allocated():
    """A 4-byte file claiming 151,936 records: refused by its length, no table built."""
    with pytest.raises(InvalidError) as exc:
        vb.parse(struct.pack("<I", 151_936))
    assert exc.value.rule == "vqf.vocab.count"


def test_the_reader_refuses_a_fifo_and_the_writer_an_existing_file(tmp_path):
    import os

    fifo = tmp_path / "vocab.bin"
    os.mkfifo(fifo)
    with pytest.raises(Exception) as exc:
        vb.read_vocab_bin(fifo)
    assert getattr(exc.value, "rule", "") == "format.file.not_regular"
    out = tmp_path / "v.bin"
    vb.write_vocab_bin(out, [b"!", "Ġa".encode()])
    assert out.read_bytes() == TWO and vb.read_vocab_bin(out).tokens[1] == b"\xc4\xa0a"
    with pytest.raises(DestinationExistsError):
        vb.write_vocab_bin(out, [b"x"])
    vb.write_vocab_bin(out, [b"x"], overwrite=True)
    assert vb.read_vocab_bin(out).tokens == (b"x",)
    with pytest.raises(InvalidError) as exc:
        vb.write_vocab_bin(tmp_path / "w.bin", [b"a b"])
    assert exc.value.rule == "vqf.vocab.raw_byte"


def byte_level(text: str) -> str:
    """The `tokenizers` library's byte-level spelling of text's UTF-8 bytes."""
    from tokenizers.pre_tokenizers import ByteLevel

    pieces = ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(text)
    return "".join(p for p, _ in pieces)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=12))
def test_markers_kept_every_other_byte_restored(text):
    """spec/vqf.md §vocab-bin-text against the library's alphabet: the stored bytes are the
    text's UTF-8 with each byte 0x00–0x20 replaced by its marker character's UTF-8."""
    want = b"".join(
        chr(0x100 + b).encode() if b <= 0x20 else bytes([b]) for b in text.encode("utf-8")
    )
    assert vb.token_bytes(byte_level(text)) == want


def test_the_worked_markers():
    assert vb.token_bytes("Ġhello") == bytes.fromhex("C4A068656C6C6F")
    assert vb.token_bytes(byte_level("答")) == "答".encode() == bytes.fromhex("E7AD94")
    assert vb.token_bytes(byte_level("\xad")) == b"\xc2\xad"  # U+0143 -> 0xAD, twice


def test_a_tokenizer_json_becomes_the_table():
    doc = {
        "model": {"vocab": {"!": 0, "Ġa": 1, "çŃĶ": 2}},
        "added_tokens": [{"id": 3, "content": "<|im_end|>"}],
    }
    assert vb.vocab_from_tokenizer_json(doc) == [b"!", b"\xc4\xa0a", "答".encode(), b"<|im_end|>"]
    doc["added_tokens"][0]["id"] = 5
    with pytest.raises(InvalidError) as exc:
        vb.vocab_from_tokenizer_json(doc)
    assert exc.value.rule == "vqf.vocab.id_range"


TABLE = ["<unk>", "a", "b", "ab", "Ġb", "Ċ", "ĊĊ", ".<", ".", "<|im_end|>", "Ġ", "Ġab", "ab"]
IDS = {t: i for i, t in reversed(list(enumerate(TABLE)))}  # the lowest id of each text


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # longest match; a space before a token tries the Ġ form first; newline runs as
        # markers; a match stops before a control string; the control string whole
        ("ab b\n\n.<|im_end|>", ["ab", "Ġb", "ĊĊ", ".", "<|im_end|>"]),
        (" a", ["a"]),  # leading spaces dropped, no Ġ before the first token
        ("a ab", ["a", "Ġab"]),
        ("a  z", ["a", "<unk>"]),  # no token for z: id 0; the spaces before it are lost
        ("\n", ["Ċ"]),
        ("\n\n\n", ["ĊĊ", "Ċ"]),
        ("ab.<b", ["ab", ".<", "b"]),  # "<b" starts no control string: ".<" is taken
        ("ab", ["ab"]),  # duplicate texts: the lower id (3, not 12)
    ],
)  # fmt: skip
def test_the_engines_encoder_by_hand(text, want):
    table = vb.Vocab(tuple(vb.token_bytes(t) for t in TABLE))
    assert vb.encode_board(table, text) == [IDS[t] for t in want]
