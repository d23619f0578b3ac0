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

from importlib import import_module
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import TYPE_CHECKING, Any

try:
    __version__: str = _dist_version("weightfile")
except PackageNotFoundError:  # a source tree used without installing it
    __version__ = "0+unknown"

#: Public name -> (module, attribute), imported on first use (PEP 562): `import weightfile.cli`
#: for `weightfile --version`, or `weightfile.spec.errors` alone, pulls in neither NumPy nor the
#: readers and writers (issue 34 item 11).
_LAZY = {
    **{n: ("weightfile.fast.vqf.protect_write", n) for n in (
        "decrypt_vqf", "encrypt_vqf", "protect_vqf", "read_private_key", "sign_vqf",
        "write_private_key")},
    **{n: ("weightfile.model_file", n)
       for n in ("NInferModelFile", "VQFModelFile", "validate", "write_vqf")},
    "open": ("weightfile.model_file", "open_model_file"),
    "VQFFile": ("weightfile.ref.vqf.read", "VQFFile"),
    "open_vqf": ("weightfile.ref.vqf.read", "open_vqf"),
    "validate_vqf": ("weightfile.ref.vqf.validate", "validate"),
    "TensorSource": ("weightfile.ref.vqf.write", "TensorSource"),
    **{n: ("weightfile.spec.errors", n) for n in (
        "ChecksumError", "ClosedError", "DestinationExistsError", "InvalidError",
        "MalformedError", "NotFoundError", "UnsupportedError", "Violation", "WeightfileError")},
    "VQFFlag": ("weightfile.spec.vqf.flags", "VQFFlag"),
    "QType": ("weightfile.spec.vqf.qtypes", "QType"),
}  # fmt: skip


def __getattr__(name: str) -> Any:
    """The public names of `_LAZY`, imported when first read (then cached in the module)."""
    if name not in _LAZY:
        raise AttributeError(f"module 'weightfile' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and editors
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
