"""The fast protected-file writers (C FNV kernel) write the reference writers' bytes."""

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.vqf import tensor_sets

from weightfile.examples import TINY_ARCH
from weightfile.fast.vqf import protect_write as fast
from weightfile.ref.vqf import protect_write as ref
from weightfile.ref.vqf.write import write_vqf

PRIV = bytes.fromhex("3945208f7b2144b13f36e38ac6d39f95889393692860b51a42fb81ef4df7c5b8")


@settings(max_examples=20, deadline=None)
@given(tensor_sets(), st.binary(min_size=1, max_size=24), st.binary(min_size=16, max_size=16))
def test_fast_protect_writers_equal_ref(tmp_path_factory, tensors, passphrase, iv):
    d = tmp_path_factory.mktemp("diff")
    plain = write_vqf(d / "p.vqf", arch=TINY_ARCH, tensors=tensors, order="given")
    a = ref.encrypt_vqf(plain, d / "a.vqf", passphrase, iv=iv)
    b = fast.encrypt_vqf(plain, d / "b.vqf", passphrase, iv=iv)
    assert a.read_bytes() == b.read_bytes()
    assert (
        ref.decrypt_vqf(a, d / "ra.vqf", passphrase).read_bytes()
        == fast.decrypt_vqf(b, d / "fa.vqf", passphrase).read_bytes()
        == plain.read_bytes()
    )
    # SM2 draws a fresh k per signature, so compare what is deterministic: the digest
    sa = ref.sign_vqf(plain, d / "sa.vqf", PRIV).read_bytes()
    sb = fast.sign_vqf(plain, d / "sb.vqf", PRIV).read_bytes()
    assert sa[:312] == sb[:312] and sa[376:] == sb[376:]  # all but r and s
    # ... and with the generator's fixed k, every byte, the encrypted-then-signed file too
    k = 0x1234567
    ka = ref.sign_vqf(a, d / "ka.vqf", PRIV, passphrase=passphrase, nonce=k).read_bytes()
    kb = fast.sign_vqf(b, d / "kb.vqf", PRIV, passphrase=passphrase, nonce=k).read_bytes()
    assert ka == kb
