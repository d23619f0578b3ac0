"""The protected corpus cases (vqf/v2) re-derived with the OpenSSL command line, independently
of weightfile's reader and of the `cryptography` bindings it uses (conformance/README.md, "Where
the expected values come from").

For every valid ENC case: the key material is `openssl dgst -sm3` of the case's passphrase
(spec/vqf.md §key-derivation), the data region is decrypted by `openssl enc -d -sm4-ctr` (a
big-endian 128-bit counter from enc_iv, spec/vqf.md §sm4-hmac), every tensor's plaintext must
have the SHA-256 the case's description gives, and the stored tag must be `openssl dgst -sm3
-mac HMAC` over H′ ‖ directory ‖ ciphertext. The offsets are the spec's numbers, read here by
hand, not through the project's header schema.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from weightfile.conformance.generate import CORPUS_DIR

HEADER, ENTRY = 448, 64  # spec/vqf.md §header, §directory (current layout)
N_TENSORS, DATA_OFFSET, FILE_LEN, ENC_IV, SIG = 12, 200, 208, 216, 248  # byte offsets
CASES = sorted(
    p.parent
    for p in CORPUS_DIR.glob("vqf/v2/valid/*/*/case.json")
    if "passphrase" in json.loads(p.read_text()).get("keys", {})
)


def openssl(*args: str, data: bytes) -> bytes:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command line")
    return subprocess.run(["openssl", *args], input=data, capture_output=True, check=True).stdout


@pytest.mark.parametrize("folder", CASES, ids=lambda p: p.name)
def test_openssl_decrypts_and_tags_the_protected_case(folder: Path) -> None:
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    blob = (folder / case["input"]).read_bytes()
    (n,) = struct.unpack_from("<I", blob, N_TENSORS)
    data_offset, file_len = struct.unpack_from("<QQ", blob, DATA_OFFSET)
    assert (str(data_offset), str(file_len)) == (
        want["header"]["data_offset"],
        want["header"]["file_len"],
    )
    mat = openssl("dgst", "-sm3", "-binary", data=case["keys"]["passphrase"].encode())
    key, mac_key = mat[:16], mat[16:]
    ciphertext = blob[data_offset:file_len]
    iv = blob[ENC_IV : ENC_IV + 16]
    plain = openssl("enc", "-d", "-sm4-ctr", "-K", key.hex(), "-iv", iv.hex(), data=ciphertext)
    assert len(plain) == len(ciphertext) and plain != ciphertext
    for t in want["tensors"]:
        start = int(t["offset"]) - data_offset
        payload = plain[start : start + int(t["bytes"])]
        assert hashlib.sha256(payload).hexdigest() == t["sha256"], t["name"]
    h = bytearray(blob[:HEADER])
    h[FILE_LEN : FILE_LEN + 8] = bytes(8)
    h[SIG:HEADER] = bytes(HEADER - SIG)
    message = bytes(h) + blob[HEADER : HEADER + ENTRY * n] + ciphertext
    tag = openssl("dgst", "-sm3", "-mac", "HMAC", "-macopt", f"hexkey:{mac_key.hex()}",
                  "-binary", data=message)  # fmt: skip
    assert tag == blob[file_len : file_len + 32]
    assert tag.hex() == want["header"]["hmac_sm3"]


def test_both_encrypted_cases_are_checked() -> None:
    assert [p.name for p in CASES] == ["enc", "enc-signed"]
