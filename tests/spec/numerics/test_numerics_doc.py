"""numerics.md's worked vectors are what the reference computes (spec/numerics.md §exp)."""

from __future__ import annotations

import re
from pathlib import Path

from weightfile.ref.numerics.exp import exp
from weightfile.ref.numerics.f32 import f32_bits, f32_from_bits

DOC = Path(__file__).resolve().parents[3] / "spec" / "numerics.md"
ROW = re.compile(r"^\| `0x([0-9A-F]{8})` \| [^|]+ \| `0x([0-9A-F]{8})` \|", re.MULTILINE)


def test_exp_vectors_match_the_reference() -> None:
    text = DOC.read_text()
    block = text.split("<!-- exp-vectors:begin -->")[1].split("<!-- exp-vectors:end -->")[0]
    rows = ROW.findall(block)
    assert len(rows) >= 10
    for x_hex, y_hex in rows:
        assert f32_bits(exp(f32_from_bits(int(x_hex, 16)))) == int(y_hex, 16), x_hex
