"""`FAST`: the vectorised codecs and the C FNV-1a-64, bit for bit `ref.backend.REFERENCE`.

See ref/backend.py for what a `Backend` carries and why it is passed as a value.
"""

from __future__ import annotations

from weightfile.fast.codecs import vqf as fast_vqf_codecs
from weightfile.fast.codecs.ninfer3 import codec as fast_ninfer_codecs
from weightfile.fast.vqf.fnv1a64 import fnv1a64
from weightfile.ref.backend import Backend

FAST = Backend(
    name="fast",
    vqf_codecs=fast_vqf_codecs,
    ninfer_codecs=fast_ninfer_codecs,
    checksum=fnv1a64,
)
