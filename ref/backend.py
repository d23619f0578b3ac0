"""`Backend`: what a caller picks when it picks an engine, as one value; `REFERENCE`, the oracle's.

A backend carries the three things the two engines (the readable reference, the vectorised fast
path) differ in and callers choose between: the VQF codecs (spec/vqf.md §encodings, §quantisation),
the `.ninfer` v3 codecs (spec/ninfer3.md §formats, §layouts) and the FNV-1a-64 file checksum
(spec/vqf.md §fnv-trailer). Both produce the same bits (tests/differential). `fast/backend.py`
defines `FAST`; `weightfile/backends.py` maps the CLI's `--engine ref|fast` to one of the two.

The value is passed, never a module name: every edge stays an import that readers, tools and
tests/test_layering.py see, and the oracle reaches the fast codecs only when a caller hands it FAST.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from weightfile.ref.codecs import vqf as reference_vqf_codecs
from weightfile.ref.codecs.ninfer3 import codec as reference_ninfer_codecs
from weightfile.ref.codecs.ninfer3.codec import Codec
from weightfile.ref.codecs.vqf.tiling import CodecModule
from weightfile.ref.vqf.fnv1a64 import fnv1a64

#: FNV-1a-64 continued from `h` over `data` (spec/vqf.md §fnv-trailer).
Checksum = Callable[[bytes | bytearray | memoryview, int], int]


class VQFCodecs(Protocol):
    """A package of VQF codecs: `ref.codecs.vqf` or `fast.codecs.vqf`."""

    def codec(self, name: str) -> CodecModule:
        """The codec of a registry name (spec/codecs/vqf/registry.CODECS): f16, q8_0, q4_0_8x8l…"""
        ...


class NInferCodecs(Protocol):
    """A `.ninfer` v3 codec lookup: `ref.codecs.ninfer3.codec` or `fast.codecs.ninfer3.codec`."""

    def get_codec(self, format_name: str | None, layout: str) -> Codec:
        """The bound codec of one registered (format, layout) pair (spec/ninfer3.md
        §layout-registry)."""
        ...


@dataclass(frozen=True)
class Backend:
    """One engine's codecs and checksum; REFERENCE and fast.backend.FAST are the two."""

    name: str  # "ref" or "fast": the CLI's --engine value, printed in reports
    vqf_codecs: VQFCodecs
    ninfer_codecs: NInferCodecs
    checksum: Checksum

    def __repr__(self) -> str:
        return f"Backend({self.name!r})"


REFERENCE = Backend(
    name="ref",
    vqf_codecs=reference_vqf_codecs,
    ninfer_codecs=reference_ninfer_codecs,
    checksum=fnv1a64,
)
