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
with weightfile.open("model.vqf") as f:        # also a read-only mapping: keys(), in, [], len
    f.metadata(), f["attn_norm"], "q4_q" in f
weightfile.write_vqf("out.vqf", arch=arch, tensors=[
    weightfile.TensorSource.from_array("q4_q", w, qtype=weightfile.QType.Q4_0, flags=flags)])
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from weightfile.fast.vqf.protect_write import (
    decrypt_vqf,
    encrypt_vqf,
    protect_vqf,
    read_private_key,
    sign_vqf,
    write_private_key,
)
from weightfile.model_file import NInferModelFile, VQFModelFile, validate, write_vqf
from weightfile.model_file import open_model_file as open
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.ref.vqf.write import TensorSource
from weightfile.spec.errors import (
    ChecksumError,
    ClosedError,
    DestinationExistsError,
    InvalidError,
    MalformedError,
    NotFoundError,
    UnsupportedError,
    Violation,
    WeightfileError,
)
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

try:
    __version__: str = _dist_version("weightfile")
except PackageNotFoundError:  # a source tree used without installing it
    __version__ = "0+unknown"

__all__ = [
    "ChecksumError",
    "ClosedError",
    "DestinationExistsError",
    "InvalidError",
    "MalformedError",
    "NInferModelFile",
    "NotFoundError",
    "QType",
    "TensorSource",
    "UnsupportedError",
    "VQFFile",
    "VQFFlag",
    "VQFModelFile",
    "Violation",
    "WeightfileError",
    "__version__",
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
