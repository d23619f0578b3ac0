"""The board engine's tokenizer file, `vocab.bin`: reader, validator, writer, the byte-marker
convention and the engine's greedy longest-match encoder (spec/vqf.md §vocab-bin).

`read_vocab_bin` parses a file's bytes strictly: the first fault raises its typed error with
the rule id (`vqf.vocab.*`), the byte offset and the record; nothing is allocated from an
untrusted count before the count is checked against the file's length. `write_vocab_bin`
publishes a vocabulary atomically (ref/staging.py). `token_bytes` maps a byte-level BPE token
string to the bytes the file stores; `vocab_from_tokenizer_json` builds the whole table as the
engine's build script would. `encode_board` is the engine's encoder (not BPE).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weightfile.ref.fileio import open_regular, pread_exact
from weightfile.ref.staging import write_output
from weightfile.spec.errors import InvalidError, MalformedError

MAX_TOKENS = 151_936  # the engine's table size (spec/vqf.md §vocab-bin-loader)
COUNT = struct.Struct("<I")
RECORD = struct.Struct("<IH")  # id, length
MAX_TEXT = 0xFFFF  # a u16 length
SPACE_MARK = "Ġ".encode()  # U+0120, byte 0x20
NEWLINE_MARK = "Ċ".encode()  # U+010A, byte 0x0A
CONTROL = (
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|vision_start|>", "<|vision_end|>",
    "<|image_pad|>", "<|video_pad|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<think>", "</think>",
)  # fmt: skip
SPACED_CAP = 511  # the engine's buffer for "Ġ" + text (spec/vqf.md §vocab-bin-encode step 4)
NEWLINE_RUN = 8


@dataclass(frozen=True)
class Vocab:
    """A vocab.bin table: tokens[id] is the stored text (bytes) of token id."""

    tokens: tuple[bytes, ...]

    def __len__(self) -> int:
        return len(self.tokens)


def to_bytes(tokens: Sequence[bytes]) -> bytes:
    """spec/vqf.md §vocab-bin-layout the file's bytes: the count, then (id, length, text) per
    token in id order."""
    check_tokens(tokens)
    parts = [COUNT.pack(len(tokens))]
    for i, text in enumerate(tokens):
        parts += [RECORD.pack(i, len(text)), text]
    return b"".join(parts)


def check_tokens(tokens: Sequence[bytes]) -> None:
    """The writer's own checks: a count the engine accepts, texts a u16 length holds and no raw
    byte 0x00–0x20 (spec/vqf.md §vocab-bin-loader, §vocab-bin-text)."""
    if not 0 < len(tokens) <= MAX_TOKENS:
        raise InvalidError("vqf.vocab.count", f"{len(tokens)} tokens: need 1 … {MAX_TOKENS}")
    for i, text in enumerate(tokens):
        if len(text) > MAX_TEXT:
            raise InvalidError(
                "vqf.vocab.truncated", f"token {i}: {len(text)} bytes, a record holds 65,535"
            )
        require_no_raw_byte(i, text, None)


def require_no_raw_byte(tid: int, text: bytes, offset: int | None) -> None:
    """spec/vqf.md §vocab-bin-text bytes 0x00–0x20 are stored as their marker characters."""
    bad = next((k for k, b in enumerate(text) if b <= 0x20), None)
    if bad is not None:
        raise InvalidError(
            "vqf.vocab.raw_byte",
            f"token {tid}: raw byte 0x{text[bad]:02X} at position {bad} (bytes 0x00–0x20 are "
            "stored as the marker characters U+0100–U+0120)",
            offset=None if offset is None else offset + bad,
            path=f"records[{tid}]",
        )


def parse(data: bytes) -> Vocab:
    """spec/vqf.md §vocab-bin-loader a vocab.bin's bytes, validated strictly."""
    if len(data) < COUNT.size:
        raise MalformedError("vqf.vocab.truncated", f"{len(data)} bytes: no count", offset=0)
    (count,) = COUNT.unpack_from(data, 0)
    if not 0 < count <= MAX_TOKENS or COUNT.size + count * RECORD.size > len(data):
        raise InvalidError(
            "vqf.vocab.count",
            f"count {count}: need 1 … {MAX_TOKENS} and at most {len(data) - 4} // 6 records",
            offset=0, path="count",
        )  # fmt: skip
    tokens: list[bytes | None] = [None] * count
    pos = COUNT.size
    for r in range(count):
        tid, text = _record(data, pos, r, count)
        if tokens[tid] is not None:
            raise InvalidError("vqf.vocab.id_duplicate", f"record {r}: id {tid} given twice",
                               offset=pos, path=f"records[{r}].id")  # fmt: skip
        require_no_raw_byte(tid, text, pos + RECORD.size)
        tokens[tid] = text
        pos += RECORD.size + len(text)
    if pos != len(data):
        raise MalformedError("vqf.vocab.trailing", f"{len(data) - pos} bytes after the last "
                             "record", offset=pos)  # fmt: skip
    return Vocab(tuple(t if t is not None else b"" for t in tokens))


