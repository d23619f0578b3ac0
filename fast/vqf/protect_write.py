"""The protected-file writers with the C FNV kernel; the same bytes as ref/vqf/protect_write.py.

SM3, HMAC-SM3 and SM4 already run in OpenSSL; the only Python-speed step left in a pass is the
FNV-1a-64 that encrypt and sign check and decrypt writes (spec/vqf.md §fnv-trailer), so that is what
the fast path swaps.
"""

from __future__ import annotations

import functools

from weightfile.fast.backend import FAST
from weightfile.ref.vqf import protect_write as ref

encrypt_vqf = functools.partial(ref.encrypt_vqf, backend=FAST)
decrypt_vqf = functools.partial(ref.decrypt_vqf, backend=FAST)
sign_vqf = functools.partial(ref.sign_vqf, backend=FAST)
protect_vqf = functools.partial(ref.protect_vqf, backend=FAST)
read_private_key = ref.read_private_key
write_private_key = ref.write_private_key

__all__ = [
    "decrypt_vqf",
    "encrypt_vqf",
    "protect_vqf",
    "read_private_key",
    "sign_vqf",
    "write_private_key",
]
