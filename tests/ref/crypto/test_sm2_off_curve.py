"""A public key off sm2p256v1 is refused by SM2 verification itself (spec/vqf.md §sm2-signature:
"a public key must be a point of the curve"), not merely because its signatures fail to add up.

The chord-and-tangent formulas never use the curve's b, so without the on-curve check a key on
another curve y² = x³ + a·x + b′ is computed with as if it were a point of ours: the
invalid-curve forgery. Q = (x_G, 0) is one, derived from the curve equation by hand: its
coordinates are below p and 64 bytes long, but y_Q² = 0 while x_G³ + a·x_G + b = y_G² ≠ 0, so Q
is no point of sm2p256v1; on its own curve (b′ = −x_G³ − a·x_G) it has order 2, since the tangent
at a point with y = 0 is vertical. So t·Q = O for every even t, and (r, s) with
r = e + x(s·G) mod n and t = r + s even satisfies the verification equation
x(s·G + t·Q) + e ≡ r without any private key. OpenSSL, the independent oracle, refuses to load Q
as an SM2 public key and loads G.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from weightfile.examples import TINY_ARCH, TINY_FLAGS, tiny_tensors
from weightfile.ref.crypto import sm2
from weightfile.ref.crypto.sm import sm3
from weightfile.ref.vqf import protect
from weightfile.ref.vqf.protect_write import sign_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.ref.vqf.write import write_vqf

#: Q = (x_G, 0): in range, 64 bytes, off the curve (module docstring).
OFF = sm2.GX.to_bytes(32, "big") + bytes(32)
#: The signature block's absolute offsets, current layout (spec/vqf.md §signature-block).
PUB_AT, R_AT, S_AT, DIGEST_AT = 248, 312, 344, 376


def forge(pub: bytes, digest: bytes) -> tuple[bytes, bytes]:
    """(r, s) that pass the verification equation under an order-2 key (module docstring)."""
    e = int.from_bytes(sm2.message_hash(pub, digest), "big")
    for s in range(1, 1000):
        sg = sm2.scalar_mult(s, (sm2.GX, sm2.GY))
        assert sg is not None
        r = (e + sg[0]) % sm2.N
        t = (r + s) % sm2.N
        if r and t and t % 2 == 0:
            return r.to_bytes(32, "big"), s.to_bytes(32, "big")
    raise AssertionError("no s in 1..999 gives an even t")


def test_the_key_is_off_the_curve_by_the_equation() -> None:
    x, y = sm2.GX, 0
    assert x < sm2.P and len(OFF) == 64
    assert (x**3 + sm2.A * x + sm2.B) % sm2.P == sm2.GY**2 % sm2.P != y * y
    assert not sm2.on_curve(OFF) and sm2.on_curve(sm2.G)


def test_the_forgery_satisfies_the_equation_the_check_guards() -> None:
    """The forged (r, s) are in range, t = r + s ≠ 0, and x(s·G + t·Q) + e ≡ r holds: the only
    thing that refuses it is the key's curve membership."""
    digest = sm3(b"D")
    r, s = forge(OFF, digest)
    ri, si = int.from_bytes(r, "big"), int.from_bytes(s, "big")
    assert 1 <= ri < sm2.N and 1 <= si < sm2.N and (ri + si) % sm2.N
    q = (sm2.GX, 0)
    assert sm2.point_add(q, q) is None  # order 2 on its own curve
    t = (ri + si) % sm2.N
    total = sm2.point_add(sm2.scalar_mult(si, (sm2.GX, sm2.GY)), sm2.scalar_mult(t, q))
    e = int.from_bytes(sm2.message_hash(OFF, digest), "big")
    assert total is not None and (e + total[0]) % sm2.N == ri
    assert not sm2.verify(OFF, digest, r, s)


def test_a_perturbed_real_key_is_refused() -> None:
    """(x_G, y_G + 1): a real key with one coordinate bumped; G's own signature under it fails."""
    digest = sm3(b"D")
    pub, r, s = sm2.sign((1).to_bytes(32, "big"), digest)
    assert pub == sm2.G and sm2.verify(pub, digest, r, s)
    bumped = pub[:32] + (sm2.GY + 1).to_bytes(32, "big")
    assert not sm2.on_curve(bumped) and not sm2.verify(bumped, digest, r, s)
    with pytest.raises(ValueError, match="point of sm2p256v1"):
        protect.parse_public_key(bumped.hex())
    with pytest.raises(ValueError, match="point of sm2p256v1"):
        protect.parse_public_key("04" + OFF.hex())


def test_the_validator_reports_the_forged_signature_with_its_rule(tmp_path: Path) -> None:
    """A SIGNED VQF whose sig block carries Q and the forged (r, s) over the file's own digest D,
    validated with Q as the trusted key (the API takes key bytes as they are): `vqf.sig.signature`
    at r's offset, and nothing else."""
    plain = write_vqf(
        tmp_path / "p.vqf", arch=TINY_ARCH, tensors=tiny_tensors(TINY_ARCH), flags=TINY_FLAGS
    )
    signed = sign_vqf(plain, tmp_path / "s.vqf", (7).to_bytes(32, "big"))
    real_pub = sm2.public_key((7).to_bytes(32, "big"))
    assert validate(signed, trusted_pub=real_pub) == []
    data = bytearray(signed.read_bytes())
    digest = bytes(data[DIGEST_AT : DIGEST_AT + 32])
    r, s = forge(OFF, digest)
    data[PUB_AT:R_AT], data[R_AT:S_AT], data[S_AT:DIGEST_AT] = OFF, r, s
    forged = tmp_path / "forged.vqf"
    forged.write_bytes(bytes(data))
    found = [(v.rule, v.offset, v.path, v.error_class) for v in validate(forged, trusted_pub=OFF)]
    assert found == [("vqf.sig.signature", R_AT, "header.sig.r", "InvalidError")]


def _spki(pub: bytes) -> bytes:
    """SubjectPublicKeyInfo {id-ecPublicKey, SM2 curve 1.2.156.10197.1.301} over 04 ‖ x ‖ y."""
    return bytes.fromhex("3059301306072a8648ce3d020106082a811ccf5501822d03420004") + pub


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl CLI")
def test_openssl_refuses_the_key_and_takes_the_generator(tmp_path: Path) -> None:
    for name, pub, ok in (("g", sm2.G, True), ("off", OFF, False)):
        der = tmp_path / f"{name}.der"
        der.write_bytes(_spki(pub))
        done = subprocess.run(
            ["openssl", "pkey", "-pubin", "-inform", "DER", "-in", str(der), "-noout"],
            capture_output=True,
        )
        assert (done.returncode == 0) == ok, done.stderr
