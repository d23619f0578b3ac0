"""Readable VQF codecs (vqf.md §5-§6), one module per registry name; the oracle for fast/.

Every codec module (named as in spec/codecs/vqf/registry.CODECS: f32, f16, q8_0, q4_0, q4i8, g256,
q8_0_8x8, q8_0_4x4, q4_0_4x4, q4_0_8x8l, g256_8x8, g256_4x4) defines

* `encode(values, rows, cols, *, mode=...) -> bytes` -- float32 values in logical row-major order;
  `mode` is one of `CODECS[name].modes` (the default first: "kestrel" for the quantisers, "rne"
  for f16). Quantisers refuse NaN/Inf (InvalidError, rule vqf.codec.<name>.finite_input).
* `decode(payload, rows, cols) -> np.ndarray` -- float32 [rows, cols] in plain row-major order
  (tiled layouts come out untiled).
* `decode_words(payload, rows, cols) -> dict[str, np.ndarray]` -- the logical words: for f32/f16
  {"bits": uint32/uint16 [rows, cols]}; for the Q8_0-layout codecs (q8_0, q4i8, g256 and tilings)
  {"codes": int8 [rows, cols], "scales": uint16 f16 bits}; for the Q4 codecs {"codes": uint8
  nibbles [rows, cols] (value = (code - 8)·d), "scales": uint16}. Scales are [rows, cols/32] when
  cols % 32 == 0, else one per block in flat order.
* `validate(payload, rows, cols) -> list[Violation]` -- every broken rule, with rule id
  vqf.codec.<name>.<rule> and the byte offset relative to the payload start.

decode/decode_words raise MalformedError for a bad shape (rule ….shape / ….geometry) or a payload
whose length is not registry.payload_size (rule ….length, offset = where the data stops matching).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from weightfile.spec.codecs.vqf.registry import CODECS


def codec(name: str) -> ModuleType:
    """The codec module for a registry name (KeyError for a name that is not registered)."""
    if name not in CODECS:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")
