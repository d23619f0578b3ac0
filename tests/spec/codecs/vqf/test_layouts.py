"""The tiled-layout table is the registry's one source for tiled layouts; every row is reachable.

spec/codecs/vqf/layouts.TILED holds one row per layout of spec/vqf.md §g256, §q8-tiled, §q4-0,
§q4-8x8l; the registry entry, the geometry and codec_for's choice of a tiled layout all come from
that row.
"""

from __future__ import annotations

import pytest

from weightfile.spec.codecs.vqf.blocks import QK
from weightfile.spec.codecs.vqf.layouts import TILED, TiledLayout
from weightfile.spec.codecs.vqf.registry import CODECS, codec_for
from weightfile.spec.vqf.flags import VQFFlag

ROWS = list(TILED.values())
#: The header flags that make the untiled base itself (spec/vqf.md §q8-0, §g256, §q4-0).
BASE_FLAGS = {"q8_0": 0, "q4_0": 0, "g256": VQFFlag.G256}


def test_the_registry_lists_exactly_the_table_rows_after_the_untiled_codecs() -> None:
    tiled = [name for name, c in CODECS.items() if c.tiling is not None]
    assert tiled == list(TILED)
    assert all(CODECS[t.base].tiling is None for t in ROWS)  # a row never tiles a tiled layout


@pytest.mark.parametrize("t", ROWS, ids=list(TILED))
def test_a_registry_entry_is_its_row(t: TiledLayout) -> None:
    c, base = CODECS[t.name], CODECS[t.base]
    assert (c.base, c.qtype, c.tiling, c.group_record, c.block, c.modes) == (
        t.base, t.qtype, t.tiling, t.group_record, base.block, base.modes,
    )  # fmt: skip
    assert (c.row_group, c.cols_multiple) == (t.tiling.group_rows, QK)
    assert base.block is not None
    assert t.tiling.block_payload_bytes == base.block.sizeof() - 2  # the base block after its scale


@pytest.mark.parametrize("t", ROWS, ids=list(TILED))
def test_every_row_is_what_its_selector_picks_and_only_then(t: TiledLayout) -> None:
    flags = BASE_FLAGS[t.base] | (t.flag or 0)
    name = t.names + "x"
    assert codec_for(t.qtype, flags, name, q8_tiling=t.q8_tiling) == t.name
    if t.flag is not None or t.q8_tiling is not None:  # without its selector: the base layout
        assert codec_for(t.qtype, BASE_FLAGS[t.base], name) == t.base
