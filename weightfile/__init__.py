"""weightfile: the reference implementation of the VQF and .ninfer v3 weight containers.

import weightfile
with weightfile.open("model.vqf") as f:        # or a .ninfer entry file
    f.names(), f.decode("q4_q"), f.decode_words("q4_q")
with weightfile.open_vqf("model.vqf") as vqf:  # the container itself: header, directory, views
    vqf.header.arch["dim"], [e.name for e in vqf.entries]
weightfile.validate("model.vqf", checksum=True)  # every Violation of either format; [] when valid
weightfile.encrypt_vqf("plain.vqf", "enc.vqf", b"passphrase")  # also decrypt_vqf, sign_vqf
weightfile.protect_vqf("plain.vqf", "out.vqf", passphrase=b"pw", private_key=key)  # enc, then sign
weightfile.open("enc.vqf", passphrase=b"passphrase")  # authenticated, then decrypted in memory
weightfile.validate("enc.vqf", passphrase=b"passphrase", trusted_pub=bytes.fromhex(pub_hex))
"""

from weightfile.fast.vqf.protect_write import (
    decrypt_vqf,
    encrypt_vqf,
    protect_vqf,
    read_private_key,
    sign_vqf,
    write_private_key,
)
from weightfile.fast.vqf.write import write_vqf  # ref's writer with the C FNV (issue 14)
from weightfile.model_file import NInferModelFile, VQFModelFile, validate
from weightfile.model_file import open_model_file as open
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.ref.vqf.write import TensorSource
from weightfile.spec.errors import (
    ChecksumError,
    InvalidError,
    MalformedError,
    NotFoundError,
    UnsupportedError,
    Violation,
    WeightfileError,
)

__all__ = [
    "ChecksumError",
    "InvalidError",
    "MalformedError",
    "NInferModelFile",
    "NotFoundError",
    "TensorSource",
    "UnsupportedError",
    "VQFFile",
    "VQFModelFile",
    "Violation",
    "WeightfileError",
    "decrypt_vqf",
    "encrypt_vqf",
    "open",
    "open_vqf",
    "protect_vqf",
    "read_private_key",
    "sign_vqf",
    "validate",
    "validate_vqf",
    "write_private_key",
    "write_vqf",
]
