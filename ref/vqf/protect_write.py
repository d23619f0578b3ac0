"""Writing protected VQF files: encrypt, decrypt, sign, and SM2 key files (spec/vqf.md §protected).

Every writer streams the data region once in 1 MiB chunks (`protect.pass_region`), so memory
stays bounded by the chunk whatever the model's size; stages its output in a temporary file
beside the destination and publishes it by rename only when every check passed, so a failure
leaves nothing behind; and refuses an existing destination unless `overwrite=True`. Encryption
draws its IV from the operating system's CSPRNG and writes the region as one continuous SM4-CTR
stream (spec/vqf.md §sm4-hmac, §decisions item 7).
"""

from __future__ import annotations

import os
import secrets
import struct
from collections.abc import Callable
from pathlib import Path

from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.crypto import sm2
from weightfile.ref.crypto.sm import hmac_sm3
from weightfile.ref.staging import SECRET_MODE, check_output, staged_folder
from weightfile.spec.errors import (
    ChecksumError,
    InvalidError,
    UnsupportedError,
)
from weightfile.spec.vqf.constants import FNV_OFFSET_BASIS, HEADER_BYTES
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.header import VQFHeader, field_offset
from weightfile.spec.vqf.placement import directory_end
from weightfile.spec.vqf.sig import VQFSig

from . import protect
from .read import Header, VQFFile, open_vqf
from .write import staged

FLAGS_AT = field_offset(VQFHeader, "flags")
IV_AT = field_offset(VQFHeader, "enc_iv")


def _with_flags(header: bytes, set_: int = 0, clear: int = 0) -> bytearray:
    h = bytearray(header)
    (flags,) = struct.unpack_from("<I", h, FLAGS_AT)
    struct.pack_into("<I", h, FLAGS_AT, (flags | set_) & ~clear)
    return h


def _require_current(vqf: VQFFile, action: str) -> None:
    if vqf.header.layout != "current":
        raise InvalidError(
            "vqf.writer.legacy",
            f"cannot {action} a legacy 432-byte file: protected files use the 448-byte layout",
            offset=0,
            path="header",
        )


def _head(vqf: VQFFile) -> tuple[bytes, bytes]:
    """The stored header and directory ‖ gap, copied as they are."""
    h = vqf.header
    return bytes(vqf.bytes_at(0, HEADER_BYTES)), bytes(vqf.bytes_at(HEADER_BYTES, h.data_offset))


def _check_fnv(vqf: VQFFile, computed: int | None) -> None:
    """A plaintext source's trailer must match before its bytes are protected (spec/vqf.md
    §fnv-trailer)."""
    stored = vqf.stored_fnv()
    if stored and stored != computed:
        raise ChecksumError(
            "vqf.trailer.fnv",
            f"source FNV {stored:#018x} != computed {computed:#018x}: refusing to protect it",
            offset=vqf.header.file_len,
            path="trailer",
        )


def _require_unprotected(h: Header) -> None:
    """Only a plaintext, unsigned file is encrypted: a signature covers the ENC flag and the IV
    (spec/vqf.md §decisions item 8), so a file is encrypted first and signed after."""
    if h.encrypted or h.signed:
        raise InvalidError(
            "vqf.writer.protect",
            "the source is already encrypted"
            if h.encrypted
            else "the source is signed: encrypt the unsigned file, then sign the encrypted one",
            offset=FLAGS_AT,
            path="header.flags",
        )


def encrypt_vqf(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    passphrase: bytes,
    *,
    overwrite: bool = False,
    iv: bytes | None = None,
    backend: Backend = REFERENCE,
) -> Path:
    """Encrypt a plaintext VQF file (spec/vqf.md §key-derivation, §sm4-hmac): ENC set, a fresh IV,
    the tag.

    `iv` fixes the IV for the conformance generator and tests only; the CLI never passes it, so
    real files draw theirs from the CSPRNG (an IV reused under one passphrase leaks plaintext).

    A signed source is refused: its signature covers the ENC flag and the IV (spec/vqf.md
    §decisions item 8), so encrypt first and sign the encrypted file.
    """
    keys = protect.derive_keys(passphrase)
    iv = secrets.token_bytes(16) if iv is None else bytes(iv)
    if len(iv) != 16:
        raise ValueError("an SM4-CTR IV is 16 bytes")
    with open_vqf(src) as vqf, staged(dst, overwrite) as out:
        h = vqf.header
        _require_current(vqf, "encrypt")
        _require_unprotected(h)
        stored_header, rest = _head(vqf)
        header = _with_flags(stored_header, set_=VQFFlag.ENC)
        header[IV_AT : IV_AT + 16] = iv
        out.write(header)
        out.write(rest)
        enc_h = _reparse(header, vqf)
        mac = hmac_sm3(keys.mac)
        mac.update(protect.covered_header(bytes(header)))
        mac.update(rest[: directory_end(h.n_tensors) - HEADER_BYTES])
        ks = protect.Keystream(keys, enc_h, vqf.entries, protect.ONE_STREAM)

        def write(pos: int, stored: bytes) -> None:
            cipher = ks.apply(stored)
            mac.update(cipher)
            out.write(cipher)

        done = protect.pass_region(
            vqf.bytes_at(0, vqf.size),
            h,
            vqf.entries,
            fnv=True,
            hasher=backend.checksum,
            sink=write,
            release=vqf.release_pages,
        )
        _check_fnv(vqf, done.fnv)
        out.write(mac.finalize())
    return Path(dst)


