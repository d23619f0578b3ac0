"""Reading protected VQF files: key derivation, the tag, the two writer kinds, the signature.

spec/vqf.md §key-derivation, §sm4-hmac, §sm2-signature and §decisions items 7–9. The bytes come from
`weightfile.ref.crypto` (OpenSSL through `cryptography`, SM2 by the textbook); this module says
which bytes go where.

Fail closed, plaintext only from authenticated bytes. Every pass over the data region copies each
1 MiB chunk out of the file's map first, feeds that private copy to the HMAC and derives every
plaintext byte from the same copy. Reading a model (`decrypt_region`) keeps the copies in an
anonymous private mapping, compares the tag, and only then decrypts the mapping in place: a
wrong tag leaves nothing but ciphertext behind, and a file rewritten on disk after (or during)
the check cannot reach the plaintext, because the file is never read again. Streaming passes
(`verify`, the writers) use the plaintext of a chunk only for hashes and pad checks whose
verdicts are reported after the tag is compared, or write it to a private temporary file that is
published only when the tag matched.

Two writer kinds (spec/vqf.md §decisions item 7). A conforming writer encrypts [data_offset,
file_len) as one CTR stream. The engine's writer restarts the partial-block logic at every tensor
and every pad: each such segment starts from the counter the previous one ended on, and a segment
whose length is not a multiple of 16 does not advance the counter for its short last block. The two
agree exactly when every segment length is a multiple of 16. Otherwise the zero pads tell them
apart: under the wrong keystream a pad decrypts to keystream differences, not to zeros, so the
reader decrypts the pads (a few bytes per tensor) both ways and uses the kind under which they are
zero.
"""

from __future__ import annotations

import hmac as _hmac
import itertools
import mmap
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from weightfile.ref.crypto import sm2
from weightfile.ref.crypto.sm import (
    BLOCK,
    counter_add,
    hmac_sm3,
    sm3,
    sm3_hasher,
    sm4_ctr,
    sm4_ctr_at,
)
from weightfile.spec.errors import ChecksumError, UnsupportedError
from weightfile.spec.vqf.constants import ALIGN, DIRECTORY_OFFSET, FNV_OFFSET_BASIS, HEADER_BYTES
from weightfile.spec.vqf.header import VQFHeader, field_offset, sig_field_offset
from weightfile.spec.vqf.placement import directory_end, round_up

from .fnv1a64 import fnv1a64

if TYPE_CHECKING:
    from .records import Entry, Header

CHUNK = 1 << 20  # the engine's loader chunk; a multiple of 16, so chunking never moves the counter
FILE_LEN_AT = field_offset(VQFHeader, "file_len")
SIG_AT = field_offset(VQFHeader, "sig")
SIG_BYTES = HEADER_BYTES - SIG_AT
ENV_PASSPHRASE = "VLLM_VQF_KEY"
ENV_SIGN_PUB = "VLLM_VQF_SIGN_PUB"
ENV_VERIFY = "VLLM_VQF_VERIFY"

ONE_STREAM = "one stream"
PER_TENSOR = "per-tensor restart"
EITHER = "either (every tensor and pad a multiple of 16 bytes: both kinds are the same bytes)"


@dataclass(frozen=True, slots=True)
class Keys:
    """The SM4 key and the 16-byte HMAC key of spec/vqf.md §key-derivation."""

    sm4: bytes
    mac: bytes


def derive_keys(passphrase: bytes) -> Keys:
    """mat = SM3(passphrase); SM4 key mat[0:16], HMAC key mat[16:32] (spec/vqf.md
    §key-derivation)."""
    if not passphrase:
        raise UnsupportedError(
            "vqf.enc.no_key", "an empty passphrase means plaintext: no key to derive", path="flags"
        )
    mat = sm3(passphrase)
    return Keys(mat[:16], mat[16:])


def covered_header(header: bytes | memoryview) -> bytes:
    """H′ = H″: the 448 stored header bytes with file_len as 0 and the sig block as zeros."""
    h = bytearray(header[:HEADER_BYTES])
    h[FILE_LEN_AT : FILE_LEN_AT + 8] = bytes(8)
    h[SIG_AT:HEADER_BYTES] = bytes(SIG_BYTES)
    return bytes(h)


