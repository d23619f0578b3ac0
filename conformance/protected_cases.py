"""The protected VQF cases of corpus vqf v2: ENC, SIGNED and ENC+SIGNED files with their keys.

spec/vqf.md §protected. Each case is a `vqf-protected` container case whose `case.json` carries
`keys`: the published test passphrase and/or the trusted public key an implementation must use,
which the runner hands to the command as the engine's own environment variables
(conformance/README.md, "Protected cases"). The private key that signed the files is published
beside them: it protects nothing and lets anyone rebuild the files.

Encryption and signatures are randomised by design (a fresh IV, a fresh SM2 nonce k); the generator
fixes both (`IV`, `NONCE`) through the writers' generator-only parameters, so the corpus regenerates
byte for byte. The invalid cases break one protected rule each: `vqf.enc.tag`, `vqf.enc.no_key`,
`vqf.sig.no_key`, `vqf.sig.digest`, `vqf.sig.pub`, `vqf.sig.signature` and the strict-only
`vqf.sig.id`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weightfile.ref.crypto import sm2
from weightfile.ref.vqf.protect_write import encrypt_vqf, sign_vqf
from weightfile.ref.vqf.read import open_vqf
from weightfile.ref.vqf.validate import validate
from weightfile.spec.vqf.header import VQFHeader, sig_field_offset
from weightfile.spec.vqf.rules import RULES

from .case_types import Case
from .sections import published_section
from .vqf_describe import describe_vqf
from .vqf_mutations import write_base

#: The published test keys (never use them for anything else).
PASSPHRASE = b"vqf conformance passphrase"
PRIVATE_KEY = bytes.fromhex("5d3a1c7e9b2f4a6c8e0d1b3f5a7c9e2b4d6f8a0c2e4b6d8f1a3c5e7b9d0f2a4c")
PUBLIC_KEY = sm2.public_key(PRIVATE_KEY)
#: A second key pair: its public half replaces the signer's pub in the vqf.sig.pub case.
OTHER_KEY = bytes.fromhex("2b4d6f8a0c2e4b6d8f1a3c5e7b9d0f2a4c5d3a1c7e9b2f4a6c8e0d1b3f5a7c9e")
#: The fixed IV and SM2 nonce of every corpus file (real writers draw both from the CSPRNG).
IV = bytes.fromhex("000102030405060708090a0b0c0dfffe")  # the low bytes carry within the file
NONCE = 0x6CB28D99385C175C94F94E934817663FC176D925DD72B727260DBAAE1FB2F96F


@dataclass(frozen=True, slots=True)
class Keys:
    """What a case gives the implementation: the passphrase, the trusted public key, or both."""

    passphrase: bool = False
    trusted_pub: bool = False

    def json(self) -> dict[str, str]:
        doc: dict[str, str] = {}
        if self.passphrase:
            doc["passphrase"] = PASSPHRASE.decode("ascii")
        if self.trusted_pub:
            doc["sign_pub"] = PUBLIC_KEY.hex()
        return doc

    def arguments(self) -> dict[str, bytes | None]:
        return {
            "passphrase": PASSPHRASE if self.passphrase else None,
            "trusted_pub": PUBLIC_KEY if self.trusted_pub else None,
        }


def plain(scratch: Path, name: str) -> Path:
    """The rule base file (conformance/vqf_mutations.py): the tiny model, current layout."""
    return write_base(scratch / f"{name}.plain.vqf")


def encrypted(scratch: Path, name: str) -> Path:
    return encrypt_vqf(plain(scratch, name), scratch / f"{name}.enc.vqf", PASSPHRASE, iv=IV)


def signed(scratch: Path, name: str) -> Path:
    return sign_vqf(plain(scratch, name), scratch / f"{name}.sig.vqf", PRIVATE_KEY, nonce=NONCE)


def encrypted_signed(scratch: Path, name: str) -> Path:
    return sign_vqf(
        encrypted(scratch, name),
        scratch / f"{name}.enc-sig.vqf",
        PRIVATE_KEY,
        passphrase=PASSPHRASE,
        nonce=NONCE,
    )


def patch(path: Path, offset: int, data: bytes) -> Path:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(data)
    return path


def flip(path: Path, offset: int) -> Path:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        byte = fh.read(1)[0]
        fh.seek(offset)
        fh.write(bytes([byte ^ 0x01]))
    return path


def sig_at(name: str) -> int:
    """The byte offset of a field of the sig block (spec/vqf.md §signature-block)."""
    return sig_field_offset(VQFHeader, name)


def first_ciphertext_byte(path: Path) -> int:
    with open_vqf(path) as vqf:
        return vqf.header.data_offset


Writer = Callable[[Path, str], Path]

#: (topic, name, description, writer, keys) of every valid protected case.
VALID: tuple[tuple[str, str, str, Writer, Keys], ...] = (
    ("current", "enc", "ENC: SM4-CTR as one stream, HMAC-SM3 tag; passphrase given",
     encrypted, Keys(passphrase=True)),
    ("current", "signed", "SIGNED plaintext file, FNV-1a-64 trailer; trusted key given",
     signed, Keys(trusted_pub=True)),
    ("current", "enc-signed", "ENC and SIGNED: encrypted, then signed and re-tagged; both keys",
     encrypted_signed, Keys(passphrase=True, trusted_pub=True)),
)  # fmt: skip


def _tag(scratch: Path, name: str) -> Path:
    path = encrypted(scratch, name)
    return flip(path, first_ciphertext_byte(path))


def _digest(scratch: Path, name: str) -> Path:
    """A stored D that is not the file's digest; (r, s) still sign the recomputed one."""
    return flip(signed(scratch, name), sig_at("digest"))


