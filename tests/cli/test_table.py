"""The one table printer (weightfile/_table.py): the exact text of each shape, written out by
hand, and the proof that inspect (both formats) and bench draw with it."""

from __future__ import annotations

import inspect as pyinspect

from weightfile import _table
from weightfile.bench import table as bench_table
from weightfile.commands import inspect as inspect_command


def test_aligned_pads_right_aligns_and_strips():
    lines = _table.aligned(["#", "name", "bytes"], [["0", "a", "1,024"], ["10", "long.name", "8"]],
                           right={0, 2})  # fmt: skip
    assert lines == [
        "   #  name       bytes",
        "   0  a          1,024",
        "  10  long.name      8",
    ]


def test_aligned_with_a_rule_under_the_header():
    lines = _table.aligned(["id", "kind"], [["w.a", "tensor"]], rule=True)
    assert lines == ["  id   kind", "  ---  ------", "  w.a  tensor"]
    assert _table.aligned(["id", "kind"], [], rule=True) == ["  id  kind", "  --  ----"]


def test_markdown_is_llama_bench_shaped():
    lines = _table.markdown(["model", "t/s"], [["tiny", "12.50 ± 0.10"]], right={1})
    assert lines == [
        "| model |          t/s |",
        "|-------|-------------:|",
        "| tiny  | 12.50 ± 0.10 |",
    ]


def test_two_columns():
    assert _table.two_columns([("machine", "x86_64"), ("file size", "1.0 MB")]) == [
        "machine    x86_64",
        "file size  1.0 MB",
    ]


def test_inspect_and_bench_draw_with_it():
    """No second table printer: the renderers call _table, and ref/ formats nothing."""
    from weightfile.ref.ninfer3 import describe as ninfer_describe
    from weightfile.ref.vqf import describe as vqf_describe

    assert "aligned(" in pyinspect.getsource(inspect_command.format_vqf)
    for section in ("files", "objects", "bindings_and_uses"):  # format_ninfer3's tables
        assert "aligned(" in pyinspect.getsource(getattr(inspect_command, f"_ninfer3_{section}"))
    assert "markdown(" in pyinspect.getsource(bench_table.format_md)
    assert "two_columns(" in pyinspect.getsource(bench_table.format_report)
    for module in (vqf_describe, ninfer_describe):
        assert not hasattr(module, "format_text") and ".ljust(" not in pyinspect.getsource(module)
