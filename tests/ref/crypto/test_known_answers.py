"""Known answers for the primitives of spec/vqf.md §protected, and SM2 against OpenSSL both ways.

The standards' vectors (GB/T 32907 SM4, GB/T 32905 SM3), the spec's computed examples
(spec/vqf.md §key-derivation key derivation, spec/vqf.md §sm4-hmac CTR carry and partial block,
HMAC-SM3), HMAC-SM3 against the `openssl dgst` command line, and SM2 signatures with the VQF ID made
by us and checked by `openssl pkeyutl` with `distid`, and the reverse.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from weightfile.ref.crypto import sm2
from weightfile.ref.crypto.sm import counter_add, hmac_sm3, sm3, sm4_ctr, sm4_ctr_at
from weightfile.ref.vqf.protect import derive_keys

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl CLI")


def test_sm4_gbt32907_vector():
    key = bytes.fromhex("0123456789abcdeffedcba9876543210")
    block = Cipher(algorithms.SM4(key), modes.ECB()).encryptor().update(key)
    assert block.hex() == "681edf34d206965e86b3e94f536e4246"


def test_sm3_gbt32905_vectors():
    assert sm3(b"abc").hex() == ("66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0")
    assert sm3(b"abcd" * 16).hex() == (
        "debe9ff92275b8a138604889c18e5a4d6fdb70e5387e5765293dcba39c0c5732"
    )


def test_key_derivation_example():
    keys = derive_keys(b"secret")  # spec/vqf.md §key-derivation
    assert keys.sm4.hex() == "20638af3353fa5bd39a93300cf525ec1"
    assert keys.mac.hex() == "e86e82f52b965e20671461cc8d357dba"


def test_ctr_example_carries_big_endian_and_ends_on_a_partial_block():
    keys = derive_keys(b"secret")
    iv = bytes.fromhex("000102030405060708090a0b0c0d0eff")
    stream = sm4_ctr(keys.sm4, iv).update(bytes(40))
    assert stream.hex() == (
        "bab001e613e97cc13e6c33737939243b982cb26174959184e48c74bc636406abf1d25d5c5fbe74a4"
    )  # spec/vqf.md §sm4-hmac
    assert counter_add(iv, 1).hex() == "000102030405060708090a0b0c0d0f00"
    assert counter_add(b"\xff" * 16, 1) == bytes(16)  # wraps mod 2**128
    assert sm4_ctr_at(keys.sm4, iv, 13, bytes(27)) == stream[13:]


def test_hmac_sm3_example():
    mac = hmac_sm3(derive_keys(b"secret").mac)
    mac.update(b"abc")
    assert mac.finalize().hex() == (
        "91c06e8cfc5b56b6a0bdee34be8bb1259e378c35b315394591a166458e741ed9"
    )


@needs_openssl
@pytest.mark.parametrize("key", [b"k", b"key-of-16-bytes!", b"x" * 64, b"y" * 100])
def test_hmac_sm3_equals_the_openssl_command_line(key):
    data = bytes(range(256)) * 5
    out = subprocess.run(
        ["openssl", "dgst", "-sm3", "-hmac", key.decode()],
        input=data, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    mac = hmac_sm3(key)
    mac.update(data)
    assert out.strip().split()[-1] == mac.finalize().hex()


def _openssl_key(tmp: Path) -> tuple[bytes, bytes, Path, Path]:
    """An SM2 key pair made by OpenSSL: (d, x ‖ y, private PEM, public PEM)."""
    priv, pub = tmp / "sm2.pem", tmp / "sm2pub.pem"
    subprocess.run(
        [
            "openssl",
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:SM2",
            "-out",
            priv,
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True,
                   capture_output=True)  # fmt: skip
    text = subprocess.run(["openssl", "pkey", "-in", priv, "-text", "-noout"], check=True,
                          capture_output=True, text=True).stdout  # fmt: skip
    d_hex = re.search(r"priv:\s*([0-9a-f:\s]+)pub:", text)[1]  # type: ignore[index]
    p_hex = re.search(r"pub:\s*([0-9a-f:\s]+)ASN1", text)[1]  # type: ignore[index]
    d = bytes.fromhex(re.sub(r"[^0-9a-f]", "", d_hex)).rjust(32, b"\0")[-32:]
    point = bytes.fromhex(re.sub(r"[^0-9a-f]", "", p_hex))
    assert point[0] == 4
    return d, point[1:], priv, pub


def _der_integers(der: bytes) -> tuple[bytes, bytes]:
    """r and s of an SM2 DER signature SEQUENCE { INTEGER r, INTEGER s }, 32 bytes each."""
    assert der[0] == 0x30
    pos, out = 2, []
    for _ in range(2):
        assert der[pos] == 0x02
        n = der[pos + 1]
        out.append(der[pos + 2 : pos + 2 + n].lstrip(b"\0").rjust(32, b"\0"))
        pos += 2 + n
    return out[0], out[1]


def _der(r: bytes, s: bytes) -> bytes:
    def integer(v: bytes) -> bytes:
        v = v.lstrip(b"\0") or b"\0"
        if v[0] & 0x80:
            v = b"\0" + v
        return bytes([2, len(v)]) + v

    body = integer(r) + integer(s)
    return bytes([0x30, len(body)]) + body


def _openssl_key_of(d: bytes, tmp: Path) -> tuple[bytes, bytes, Path, Path]:
    """The SM2 key pair of a chosen d, as OpenSSL reads it: a SEC1 ECPrivateKey (curve OID
    1.2.156.10197.1.301) built by hand; OpenSSL derives and prints its public point itself."""
    body = (
        bytes.fromhex("020101") + b"\x04\x20" + d  # version 1, privateKey
        + bytes.fromhex("a00a06082a811ccf5501822d")  # [0] the SM2 curve's OID
    )  # fmt: skip
    der = tmp / "d.der"
    der.write_bytes(bytes([0x30, len(body)]) + body)
    priv, pub = tmp / "sm2.pem", tmp / "sm2pub.pem"
    subprocess.run(["openssl", "pkey", "-inform", "DER", "-in", der, "-out", priv], check=True,
                   capture_output=True)  # fmt: skip
    subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True,
                   capture_output=True)  # fmt: skip
    text = subprocess.run(["openssl", "pkey", "-in", priv, "-text", "-noout"], check=True,
                          capture_output=True, text=True).stdout  # fmt: skip
    p_hex = re.search(r"pub:\s*([0-9a-f:\s]+)ASN1", text)[1]  # type: ignore[index]
    point = bytes.fromhex(re.sub(r"[^0-9a-f]", "", p_hex))
    assert point[0] == 4
    return d, point[1:], priv, pub


@needs_openssl
@pytest.mark.parametrize("chosen", [None, 11], ids=["openssl-key", "d=11"])
def test_sm2_ours_verified_by_openssl_and_theirs_by_us(tmp_path, chosen):
    # d = 11: gmssl 3.2.2's verify rejected every valid signature of this key (found by the
    # Hypothesis round trip in tests/ref/vqf/test_protect.py), so the key is pinned here
    if chosen is None:
        d, pub, priv_pem, pub_pem = _openssl_key(tmp_path)
    else:
        d, pub, priv_pem, pub_pem = _openssl_key_of(chosen.to_bytes(32, "big"), tmp_path)
    assert sm2.public_key(d) == pub
    digest = sm3(b"the VQF digest D")
    msg = tmp_path / "D.bin"
    msg.write_bytes(digest)
    common = ["-rawin", "-digest", "sm3", "-pkeyopt", "distid:vllm-shs-vqf", "-in", msg]
    # ours -> theirs
    signer_pub, r, s = sm2.sign(d, digest)
    assert signer_pub == pub
    (tmp_path / "ours.der").write_bytes(_der(r, s))
    ok = subprocess.run(
        [
            "openssl",
            "pkeyutl",
            "-verify",
            "-pubin",
            "-inkey",
            pub_pem,
            *common,
            "-sigfile",
            tmp_path / "ours.der",
        ],
        capture_output=True,
        text=True,
    )
    assert "Signature Verified Successfully" in ok.stdout, ok.stdout + ok.stderr
    # theirs -> ours
    subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", priv_pem, *common, "-out",
                    tmp_path / "theirs.der"], check=True, capture_output=True)  # fmt: skip
    r2, s2 = _der_integers((tmp_path / "theirs.der").read_bytes())
    assert sm2.verify(pub, digest, r2, s2)
    assert not sm2.verify(pub, sm3(b"another D"), r2, s2)
    # a different ID is a different Z_A: OpenSSL's default ID does not verify under ours
    subprocess.run(
        [
            "openssl",
            "pkeyutl",
            "-sign",
            "-inkey",
            priv_pem,
            "-rawin",
            "-digest",
            "sm3",
            "-in",
            msg,
            "-out",
            tmp_path / "default.der",
        ],
        check=True,
        capture_output=True,
    )
    assert not sm2.verify(pub, digest, *_der_integers((tmp_path / "default.der").read_bytes()))


@pytest.mark.parametrize("d", [1, 2, 3, 11, 12, 255, 2**128 + 1, sm2.N - 2])
def test_sm2_round_trip_of_edge_keys(d):
    """Small, mid and largest private keys sign and verify; a changed D or r does not."""
    key = d.to_bytes(32, "big")
    pub, r, s = sm2.sign(key, sm3(b"D"))
    assert sm2.on_curve(pub)
    assert sm2.verify(pub, sm3(b"D"), r, s)
    assert not sm2.verify(pub, sm3(b"E"), r, s)
    bumped = ((int.from_bytes(r, "big") % (sm2.N - 1)) + 1).to_bytes(32, "big")
    assert not sm2.verify(pub, sm3(b"D"), bumped, s)


def test_sm2_range_checks_and_key_validation():
    d = sm2.generate_private_key()
    pub, r, s = sm2.sign(d, bytes(32))
    assert sm2.verify(pub, bytes(32), r, s)
    assert not sm2.verify(pub, bytes(32), bytes(32), s)  # r = 0
    assert not sm2.verify(pub, bytes(32), r, sm2.N.to_bytes(32, "big"))  # s = n
    assert not sm2.verify(b"\x01" * 64, bytes(32), r, s)  # not a curve point
    with pytest.raises(ValueError):
        sm2.public_key(bytes(32))


def test_sm2_fixed_nonce_is_deterministic_and_checked():
    """A fixed k (the corpus generator's) gives the same valid signature every time; the
    default draws a fresh one."""
    d, digest = bytes.fromhex("11" * 32), bytes(range(32))
    first = sm2.sign(d, digest, k=0x1234)
    assert first == sm2.sign(d, digest, k=0x1234) and sm2.verify(first[0], digest, *first[1:])
    assert sm2.sign(d, digest)[1:] != sm2.sign(d, digest)[1:]
    for k in (0, sm2.N):
        with pytest.raises(ValueError):
            sm2.sign(d, digest, k=k)