def decrypt_vqf(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    passphrase: bytes,
    *,
    overwrite: bool = False,
    backend: Backend = REFERENCE,
) -> Path:
    """Write the plaintext file of an ENC file: ENC and the IV cleared, an FNV-1a-64 trailer.

    The tag is checked over the ciphertext copied into the staging file; only then is that
    private copy decrypted in place, by the writer kind its pads show. A signature is dropped
    (SIGNED and the sig block cleared): it covered the ENC header and cannot hold for the
    plaintext one (spec/vqf.md §decisions item 8).
    """
    keys = protect.derive_keys(passphrase)
    with open_vqf(src) as vqf, staged(dst, overwrite) as out:
        h = vqf.header
        if not h.encrypted:
            raise InvalidError(
                "vqf.writer.protect",
                "the source is not encrypted",
                offset=FLAGS_AT,
                path="header.flags",
            )
        stored_header, rest = _head(vqf)
        header = _with_flags(stored_header, clear=VQFFlag.ENC | VQFFlag.SIGNED)
        header[IV_AT : IV_AT + 16] = bytes(16)
        header[protect.SIG_AT : HEADER_BYTES] = bytes(protect.SIG_BYTES)
        out.write(header)
        out.write(rest)
        done = protect.pass_region(
            vqf.bytes_at(0, vqf.size),
            h,
            vqf.entries,
            keys=keys,
            mac_headers=[protect.covered_header(stored_header)],
            sink=lambda pos, stored: out.write(stored),
            release=vqf.release_pages,
        )
        if not protect.tags_equal(done.tags[0], vqf.stored_tag()):
            raise protect.tag_error(h)
        kind = protect.stream_kind(protect.detect_kind(keys, h, vqf.entries, done.pads))
        ks = protect.Keystream(keys, h, vqf.entries, kind)
        f = backend.checksum(rest[: directory_end(h.n_tensors) - HEADER_BYTES], FNV_OFFSET_BASIS)
        for pos in range(h.data_offset, h.file_len, protect.CHUNK):  # our own staged copy
            out.seek(pos)
            plain = ks.apply(out.read(min(protect.CHUNK, h.file_len - pos)))
            f = backend.checksum(plain, f)
            out.seek(pos)
            out.write(plain)
        out.seek(h.file_len)
        out.write(struct.pack("<Q", f))
        out.truncate()
    return Path(dst)


def sign_vqf(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    private_key: bytes,
    *,
    passphrase: bytes | None = None,
    overwrite: bool = False,
    backend: Backend = REFERENCE,
    nonce: int | None = None,
) -> Path:
    """Sign a VQF file (spec/vqf.md §sm2-signature); an ENC file is re-tagged, since SIGNED is in
    H′.

    D = SM3(H″ ‖ directory ‖ plaintext) with SIGNED already in H″'s flags. An ENC file needs its
    passphrase; its old tag must match before it is signed. Signing a signed file replaces the
    signature. `nonce` fixes SM2's k for the conformance generator only (`sm2.sign`); the CLI
    never passes it, so real signatures draw k from the CSPRNG.
    """
    with open_vqf(src) as vqf, staged(dst, overwrite) as out:
        h = vqf.header
        _require_current(vqf, "sign")
        stored_header, rest = _head(vqf)
        header = _with_flags(stored_header, set_=VQFFlag.SIGNED)
        header[protect.SIG_AT : HEADER_BYTES] = bytes(protect.SIG_BYTES)
        covered = protect.covered_header(bytes(header))
        out.write(header)
        out.write(rest)

        def copy(pos: int, stored: bytes) -> None:
            out.write(stored)

        if h.encrypted:
            digest, trailer = _digest_encrypted(vqf, stored_header, covered, passphrase, copy)
        else:
            digest, trailer = _digest_plaintext(vqf, covered, backend, copy)
        sig = _sig_block(private_key, digest, nonce)
        out.write(trailer)
        out.seek(protect.SIG_AT)
        out.write(sig)
    return Path(dst)


def _digest_encrypted(
    vqf: VQFFile,
    stored_header: bytes,
    covered: bytes,
    passphrase: bytes | None,
    sink: Callable[[int, bytes], None],
) -> tuple[bytes, bytes]:
    """D over an ENC file's plaintext and its new tag (spec/vqf.md §sm4-hmac, §sm2-signature), in
    one pass.

    The old tag (over the stored H′) must match before anything is signed; the new one covers
    H′ with SIGNED set and the sig block zeroed, `covered`, which is also D's H″. D is taken
    under the writer kind the pads show.
    """
    h = vqf.header
    if passphrase is None:
        raise UnsupportedError(
            "vqf.enc.no_key",
            "signing an encrypted file needs its passphrase",
            path="flags",
        )
    keys = protect.derive_keys(passphrase)
    done = protect.pass_region(
        vqf.bytes_at(0, vqf.size),
        h,
        vqf.entries,
        keys=keys,
        sink=sink,
        digest_header=covered,
        mac_headers=[protect.covered_header(stored_header), covered],
        release=vqf.release_pages,
    )
    if not protect.tags_equal(done.tags[0], vqf.stored_tag()):
        raise protect.tag_error(h)
    kind = protect.detect_kind(keys, h, vqf.entries, done.pads)
    return done.digests[protect.stream_kind(kind)], done.tags[1]