def _record(data: bytes, pos: int, r: int, count: int) -> tuple[int, bytes]:
    """Record r at byte pos: (id, text), its bounds and id checked."""
    if pos + RECORD.size > len(data):
        raise MalformedError("vqf.vocab.truncated", f"record {r}: header past the end",
                             offset=pos, path=f"records[{r}]")  # fmt: skip
    tid, length = RECORD.unpack_from(data, pos)
    if pos + RECORD.size + length > len(data):
        raise MalformedError(
            "vqf.vocab.truncated", f"record {r}: {length} bytes of text run past the end",
            offset=pos + 4, path=f"records[{r}].length",
        )  # fmt: skip
    if tid >= count:
        raise InvalidError("vqf.vocab.id_range", f"record {r}: id {tid} not below count {count}",
                           offset=pos, path=f"records[{r}].id")  # fmt: skip
    return tid, bytes(data[pos + RECORD.size : pos + RECORD.size + length])


def read_vocab_bin(path: str | os.PathLike[str]) -> Vocab:
    """A vocab.bin file (a regular file only), validated (spec/vqf.md §vocab-bin-loader)."""
    fd, size = open_regular(path)
    try:
        return parse(pread_exact(fd, size, 0, path))
    finally:
        os.close(fd)


def write_vocab_bin(
    path: str | os.PathLike[str], tokens: Sequence[bytes], overwrite: bool = False
) -> None:
    """Publish `tokens` as a vocab.bin atomically (existing files need overwrite)."""
    write_output(path, to_bytes(tokens), overwrite)


def token_bytes(piece: str) -> bytes:
    """spec/vqf.md §vocab-bin-text a byte-level BPE token string to the stored bytes: markers
    U+0100–U+0120 kept (as UTF-8), every other byte character back to its byte."""
    out = bytearray()
    for ch in piece:
        cp = ord(ch)
        if cp == 0x0143:
            out.append(0xAD)
        elif cp == 0x0121:
            out.append(0x7F)
        elif 0x0122 <= cp <= 0x0142:
            out.append(cp - 0xA2)
        elif 0x0080 <= cp <= 0x00FF and cp != 0x00AD:
            out.append(cp)
        else:
            out += ch.encode("utf-8")
    return bytes(out)


