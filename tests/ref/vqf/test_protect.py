"""Protected VQF files (spec/vqf.md §key-derivation, §sm4-hmac, §sm2-signature, §decisions items
7–9): read, verify, write, fail closed.

Encrypted files made by an independent path (the OpenSSL command line, both writer kinds) are
read; ours are decrypted by that path; every covered region, flipped, fails with the tag rule and
yields no plaintext; each signature rule is broken alone; random files round-trip.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies.vqf import tensor_sets

from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.crypto import sm2
from weightfile.ref.vqf import protect
from weightfile.ref.vqf.protect_write import (
    decrypt_vqf,
    encrypt_vqf,
    protect_vqf,
    read_private_key,
    sign_vqf,
    write_private_key,
)
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import TensorSource, write_vqf
from weightfile.spec.errors import (
    ChecksumError,
    DestinationExistsError,
    InvalidError,
    UnsupportedError,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl CLI")
PASS = b"correct horse"
PRIV = bytes.fromhex("3945208f7b2144b13f36e38ac6d39f95889393692860b51a42fb81ef4df7c5b8")
PROTECTION_RULES = {
    *("vqf.enc.tag", "vqf.enc.no_key", "vqf.sig.no_key", "vqf.sig.digest"),
    *("vqf.sig.pub", "vqf.sig.signature", "vqf.sig.id", "vqf.data.padding"),
}


def write_plain(path: Path, *, odd: bool = False) -> Path:
    """The tiny model; with `odd`, an 18-byte tensor in the middle breaks 16-byte alignment."""
    tensors = tiny_tensors(TINY_ARCH)
    if odd:
        tensors.insert(3, TensorSource("future_tensor", QType.Q4_0, 1, 32, bytes(range(18))))
    return write_vqf(path, arch=TINY_ARCH, tensors=tensors, flags=TINY_FLAGS, order="given")


def payloads(path: Path, passphrase: bytes | None = None) -> dict[str, bytes]:
    with open_vqf(path, passphrase=passphrase) as vqf:
        return {e.name: bytes(vqf.payload(e)) for e in vqf.entries}


def flip(path: Path, offset: int, mask: int = 0x01) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        b = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([b ^ mask]))


# -- an independent encryptor: the OpenSSL command line ------------------------------------------
def _openssl(args: list[str], data: bytes) -> bytes:
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True).stdout


def openssl_encrypt(plain: Path, out: Path, passphrase: bytes, iv: bytes, kind: str) -> None:
    """ENC file by `openssl enc -sm4-ctr` and `openssl dgst -sm3 -mac HMAC`, counters by hand.

    kind "stream" is one CTR run over the region; "engine" is the engine writer: one run per
    tensor and per pad, each starting at the counter the previous run's whole blocks reached.
    """
    mat = bytes.fromhex(_openssl(["dgst", "-sm3", "-r"], passphrase).split()[0].decode())
    key, mac_key = mat[:16], mat[16:]
    blob = bytearray(plain.read_bytes())
    with open_vqf(plain) as vqf:
        d, f = vqf.header.data_offset, vqf.header.file_len
        cuts = sorted({d, f, *(p for e in vqf.entries for p in (e.offset, e.end) if d < p < f)})
    blob[8:12] = (int.from_bytes(blob[8:12], "little") | VQFFlag.ENC).to_bytes(4, "little")
    blob[216:232] = iv
    pieces = [(d, f)] if kind == "stream" else list(itertools.pairwise(cuts))
    cipher, counter = b"", int.from_bytes(iv, "big")
    for start, stop in pieces:
        ctr = (counter % 2**128).to_bytes(16, "big").hex()
        cipher += _openssl(["enc", "-sm4-ctr", "-K", key.hex(), "-iv", ctr, "-nosalt"],
                           bytes(blob[start:stop]))  # fmt: skip
        counter += (stop - start) // 16
    covered = bytearray(blob[:448])
    covered[208:216] = bytes(8)
    covered[248:448] = bytes(200)
    n = int.from_bytes(blob[12:16], "little")
    mac_in = bytes(covered) + bytes(blob[448 : 448 + 64 * n]) + cipher
    tag = _openssl(["dgst", "-sm3", "-mac", "HMAC", "-macopt", f"hexkey:{mac_key.hex()}", "-r"],
                   mac_in).split()[0].decode()  # fmt: skip
    out.write_bytes(bytes(blob[:d]) + cipher + bytes.fromhex(tag))


@needs_openssl
@pytest.mark.parametrize("odd", [False, True])
@pytest.mark.parametrize("kind", ["stream", "engine"])
def test_files_encrypted_by_openssl_are_read_and_their_kind_told(tmp_path, odd, kind):
    plain = write_plain(tmp_path / "p.vqf", odd=odd)
    enc = tmp_path / "e.vqf"
    openssl_encrypt(plain, enc, PASS, bytes.fromhex("00" * 8 + "ff" * 7 + "f0"), kind)
    assert payloads(enc, PASS) == payloads(plain)
    with open_vqf(enc, passphrase=PASS) as vqf:
        want = protect.EITHER if not odd else protect.ONE_STREAM if kind == "stream" else (
            protect.PER_TENSOR)  # fmt: skip
        assert vqf.stream_kind == want
    assert {v.rule for v in validate(enc, passphrase=PASS)} & PROTECTION_RULES == set()
    out = tmp_path / "d.vqf"
    decrypt_vqf(enc, out, PASS)
    assert out.read_bytes() == plain.read_bytes()


@needs_openssl
@pytest.mark.parametrize("odd", [False, True])
def test_our_encryption_is_decrypted_by_openssl(tmp_path, odd):
    plain = write_plain(tmp_path / "p.vqf", odd=odd)
    enc = encrypt_vqf(plain, tmp_path / "e.vqf", PASS)
    with open_vqf(enc) as vqf:
        iv, d, f = vqf.header.enc_iv, vqf.header.data_offset, vqf.header.file_len
    mat = bytes.fromhex(_openssl(["dgst", "-sm3", "-r"], PASS).split()[0].decode())
    blob = enc.read_bytes()
    region = _openssl(["enc", "-d", "-sm4-ctr", "-K", mat[:16].hex(), "-iv", iv.hex(), "-nosalt"],
                      blob[d:f])  # fmt: skip
    assert region == plain.read_bytes()[d:f]
    again = tmp_path / "again.vqf"  # the same IV through the independent path: the same file
    openssl_encrypt(plain, again, PASS, iv, "stream")
    assert again.read_bytes() == blob


def test_round_trip_is_byte_identical_and_decodes_the_same(tmp_path):
    import weightfile

    plain = write_plain(tmp_path / "p.vqf")
    enc = encrypt_vqf(plain, tmp_path / "e.vqf", PASS)
    signed = sign_vqf(enc, tmp_path / "es.vqf", PRIV, passphrase=PASS)
    assert decrypt_vqf(enc, tmp_path / "d.vqf", PASS).read_bytes() == plain.read_bytes()
    with weightfile.open(plain) as p, weightfile.open(signed, passphrase=PASS) as s:
        for name in p.names():
            for engine in ("ref", "fast"):
                want, got = p.decode(name, engine=engine), s.decode(name, engine=engine)
                assert want.tobytes() == got.tobytes()  # bit for bit, NaN scales included
    assert validate(signed, passphrase=PASS, trusted_pub=sm2.public_key(PRIV)) == []


def test_an_encrypted_file_has_no_fnv_trailer(tmp_path):
    """The trailer of an ENC file is its tag: asking for its FNV is a typed error, with or
    without the passphrase."""
    enc = encrypt_vqf(write_plain(tmp_path / "p.vqf"), tmp_path / "e.vqf", PASS)
    for passphrase in (PASS, None):
        with open_vqf(enc, passphrase=passphrase) as vqf, pytest.raises(UnsupportedError) as e:
            vqf.stored_fnv()
        assert (e.value.rule, e.value.offset) == ("vqf.enc.fnv", vqf.header.file_len)


def test_encryption_uses_a_fresh_iv(tmp_path):
    plain = write_plain(tmp_path / "p.vqf")
    a, b = encrypt_vqf(plain, tmp_path / "a", PASS), encrypt_vqf(plain, tmp_path / "b", PASS)
    with open_vqf(a) as x, open_vqf(b) as y:
        assert x.header.enc_iv != y.header.enc_iv and any(x.header.enc_iv)


def test_protect_encrypts_then_signs_and_publishes_only_the_result(tmp_path, monkeypatch):
    plain = write_plain(tmp_path / "p.vqf")
    out = tmp_path / "out"
    out.mkdir()
    both = protect_vqf(plain, out / "es.vqf", passphrase=PASS, private_key=PRIV)
    with open_vqf(both) as vqf:
        assert vqf.header.encrypted and vqf.header.signed
    assert validate(both, passphrase=PASS, trusted_pub=sm2.public_key(PRIV)) == []
    assert decrypt_vqf(both, tmp_path / "d.vqf", PASS).read_bytes() == plain.read_bytes()
    enc = protect_vqf(plain, out / "e.vqf", passphrase=PASS)
    signed = protect_vqf(plain, out / "s.vqf", private_key=PRIV)
    with open_vqf(enc) as e, open_vqf(signed) as s:
        assert (e.header.encrypted, e.header.signed, s.header.encrypted, s.header.signed) == (
            True,
            False,
            False,
            True,
        )
    assert sorted(p.name for p in out.iterdir()) == ["e.vqf", "es.vqf", "s.vqf"]  # no staging
    with pytest.raises(DestinationExistsError):
        protect_vqf(plain, both, passphrase=PASS, private_key=PRIV)

    def broken_sign(*args, **kwargs):
        raise InvalidError("vqf.sig.key", "the signing step failed")

    monkeypatch.setattr("weightfile.ref.vqf.protect_write.sign_vqf", broken_sign)
    with pytest.raises(InvalidError):
        protect_vqf(plain, out / "x.vqf", passphrase=PASS, private_key=PRIV)
    assert sorted(p.name for p in out.iterdir()) == ["e.vqf", "es.vqf", "s.vqf"]  # nothing left


# -- fail closed -----------------------------------------------------------------------------------
def _covered_offsets(enc: Path) -> dict[str, int]:
    with open_vqf(enc) as vqf:
        h, entries = vqf.header, vqf.entries
        where = {"arch.eos_id": 60, "pad_arch": 196, "data_offset high byte": 207,
                 "enc_iv": 216, "enc_rsvd": 232, "directory name": 448 + 5,
                 "directory pad": 448 + 44, "tag": h.file_len + 31}  # fmt: skip
        for e in entries:
            where[f"tensor {e.name}"] = e.offset + e.bytes // 2
        pads = protect.pad_ranges(h, entries)
        if pads:  # the odd file has some; the tiny model's tensors are whole 64-byte runs
            where["a pad"] = pads[0][0]
            where["the last pad"] = pads[-1][1] - 1
    return where


@pytest.mark.parametrize("odd", [False, True])
def test_a_flipped_bit_in_any_covered_byte_fails_the_tag_and_returns_nothing(tmp_path, odd):
    enc = encrypt_vqf(write_plain(tmp_path / "p.vqf", odd=odd), tmp_path / "e.vqf", PASS)
    pristine = enc.read_bytes()
    for what, offset in _covered_offsets(enc).items():
        enc.write_bytes(pristine)
        mask = 0x80 if what == "data_offset high byte" else 0x01
        flip(enc, offset, mask)
        if what == "data_offset high byte":
            continue  # breaks the framing before the tag (vqf.header.layout): nothing is read
        with pytest.raises(ChecksumError) as info:
            open_vqf(enc, passphrase=PASS)
        assert info.value.rule == "vqf.enc.tag", what
        assert [v.rule for v in validate(enc, passphrase=PASS)].count("vqf.enc.tag") == 1, what
    enc.write_bytes(pristine)
    with pytest.raises(ChecksumError, match=r"vqf\.enc\.tag"):
        open_vqf(enc, passphrase=b"wrong passphrase")
    assert {v.rule for v in validate(enc, passphrase=b"wrong")} & PROTECTION_RULES == {
        "vqf.enc.tag"
    }


def test_bytes_outside_the_tag_are_caught_by_their_own_rules(tmp_path):
    enc = encrypt_vqf(write_plain(tmp_path / "p.vqf"), tmp_path / "e.vqf", PASS)
    flip(enc, 300)  # the sig block of an unsigned file: not in H′, must be zero
    # (spec/vqf.md §header-layout)
    flip(enc, 2000)  # the gap: never covered (spec/vqf.md §file-layout)
    assert {v.rule for v in validate(enc, passphrase=PASS)} == {"vqf.header.sig", "vqf.file.gap"}


def test_plaintext_comes_only_from_the_authenticated_copy(tmp_path):
    plain = write_plain(tmp_path / "p.vqf")
    enc = encrypt_vqf(plain, tmp_path / "e.vqf", PASS)
    want = payloads(plain)
    with open_vqf(enc, passphrase=PASS) as vqf:
        e = vqf.entry("q4_q")
        with open(enc, "r+b") as fh:  # the same inode, rewritten after the check
            fh.seek(e.offset)
            fh.write(bytes(e.bytes))
        assert bytes(vqf.payload(e)) == want["q4_q"]


def test_writers_refuse_what_would_break_the_file(tmp_path):
    plain = write_plain(tmp_path / "p.vqf")
    enc = encrypt_vqf(plain, tmp_path / "e.vqf", PASS)
    with pytest.raises(DestinationExistsError):
        encrypt_vqf(plain, enc, PASS)
    for call in (
        lambda: encrypt_vqf(enc, tmp_path / "x", PASS),
        lambda: decrypt_vqf(plain, tmp_path / "x", PASS),
        lambda: encrypt_vqf(sign_vqf(plain, tmp_path / "s", PRIV), tmp_path / "x", PASS),
    ):
        with pytest.raises(InvalidError) as info:
            call()
        assert info.value.rule == "vqf.writer.protect"
    with pytest.raises(ChecksumError, match=r"vqf\.enc\.tag"):
        decrypt_vqf(enc, tmp_path / "x", b"wrong")
    flip(plain, 5000)
    with pytest.raises(ChecksumError, match=r"vqf\.trailer\.fnv"):
        encrypt_vqf(plain, tmp_path / "x", PASS)
    assert not (tmp_path / "x").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.vqf", "p.vqf", "s"]


# -- signatures ----------------------------------------------------------------------------------
SIG = 248  # the sig block of the current layout (spec/vqf.md §signature-block)


@pytest.mark.parametrize("encrypted", [False, True])
def test_each_signature_rule_alone(tmp_path, encrypted):
    trusted = sm2.public_key(PRIV)
    src = write_plain(tmp_path / "p.vqf")
    if encrypted:
        src = encrypt_vqf(src, tmp_path / "e.vqf", PASS)
    signed = sign_vqf(src, tmp_path / "s.vqf", PRIV, passphrase=PASS if encrypted else None)
    key = PASS if encrypted else None

    def rules(**kw):
        kw.setdefault("trusted_pub", trusted)
        return {v.rule for v in validate(signed, passphrase=key, **kw)}

    assert rules() == set()
    assert rules(trusted_pub=None) == {"vqf.sig.no_key"}
    other = sm2.public_key(bytes(31) + b"\x07")
    assert rules(trusted_pub=other) == {"vqf.sig.pub", "vqf.sig.signature"}
    pristine = signed.read_bytes()
    for offset, want in ((SIG + 128, {"vqf.sig.digest"}), (SIG + 64, {"vqf.sig.signature"}),
                         (SIG + 96 + 31, {"vqf.sig.signature"}), (SIG + 5, {"vqf.sig.pub"}),
                         (SIG + 165, {"vqf.sig.id"}), (SIG + 196, {"vqf.sig.id"})):  # fmt: skip
        signed.write_bytes(pristine)
        flip(signed, offset)
        assert rules() == want, offset
    signed.write_bytes(pristine)
    with open_vqf(signed) as vqf:
        covered = vqf.entry("q4_lm").offset + 3
    flip(signed, covered)
    want = {"vqf.enc.tag"} if encrypted else {"vqf.sig.digest", "vqf.sig.signature"}
    assert rules() == want


def test_the_digest_covers_the_enc_header_and_iv(tmp_path):
    """spec/vqf.md §decisions item 8: the same model signed plain and encrypted has two different
    digests."""
    plain = write_plain(tmp_path / "p.vqf")
    a = sign_vqf(plain, tmp_path / "a", PRIV)
    b = sign_vqf(encrypt_vqf(plain, tmp_path / "e", PASS), tmp_path / "b", PRIV, passphrase=PASS)
    with open_vqf(a) as x, open_vqf(b) as y:
        assert x.header.sig["digest"] != y.header.sig["digest"]
    assert decrypt_vqf(b, tmp_path / "d", PASS).read_bytes() == plain.read_bytes()


def test_key_files(tmp_path):
    pub = write_private_key(tmp_path / "k")
    assert (tmp_path / "k").stat().st_mode & 0o777 == 0o600
    assert len((tmp_path / "k").read_text().strip()) == 64
    assert sm2.public_key(read_private_key(tmp_path / "k")) == pub
    with pytest.raises(DestinationExistsError):
        write_private_key(tmp_path / "k")
    for bad in ("xyz", "00" * 32):  # not hex; hex but d = 0 is no SM2 private key
        (tmp_path / "bad").write_text(bad)
        with pytest.raises(InvalidError) as e:
            read_private_key(tmp_path / "bad")
        assert (e.value.rule, e.value.path) == ("vqf.sig.key", str(tmp_path / "bad"))


# -- round trips of random files -----------------------------------------------------------------
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tensors=tensor_sets(), passphrase=st.binary(min_size=1, max_size=40),
       d=st.integers(1, sm2.N - 2), chunk=st.sampled_from([16, 64, protect.CHUNK]))  # fmt: skip
def test_random_files_round_trip(tmp_path_factory, tensors, passphrase, d, chunk, monkeypatch):
    tmp = tmp_path_factory.mktemp("rt")
    plain = write_vqf(tmp / "p.vqf", arch=TINY_ARCH, tensors=tensors, order="given")
    monkeypatch.setattr(protect, "CHUNK", chunk)  # chunking never moves the counter
    enc = encrypt_vqf(plain, tmp / "e.vqf", passphrase)
    priv = d.to_bytes(32, "big")
    signed = sign_vqf(enc, tmp / "s.vqf", priv, passphrase=passphrase)
    assert payloads(signed, passphrase) == payloads(plain)
    found = validate(signed, passphrase=passphrase, trusted_pub=sm2.public_key(priv))
    assert {v.rule for v in found} & PROTECTION_RULES == set()
    assert decrypt_vqf(enc, tmp / "d.vqf", passphrase).read_bytes() == plain.read_bytes()