def _pub(scratch: Path, name: str) -> Path:
    """The signer's pub field replaced by another key's; (r, s) still verify under the trusted
    key, which the loader uses (spec/vqf.md §sm2-signature)."""
    return patch(signed(scratch, name), sig_at("pub"), sm2.public_key(OTHER_KEY))


def _signature(scratch: Path, name: str) -> Path:
    return flip(signed(scratch, name), sig_at("s") + 31)


def _id(scratch: Path, name: str) -> Path:
    """A wrong ID field: the loader ignores it (Z_A uses the fixed ID), the strict check not."""
    return patch(signed(scratch, name), sig_at("id"), b"vllm-shs-vqg")


#: rule -> (writer of the broken file, keys given, what the case shows)
INVALID: dict[str, tuple[Writer, Keys, str]] = {
    "vqf.enc.tag": (_tag, Keys(passphrase=True), "one ciphertext bit flipped"),
    "vqf.enc.no_key": (encrypted, Keys(), "a valid ENC file, no passphrase"),
    "vqf.sig.no_key": (signed, Keys(), "a valid SIGNED file, no trusted key"),
    "vqf.sig.digest": (_digest, Keys(trusted_pub=True), "one bit of the stored digest flipped"),
    "vqf.sig.pub": (_pub, Keys(trusted_pub=True), "sig.pub is another key's public key"),
    "vqf.sig.signature": (_signature, Keys(trusted_pub=True), "one bit of s flipped"),
    "vqf.sig.id": (_id, Keys(trusted_pub=True), 'the id field reads "vllm-shs-vqg"'),
}


def _meta(expect: str, keys: Keys, description: str, path: Path) -> dict[str, Any]:
    """The case.json fields; a signed input also names the published key pair that signed it
    (informational: an implementation verifies against `keys.sign_pub` only)."""
    meta = {"expect": expect, "input": "input.vqf", "keys": keys.json(),
            "description": description}  # fmt: skip
    with open_vqf(path, check_ranges=False) as vqf:
        if vqf.header.signed:
            meta["signer"] = {"sign_priv": PRIVATE_KEY.hex(), "sign_pub": PUBLIC_KEY.hex()}
    return meta


def valid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """Every valid protected case, checked with its keys before it is written."""
    for topic, name, meaning, write, keys in VALID:
        path = write(scratch, name)
        found = validate(path, checksum=True, **keys.arguments())
        if found:
            raise RuntimeError(f"valid case {name} is invalid: {[str(v) for v in found]}")
        with open_vqf(path, passphrase=keys.arguments()["passphrase"]) as vqf:
            want = describe_vqf(vqf)
        yield (
            f"{prefix}/valid/{topic}/{name}",
            _meta("accept", keys, meaning, path),
            {"input.vqf": path.read_bytes()},
            want,
        )


def invalid_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """One invalid case per protected rule, each breaking exactly that rule with its keys."""
    for rule_id in sorted(INVALID):
        write, keys, shows = INVALID[rule_id]
        path = write(scratch, rule_id)
        found = {v.rule for v in validate(path, checksum=True, **keys.arguments())}
        if found != {rule_id}:
            raise RuntimeError(f"case {rule_id} breaks {sorted(found)}, not [{rule_id!r}]")
        rule = RULES[rule_id]
        _, topic, name = rule_id.split(".")
        meta = _meta("reject", keys, f"{rule.meaning}: {shows}", path)
        meta.update({"rule": rule_id, "error_class": rule.error_class,
                     "accepted": [{"rule": rule_id, "error_class": rule.error_class}],
                     "origin": rule.origin, "section": published_section(rule)})  # fmt: skip
        yield f"{prefix}/invalid/{topic}/{name}", meta, {"input.vqf": path.read_bytes()}, None
