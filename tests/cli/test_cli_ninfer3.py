"""`weightfile inspect` and `verify` on the rebuilt sharded .ninfer example (spec/ninfer3.md
§examples)."""

from __future__ import annotations

import json

from strategies.ninfer3 import (
    EXAMPLE_SHARDED,
    TINY_PAYLOAD,
    build_file_set,
    load_example,
    mutated,
    patch,
    tiny_doc,
)

import weightfile
from weightfile.cli import main
from weightfile.spec.ninfer3.rules import RULES


def sharded(tmp_path):
    """The spec/ninfer3.md §examples three-file example with zero payloads, laid out by hand as
    spec/ninfer3.md §entry-header, §volume-header say."""
    doc = load_example(EXAMPLE_SHARDED)
    return build_file_set(tmp_path, "model.ninfer", doc, json_bytes=65_504)


def test_inspect_shows_the_three_files_and_the_spanning_objects(tmp_path, capsys):
    paths = sharded(tmp_path)
    assert main(["inspect", str(paths[0])]) == 0
    out = capsys.readouterr().out
    for p in paths:
        assert p.name in out
    assert "w.embedding (files 0 and 1)" in out and "w.head (files 1 and 2)" in out
    assert main(["inspect", "--json", str(paths[0])]) == 0
    assert json.loads(capsys.readouterr().out)


def test_verify_is_clean_then_names_a_missing_volume(tmp_path, capsys):
    paths = sharded(tmp_path)
    assert main(["verify", str(paths[0])]) == 0
    paths[2].unlink()
    assert main(["verify", str(paths[0])]) == 1
    out = capsys.readouterr().out
    assert any(f"[{rule}]" in out for rule in RULES)


def test_a_continuation_volume_is_not_an_entry(tmp_path, capsys):
    paths = sharded(tmp_path)
    assert main(["inspect", str(paths[1])]) == 1
    assert "continuation volume" in capsys.readouterr().err
    patch(paths[0], 0, b"X")
    assert main(["verify", str(paths[0])]) == 1


def test_verify_lists_every_directory_violation_as_the_api_does(tmp_path, capsys):
    """Three independent faults: three lines with JSON paths, exit 1 (spec/ninfer3.md
    §validation)."""

    def faults(d):
        d["components"]["text"]["target"] = "vision"
        d["bindings"]["p.split"]["parts"][0]["range"] = [3, 9]
        d["uses"][0]["activation_policy"] = "A8"

    (entry,) = build_file_set(tmp_path, "t.ninfer", mutated(tiny_doc(), faults), TINY_PAYLOAD)
    assert main(["verify", str(entry)]) == 1
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines == [f"{v.error_class}: {v}" for v in weightfile.validate(entry)]
    assert len(lines) == 3
    assert 'components["text"].target' in lines[0] and "[ninfer3.components.target]" in lines[0]
    assert (
        'bindings["p.split"].parts[0].range' in lines[1] and "[ninfer3.bindings.range]" in lines[1]
    )
    assert "uses[0].activation_policy" in lines[2] and "[ninfer3.uses.policy]" in lines[2]
    assert "3 violation(s)" in captured.err


def test_run_and_trace_engine_fast_on_ninfer_give_refs_output_and_no_note(tmp_path, capsys):
    """`run` / `trace --engine fast` on a .ninfer file run weightfile.fast.qwen35 (issue 28): the
    reference's tokens and trace bits, and no fallback note on stderr."""
    import numpy as np

    from weightfile.conformance.generate import CORPUS_DIR

    model = CORPUS_DIR / "ninfer3/v2/model/qwen35/moe-q8-fused/model.ninfer"
    outs, traces = {}, {}
    for engine in ("ref", "fast"):
        argv = ["run", str(model), "--token-ids", "3,14,15", "--max-tokens", "3"]
        assert main([*argv, "--engine", engine, "--threads", "2"]) == 0
        outs[engine], err = capsys.readouterr()
        assert "note" not in err
        npz = tmp_path / f"{engine}.npz"
        trace = ["trace", str(model), "--token-ids", "3,14,15", "--out", str(npz)]
        assert main([*trace, "--engine", engine]) == 0
        assert "note" not in capsys.readouterr().err
        traces[engine] = dict(np.load(npz))
    assert outs["fast"] == outs["ref"] and outs["ref"].strip()
    assert traces["fast"].keys() == traces["ref"].keys()
    for name, want in traces["ref"].items():
        assert np.array_equal(traces["fast"][name].view(np.uint8), want.view(np.uint8)), name