# -- the two keystream kinds (spec/vqf.md §sm4-hmac, §decisions item 7)
# ----------------------------------------------------
def segments(h: Header, entries: Sequence[Entry]) -> list[tuple[int, int]]:
    """The (start, stop) pieces the engine's writer encrypts separately: tensors and pads."""
    cuts = {h.data_offset, h.file_len}
    for e in entries:
        cuts.update(p for p in (e.offset, e.end) if h.data_offset < p < h.file_len)
    ordered = sorted(cuts)
    return list(itertools.pairwise(ordered))


def kinds_differ(h: Header, entries: Sequence[Entry]) -> bool:
    """The engine writer's bytes differ from one stream iff a segment is not whole blocks."""
    return any((stop - start) % BLOCK for start, stop in segments(h, entries)[:-1])


def segment_counters(iv: bytes, segs: Sequence[tuple[int, int]]) -> list[bytes]:
    """Per-tensor kind: each segment starts where the previous one's whole blocks ended."""
    counters, blocks = [], 0
    for start, stop in segs:
        counters.append(counter_add(iv, blocks))
        blocks += (stop - start) // BLOCK  # a short last block leaves the counter where it is
    return counters


class Keystream:
    """XORs the data region, fed in order, with one kind's keystream."""

    def __init__(self, keys: Keys, h: Header, entries: Sequence[Entry], kind: str) -> None:
        if kind == PER_TENSOR:
            self.segs = segments(h, entries)
            self.counters = segment_counters(h.enc_iv, self.segs)
        else:
            self.segs = [(h.data_offset, h.file_len)]
            self.counters = [h.enc_iv]
        self.key = keys.sm4
        self.index = -1
        self.ctx: object = None
        self.pos = h.data_offset
        self.stop = h.data_offset  # end of the current segment

    def apply(self, data: bytes | memoryview) -> bytes:
        out = []
        view = memoryview(data)
        while view.nbytes:
            if self.pos == self.stop:
                self.index += 1
                _start, self.stop = self.segs[self.index]
                self.ctx = sm4_ctr(self.key, self.counters[self.index])
            take = min(view.nbytes, self.stop - self.pos)
            out.append(self.ctx.update(view[:take]))  # type: ignore[attr-defined]
            view, self.pos = view[take:], self.pos + take
        return b"".join(out)


def keystream_at(
    keys: Keys, h: Header, entries: Sequence[Entry], kind: str, start: int, data: bytes
) -> bytes:
    """XOR a short range (a pad) with `kind`'s keystream, without running the stream to it."""
    if kind == PER_TENSOR:
        segs = segments(h, entries)
        counters = segment_counters(h.enc_iv, segs)
        out = b""
        for (s, e), c in zip(segs, counters, strict=True):
            lo, hi = max(s, start), min(e, start + len(data))
            if lo < hi:
                out += sm4_ctr_at(keys.sm4, c, lo - s, data[lo - start : hi - start])
        return out
    return sm4_ctr_at(keys.sm4, h.enc_iv, start - h.data_offset, data)


def pad_ranges(h: Header, entries: Sequence[Entry]) -> list[tuple[int, int]]:
    """Each tensor's zero pad up to the next 64-byte boundary (spec/vqf.md §placement)."""
    starts = [e.offset for e in entries[1:]] + [h.file_len]
    ranges = []
    for e, next_start in zip(entries, starts, strict=False):
        end = min(round_up(e.end, ALIGN), next_start, h.file_len)
        if h.data_offset <= e.end < end:
            ranges.append((e.end, end))
    return ranges


def candidate_kinds(h: Header, entries: Sequence[Entry]) -> list[str]:
    return [ONE_STREAM, PER_TENSOR] if kinds_differ(h, entries) else [ONE_STREAM]


def detect_kind(
    keys: Keys, h: Header, entries: Sequence[Entry], pads: Sequence[tuple[int, bytes]]
) -> str | None:
    """Which writer made the file, told by the kind under which every pad decrypts to zeros."""
    kinds = candidate_kinds(h, entries)
    for kind in kinds:
        if not any(any(keystream_at(keys, h, entries, kind, s, c)) for s, c in pads):
            return kind if len(kinds) > 1 else EITHER
    return None  # pads not zero either way: the stream is read as one (the loader's way)