def vocab_from_tokenizer_json(doc: Mapping[str, Any]) -> list[bytes]:
    """spec/vqf.md §vocab-bin-text the table of a Hugging Face tokenizer.json: model.vocab's
    pieces through `token_bytes`, added tokens as their literal text; every id 0 … max filled."""
    pieces: dict[int, bytes] = {}
    for piece, tid in doc["model"]["vocab"].items():
        pieces[int(tid)] = token_bytes(piece)
    for added in doc.get("added_tokens", ()):
        pieces[int(added["id"])] = str(added["content"]).encode("utf-8")
    n = max(pieces) + 1 if pieces else 0
    missing = [i for i in range(n) if i not in pieces]
    if missing:
        raise InvalidError("vqf.vocab.id_range", f"ids {missing[:5]} have no token",
                           path="tokenizer.json")  # fmt: skip
    return [pieces[i] for i in range(n)]


class BoardEncoder:
    """spec/vqf.md §vocab-bin-encode the engine's greedy longest-match encoder over a table."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self.by_length: dict[int, dict[bytes, int]] = {}  # length -> text -> lowest id
        for tid, text in enumerate(vocab.tokens):
            if text:
                self.by_length.setdefault(len(text), {}).setdefault(text, tid)
        self.lengths = sorted(self.by_length, reverse=True)
        self.control = {c: self.exact(c.encode()) for c in CONTROL}

    def exact(self, text: bytes) -> int:
        """The lowest id whose text is exactly `text`, or -1."""
        return self.by_length.get(len(text), {}).get(text, -1)

    def longest(self, text: bytes, limit: int) -> tuple[int, int]:
        """(id, length) of the longest token that is a prefix of text and at most `limit`
        bytes long, the lowest id among equals; (-1, 0) when none."""
        for n in self.lengths:
            if n <= min(limit, len(text)):
                tid = self.by_length[n].get(text[:n], -1)
                if tid >= 0:
                    return tid, n
        return -1, 0

    def encode(self, text: str) -> list[int]:
        """The ids the engine gives `text` (its UTF-8, up to the first NUL)."""
        data = text.encode("utf-8").split(b"\0", 1)[0]
        pos, ids = 0, []
        while pos < len(data):
            spaced = False
            while pos < len(data) and data[pos] == 0x20:
                pos, spaced = pos + 1, True
            if pos >= len(data):
                break
            step = self.step(data[pos:], spaced and bool(ids))
            ids.append(step[0])
            pos += step[1]
        return ids

    def step(self, rem: bytes, spaced: bool) -> tuple[int, int]:
        """(id, bytes consumed) at one position (spec/vqf.md §vocab-bin-encode steps 2-7)."""
        hits = [c for c in CONTROL if rem.startswith(c.encode())]
        best = max(hits, key=len) if hits else None  # the first of the longest, as the engine
        if best is not None and self.control[best] >= 0:
            return self.control[best], len(best.encode())
        lim = control_start(rem)
        if spaced:
            buf = (SPACE_MARK + rem)[:SPACED_CAP]
            tid, n = self.longest(buf, len(buf))
            if tid >= 0 and n > len(SPACE_MARK) and n - len(SPACE_MARK) <= lim:
                return tid, n - len(SPACE_MARK)
        tid, n = self.longest(rem, lim)
        if tid >= 0:
            return tid, n
        if rem[:1] == b"\n":
            run = min(len(rem) - len(rem.lstrip(b"\n")), NEWLINE_RUN, lim)
            tid, n = self.longest(NEWLINE_MARK * run, 2 * run)
            if run > 0 and tid >= 0 and n >= 2 and n % 2 == 0:
                return tid, n // 2
        tid, n = self.longest(rem[:1], 1)
        return (tid if tid >= 0 else 0), 1


def control_start(rem: bytes) -> int:
    """Offset of the first "<" after byte 0 that starts a control string; len(rem) if none."""
    k = rem.find(b"<", 1)
    while k > 0:
        if any(rem.startswith(c.encode(), k) for c in CONTROL):
            return k
        k = rem.find(b"<", k + 1)
    return len(rem)


def encode_board(vocab: Vocab, text: str) -> list[int]:
    """spec/vqf.md §vocab-bin-encode the engine's token ids for `text`."""
    return BoardEncoder(vocab).encode(text)
