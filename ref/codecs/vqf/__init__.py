"""Readable VQF codecs (spec/vqf.md §encodings, §quantisation), one per registry name; the oracle
for fast/.

`codec(name)` gives the codec of a registry name (spec/codecs/vqf/registry.CODECS). The untiled
ones (f32, f16, q8_0, q4_0, q4i8, g256) are modules of this package; the tiled layouts (q8_0_8x8,
q8_0_4x4, q4_0_4x4, q4_0_8x8l, g256_8x8, g256_4x4: the rows of spec/codecs/vqf/layouts.TILED) are
`tiling.TiledCodec` objects that run their base module on the untiled bytes. Every codec defines

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
from functools import cache

from weightfile.ref.codecs.vqf.tiling import CodecModule, TiledCodec
from weightfile.spec.codecs.vqf.registry import CODECS


@cache
def codec(name: str) -> CodecModule:
    """The codec for a registry name (KeyError for a name that is not registered)."""
    if name not in CODECS:
        raise KeyError(name)
    if CODECS[name].tiling is not None:
        return TiledCodec(name)
    # Lazy on purpose: a module of this very package, found by its registry name, so no edge
    # leaves the package and a caller decoding one codec does not import the others.
    return importlib.import_module(f"{__name__}.{name}")