def stream_kind(detected: str | None) -> str:
    """The keystream to decrypt with: the detected kind; one stream when undecided."""
    return PER_TENSOR if detected == PER_TENSOR else ONE_STREAM


# -- one pass over the data region ----------------------------------------------------------------
@dataclass
class RegionPass:
    """What one pass over [data_offset, file_len) computed."""

    tags: list[bytes] = field(default_factory=list)  # HMAC-SM3 per requested H′
    # D per candidate kind (spec/vqf.md §sm2-signature)
    digests: dict[str, bytes] = field(default_factory=dict)
    fnv: int | None = None  # FNV-1a-64 of directory ‖ data as stored (plaintext files)
    pads: list[tuple[int, bytes]] = field(default_factory=list)  # (offset, stored pad bytes)


def pass_region(
    view: memoryview,
    h: Header,
    entries: Sequence[Entry],
    *,
    keys: Keys | None = None,
    mac_headers: Sequence[bytes] = (),
    digest_header: bytes | None = None,
    fnv: bool = False,
    sink: Callable[[int, bytes], None] | None = None,
    hasher: Callable[[bytes, int], int] = fnv1a64,
    progress: Callable[[int], None] | None = None,
    release: Callable[[int, int], None] | None = None,
    chunk: int = CHUNK,
) -> RegionPass:
    """Stream the data region in `chunk` steps through every requested hash, once.

    Each chunk is copied out of the map, and that copy alone is MACed, decrypted, hashed and
    handed to `sink(offset, stored_bytes)`; `release(start, stop)` then lets the caller drop the
    mapped pages, so memory stays bounded by the chunk however large the file. `mac_headers` are
    H′ values to tag the ciphertext under (ENC files; two when a writer re-tags).
    `digest_header` (H″) asks for D: over the stored bytes of a plaintext file, over each
    candidate kind's plaintext of an ENC file.
    """
    directory = bytes(view[DIRECTORY_OFFSET : directory_end(h.n_tensors)])
    macs = _start_tags(keys, mac_headers, directory)
    streams, sm3s = _start_digests(keys, h, entries, digest_header, directory)
    f = hasher(directory, FNV_OFFSET_BASIS) if fnv else None
    pads = _PadCopies(pad_ranges(h, entries) if keys is not None else [])
    for pos in range(h.data_offset, h.file_len, chunk):
        stored = bytes(view[pos : min(pos + chunk, h.file_len)])  # the private copy
        end = pos + len(stored)
        for m in macs:
            m.update(stored)
        for kind, ks in streams.items():
            sm3s[kind].update(stored if ks is None else ks.apply(stored))
        if f is not None:
            f = hasher(stored, f)
        pads.take(pos, stored)
        if sink is not None:
            sink(pos, stored)
        if progress is not None:
            progress(len(stored))
        if release is not None:  # the copy is all the pass needs: drop the mapped pages
            release(pos, end)
    result = RegionPass()
    result.tags = [m.finalize() for m in macs]
    result.digests = {kind: s.finalize() for kind, s in sm3s.items()}
    result.fnv = f
    result.pads = [(s, bytes(b)) for s, b in pads.copies.items()]
    return result


def _start_tags(keys: Keys | None, mac_headers: Sequence[bytes], directory: bytes) -> list:
    """One HMAC-SM3 per requested H′, fed H′ ‖ directory bytes; the ciphertext follows
    (spec/vqf.md §sm4-hmac, the tag)."""
    macs = []
    for prefix in mac_headers:
        m = hmac_sm3(keys.mac)  # type: ignore[union-attr]
        m.update(prefix)
        m.update(directory)
        macs.append(m)
    return macs


def _start_digests(
    keys: Keys | None,
    h: Header,
    entries: Sequence[Entry],
    digest_header: bytes | None,
    directory: bytes,
) -> tuple[dict[str, Keystream | None], dict]:
    """D's SM3 fed H″ ‖ directory bytes, with the keystream that turns each chunk into the
    plaintext it covers (spec/vqf.md §sm2-signature): none for a plaintext file, one per candidate
    writer kind for an ENC file (spec/vqf.md §decisions item 7). Nothing when D is not asked for."""
    streams: dict[str, Keystream | None] = {}
    if digest_header is not None:
        if keys is None:
            streams[ONE_STREAM] = None
        else:
            streams = {k: Keystream(keys, h, entries, k) for k in candidate_kinds(h, entries)}
    sm3s = {}
    for kind in streams:
        sm3s[kind] = sm3_hasher()
        sm3s[kind].update(digest_header + directory)  # type: ignore[operator]
    return streams, sm3s


