"""weightfile: the reference implementation of the VQF and .ninfer v3 weight containers.

The public API grows with the project; today it opens VQF files:

    import weightfile
    with weightfile.open_vqf("model.vqf") as vqf:
        vqf.header.arch["dim"], [e.name for e in vqf.entries]
        weightfile.validate_vqf("model.vqf", checksum=True)  # [] when valid
"""

from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.validate import validate as validate_vqf
from weightfile.ref.vqf.write import TensorSource, write_vqf
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
    "NotFoundError",
    "TensorSource",
    "UnsupportedError",
    "VQFFile",
    "Violation",
    "WeightfileError",
    "open_vqf",
    "validate_vqf",
    "write_vqf",
]