def _digest_plaintext(
    vqf: VQFFile, covered: bytes, backend: Backend, sink: Callable[[int, bytes], None]
) -> tuple[bytes, bytes]:
    """D over a plaintext file's stored bytes (spec/vqf.md §sm2-signature) and its FNV-1a-64
    trailer, kept as it is once it matched (spec/vqf.md §fnv-trailer)."""
    h = vqf.header
    done = protect.pass_region(
        vqf.bytes_at(0, vqf.size),
        h,
        vqf.entries,
        fnv=True,
        hasher=backend.checksum,
        sink=sink,
        release=vqf.release_pages,
        digest_header=covered,
    )
    _check_fnv(vqf, done.fnv)
    return done.digests[protect.ONE_STREAM], bytes(vqf.bytes_at(h.file_len, vqf.size))


def _sig_block(private_key: bytes, digest: bytes, nonce: int | None) -> bytes:
    """The 200-byte sig block (spec/vqf.md §signature-block): pub, (r, s) over D, D and the fixed
    ID, as spec/vqf.md §sm2-signature signing steps 1–6 make them."""
    pub, r, s = sm2.sign(private_key, digest, k=nonce)
    return VQFSig.build(
        {
            "pub": pub,
            "r": r,
            "s": s,
            "digest": digest,
            "id": sm2.SIGNER_ID.ljust(32, b"\0"),
            "id_len": len(sm2.SIGNER_ID),
            "rsvd": 0,
        }
    )


def protect_vqf(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    passphrase: bytes | None = None,
    private_key: bytes | None = None,
    overwrite: bool = False,
    backend: Backend = REFERENCE,
) -> Path:
    """Publish `src` at `dst` encrypted (with `passphrase`), then signed (with `private_key`).

    The order is the one spec/vqf.md §decisions item 8 forces: the signature covers ENC and the IV,
    so the file is encrypted first and the encrypted file signed. With both, the encrypted middle
    step is staged in a private (mode 0700) folder beside `dst` and removed whatever happens;
    only the final file is ever published at `dst`. With neither, nothing is asked for.
    """
    if passphrase is None and private_key is None:
        raise InvalidError(
            "vqf.writer.keys", "protect_vqf needs a passphrase, a private key or both"
        )
    dst = Path(dst)
    # before any work; `staged` checks again at publication (ref/staging.py, the output policy)
    check_output(dst, overwrite, "vqf.writer.destination")
    if private_key is None:
        return encrypt_vqf(src, dst, passphrase, overwrite=overwrite, backend=backend)
    if passphrase is None:
        return sign_vqf(src, dst, private_key, overwrite=overwrite, backend=backend)
    with staged_folder(dst) as private:  # swept by the next write if this process is killed
        middle = encrypt_vqf(src, private / "enc.vqf", passphrase, backend=backend)
        return sign_vqf(
            middle, dst, private_key, passphrase=passphrase, overwrite=overwrite, backend=backend
        )


def _reparse(header: bytes | bytearray, vqf: VQFFile) -> Header:
    """The source's Header with the new flags and IV (the Keystream reads enc_iv from it)."""
    from dataclasses import replace

    (flags,) = struct.unpack_from("<I", header, FLAGS_AT)
    return replace(vqf.header, flags=flags, enc_iv=bytes(header[IV_AT : IV_AT + 16]))


# -- key files ------------------------------------------------------------------------------------
def write_private_key(path: str | os.PathLike[str], *, overwrite: bool = False) -> bytes:
    """A fresh SM2 private key as 64 hex characters (the VLLM_VQF_SIGN_PRIV form), mode 0600.

    Returns the public key x ‖ y. The staging file is created with mode 0600, so the key is
    never readable by others, not even before the rename.
    """
    private = sm2.generate_private_key()
    with staged(path, overwrite, mode=SECRET_MODE) as out:
        os.fchmod(out.fileno(), SECRET_MODE)  # and so whatever the umask
        out.write(private.hex().encode() + b"\n")
    return sm2.public_key(private)


def read_private_key(path: str | os.PathLike[str]) -> bytes:
    """The 32-byte private key of a key file (64 hex characters, surrounding blanks ignored)."""
    text = Path(path).read_text(encoding="ascii", errors="replace").strip()
    try:
        private = bytes.fromhex(text)
        sm2.public_key(private)
    except ValueError:
        raise InvalidError(
            "vqf.sig.key",
            f"{path}: an SM2 private key file holds 64 hex characters",
            path=str(path),
        ) from None
    return private