class _PadCopies:
    """The stored bytes of each tensor's pad (spec/vqf.md §placement), gathered chunk by chunk for
    `detect_kind` (spec/vqf.md §decisions item 7); a pad may straddle two chunks."""

    def __init__(self, pads: list[tuple[int, int]]) -> None:
        self.pads = pads
        self.next = 0
        self.copies: dict[int, bytearray] = {}

    def take(self, pos: int, stored: bytes) -> None:
        end = pos + len(stored)
        while self.next < len(self.pads) and self.pads[self.next][0] < end:
            s, e = self.pads[self.next]
            self.copies.setdefault(s, bytearray()).extend(
                stored[max(s, pos) - pos : min(e, end) - pos]
            )
            if e > end:
                break
            self.next += 1


def tags_equal(a: bytes, b: bytes) -> bool:
    return _hmac.compare_digest(a, b)


def tag_error(h: Header, detail: str = "") -> ChecksumError:
    return ChecksumError(
        "vqf.enc.tag",
        detail or "HMAC-SM3 tag mismatch (wrong passphrase, or the file was changed)",
        offset=h.file_len,
        path="trailer",
    )


# -- reading a model: authenticate, then decrypt a private copy -----------------------------------
def decrypt_region(
    view: memoryview,
    h: Header,
    entries: Sequence[Entry],
    stored_tag: bytes,
    passphrase: bytes,
    release: Callable[[int, int], None] | None = None,
) -> tuple[mmap.mmap, str | None]:
    """The plaintext of [data_offset, file_len) in an anonymous private map, and the writer kind.

    Raises `vqf.enc.tag` (ChecksumError) before any byte is decrypted when the tag of the copy
    does not match; the copy is then released.
    """
    keys = derive_keys(passphrase)
    size = h.file_len - h.data_offset
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        base = h.data_offset

        def copy(pos: int, stored: bytes) -> None:
            buf[pos - base : pos - base + len(stored)] = stored

        done = pass_region(
            view,
            h,
            entries,
            keys=keys,
            mac_headers=[covered_header(view)],
            sink=copy,
            release=release,
        )
        if not tags_equal(done.tags[0], stored_tag):
            raise tag_error(h)
        detected = detect_kind(keys, h, entries, done.pads)
        ks = Keystream(keys, h, entries, stream_kind(detected))
        for pos in range(0, size, CHUNK):  # in place: the map holds only authenticated bytes
            piece = buf[pos : pos + CHUNK]
            buf[pos : pos + len(piece)] = ks.apply(piece)
    except BaseException:
        buf.close()
        raise
    return buf, detected


# -- the signature (spec/vqf.md §sm2-signature)
# -------------------------------------------------------------------------
SignatureProblem = tuple[str, str, int | None, str]


def check_signature(
    sig: dict[str, object], digest: bytes, trusted: bytes
) -> list[SignatureProblem]:
    """The loader's checks of a SIGNED file against a trusted key, each its own rule
    (spec/vqf.md §sm2-signature).

    (rule, detail, offset, path) for the digest, the pub ≠ trusted key check and the (r, s)
    verification over the recomputed D under the trusted key with the fixed ID; the file's own id
    field is not used, as in the loader (its strict check is `vqf.sig.id`).
    """
    problems: list[SignatureProblem] = []
    at = lambda name: sig_field_offset(VQFHeader, name)  # noqa: E731
    if not tags_equal(bytes(sig["digest"]), digest):  # type: ignore[arg-type]
        problems.append(
            (
                "vqf.sig.digest",
                f"stored digest != SM3 digest {digest.hex()}",
                at("digest"),
                "header.sig.digest",
            )
        )
    if bytes(sig["pub"]) != trusted:  # type: ignore[arg-type]
        problems.append(
            (
                "vqf.sig.pub",
                "the signer's pub is not the trusted public key",
                at("pub"),
                "header.sig.pub",
            )
        )
    if not sm2.verify(trusted, digest, bytes(sig["r"]), bytes(sig["s"])):  # type: ignore[arg-type]
        problems.append(
            (
                "vqf.sig.signature",
                "(r, s) is not an SM2 signature of the digest under the trusted key",
                at("r"),
                "header.sig.r",
            )
        )
    return problems


def signer_id_problems(sig: dict[str, object]) -> list[SignatureProblem]:
    """Strict only: id = "vllm-shs-vqf" zero-padded to 32, id_len = 12, rsvd = 0
    (spec/vqf.md §signature-block)."""
    problems: list[SignatureProblem] = []
    if sig["id"] != sm2.SIGNER_ID.ljust(32, b"\0") or sig["id_len"] != len(sm2.SIGNER_ID):
        problems.append(
            (
                "vqf.sig.id",
                f"id {sig['id']!r} / id_len {sig['id_len']} is not {sm2.SIGNER_ID.decode()!r} / 12",
                sig_field_offset(VQFHeader, "id"),
                "header.sig.id",
            )
        )
    if sig["rsvd"]:
        problems.append(
            (
                "vqf.sig.id",
                f"sig rsvd {sig['rsvd']} is not 0",
                sig_field_offset(VQFHeader, "rsvd"),
                "header.sig.rsvd",
            )
        )
    return problems


def parse_public_key(text: str) -> bytes:
    """128 hex characters x ‖ y (the VLLM_VQF_SIGN_PUB form), optionally 04-prefixed."""
    text = text.strip()
    if len(text) == 130 and text[:2] == "04":
        text = text[2:]
    try:
        pub = bytes.fromhex(text)
    except ValueError:
        pub = b""
    if len(pub) != 64 or not sm2.on_curve(pub):
        raise ValueError("a trusted SM2 public key is 128 hex characters, a point of sm2p256v1")
    return pub


def engine_policy(flags_signed: bool, flags_enc: bool, env: dict[str, str] | None = None) -> str:
    """What the engine's loader would do about the signature, by flags and environment
    (spec/vqf.md §sm2-signature)."""
    env = dict(os.environ) if env is None else env
    if not flags_signed:
        return "no signature to verify"
    if not (flags_enc or env.get(ENV_VERIFY) == "1"):
        return "signed plaintext: the loader does not verify it (VLLM_VQF_VERIFY is not 1)"
    key = "VLLM_VQF_SIGN_PUB" if env.get(ENV_SIGN_PUB) else "the build-time VLLM_SM2_PUB_HEX"
    return f"the loader verifies the signature against {key} (and refuses the file without one)"


def describe_protection(
    view: memoryview,
    h: Header,
    entries: Sequence[Entry],
    stored_tag: bytes,
    passphrase: bytes | None,
    release: Callable[[int, int], None] | None = None,
) -> dict[str, object]:
    """What `inspect` says about an ENC/SIGNED file: tag, writer kind, the loader's policy.

    Streams the region once (bounded memory) when a passphrase is given; the writer kind is
    told only after the tag matched, since it is read from decrypted pads.
    """
    out: dict[str, object] = {
        "encrypted": h.encrypted,
        "signed": h.signed,
        "loader_policy": engine_policy(h.signed, h.encrypted),
    }
    if h.signed:
        out["signer_pub"] = bytes(h.sig["pub"]).hex()  # type: ignore[arg-type]
    if not h.encrypted:
        return out
    key_set = bool(os.environ.get(ENV_PASSPHRASE))
    out["loader_decrypt"] = (
        "the loader decrypts with VLLM_VQF_KEY (set here)"
        if key_set
        else "the loader refuses the file: VLLM_VQF_KEY is not set here"
    )
    out["writer_kinds_differ"] = kinds_differ(h, entries)
    if passphrase is None:
        out["tag"] = "not checked (no passphrase)"
        out["writer_kind"] = "unknown (no passphrase)"
        return out
    keys = derive_keys(passphrase)
    done = pass_region(
        view, h, entries, keys=keys, mac_headers=[covered_header(view)], release=release
    )
    if not tags_equal(done.tags[0], stored_tag):
        out["tag"] = "MISMATCH (wrong passphrase, or the file was changed)"
        out["writer_kind"] = "unknown (tag mismatch)"
        return out
    out["tag"] = "verified"
    out["writer_kind"] = detect_kind(keys, h, entries, done.pads) or "unknown (pads not zero)"
    return out
