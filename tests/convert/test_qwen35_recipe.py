"""Recipes, the MTP component and the proposal head of the Qwen3.5 importer (spec/ninfer3.md
§recipes, §qwen35-mtp-names, §qwen35-mtp-import).

The golden inventory is the published one of the official Qwen3.6-27B file (issue 30 and the
NInfer documentation): objects text 771 / mtp 12 / vision 333 / proposal 2 / resources 6 = 1,124;
bindings 963 / 16 / 441 / 2 = 1,422; uses 610 / 9 / 165 / 1 = 785. It is typed here, not
computed: the spec derives its own copy from the recipe (`recipes.official_inventory`), and the
converted file's directory is counted by `inspect`. The checkpoint has the official layer pattern
(64 layers, full attention every 4th, vision depth 27, one MTP layer) at tiny widths
(tests/strategies/qwen35_official.py), written straight as safetensors.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from strategies.qwen35_official import TEXT, write_official

from weightfile.cli import main
from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.model_file import open_model_file, validate
from weightfile.spec.errors import InvalidError, UnsupportedError
from weightfile.spec.ninfer3.recipes import official_inventory

#: The published Qwen3.6-27B counts (the independent golden).
PUBLISHED = {
    "text": (771, 963, 610),
    "mtp": (12, 16, 9),
    "vision": (333, 441, 165),
    "proposal": (2, 2, 1),
    "resources": (6, 0, 0),
}
PUBLISHED_TOTALS = (1124, 1422, 785)
ROWS = 32


def ids_file(folder: Path, ids: list[int]) -> Path:
    path = folder / "ids.txt"
    path.write_text("".join(f"{i}\n" for i in ids))
    return path


def frequency_order(vocab: int) -> list[int]:
    """A fixed permutation of the ids: the 'most frequent first' list of the tests."""
    return [int(i) for i in np.random.default_rng(5).permutation(vocab)]


def specials(folder: Path) -> list[int]:
    doc = json.loads((folder / "tokenizer.json").read_text())
    return sorted(t["id"] for t in doc["added_tokens"] if t["special"])


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    folder = tmp_path_factory.mktemp("official")
    tensors = write_official(folder)
    vocab = tensors["lm_head.weight"].shape[0]
    ids = ids_file(folder, frequency_order(vocab))
    out = folder / "official.ninfer"
    argv = ["convert", str(folder), str(out), "--recipe", "qwen3_6_27b", "--proposal-ids",
            str(ids), "--proposal-rows", str(ROWS)]  # fmt: skip
    assert main(argv) == 0
    return folder, out, tensors


def inventory_of(path: Path, capsys) -> dict[str, dict[str, int]]:
    capsys.readouterr()
    assert main(["inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["inventory"]


def test_the_spec_derives_the_published_inventory():
    inv = official_inventory()
    assert {c: (n.objects, n.bindings, n.uses) for c, n in inv.items()} == PUBLISHED
    totals = tuple(
        sum(getattr(n, k) for n in inv.values()) for k in ("objects", "bindings", "uses")
    )
    assert totals == PUBLISHED_TOTALS


def test_convert_with_the_recipe_yields_the_published_inventory(official, capsys):
    _, out, _ = official
    assert validate(out) == []
    inv = inventory_of(out, capsys)
    assert {c: (n["objects"], n["bindings"], n["uses"]) for c, n in inv.items()} == PUBLISHED
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    assert "total      1,124    1,422     785" in text


def test_the_recipe_packs_and_formats_as_the_official_file(official):
    _, out, _ = official
    with open_model_file(out) as f:
        d = f.artifact.directory
        fmt = {o.id: o.format for o in d.objects}

        def parent(name: str) -> str:
            return _object(d, name)

        same = [
            ("text/layers/3/attention/query", "text/layers/3/attention/key", "q4_g64_fp16"),
            ("text/layers/3/attention/gate", "text/layers/3/attention/value", "q5_g64_fp16"),
            ("text/layers/0/gdn/query", "text/layers/0/gdn/key", "q4_g64_fp16"),
            ("text/layers/0/gdn/value", "text/layers/0/gdn/z", "q5_g64_fp16"),
            ("text/layers/0/mlp/gate", "text/layers/0/mlp/up", None),
            ("mtp/layers/0/attention/query", "mtp/layers/0/attention/value", "q8_g32_fp16"),
            ("vision/layers/26/attention/query", "vision/layers/26/attention/value", "q4_g64_fp16"),
            ("vision/layers/0/attention/query_bias", "vision/layers/0/attention/key_bias", "bf16"),
        ]
        for a, b, want in same:
            assert parent(a) == parent(b), (a, b)
            assert want is None or fmt[parent(a)] == want, (a, fmt[parent(a)])
        apart = [("text/layers/0/gdn/a_projection", "text/layers/0/gdn/b_projection")]
        for a, b in apart:
            assert parent(a) != parent(b)
        assert fmt[parent("text/output_head")] == "q6_g64_fp16"
        assert fmt[parent("proposal/head")] == "q4_g64_fp16"
        assert fmt[parent("vision/merger/fc1")] == "q8_g32_fp16"
        assert d.components["mtp"].config == {"architectures": ["Qwen3_5MTP"]}
        assert d.components["mtp"].target == "text"


def _object(d, name: str) -> str:
    b = d.bindings[name]
    return b.parts[0].object_id if b.parts else b.object_id


def test_format_overrides_every_matrix_of_a_recipe(tmp_path, capsys):
    write_official(tmp_path, layers=8, depth=2)
    out = tmp_path / "q8.ninfer"
    argv = [
        "convert",
        str(tmp_path),
        str(out),
        "--recipe",
        "qwen3_6_27b",
        "--format",
        "q8_g32_fp16",
    ]
    assert main(argv) == 0
    with open_model_file(out) as f:
        d = f.artifact.directory
        matrices = {_object(d, u.parameter) for u in d.uses}
        assert {o.format for o in d.objects if o.id in matrices} == {"q8_g32_fp16"}
        # the packing is the recipe's still: {Q, K} one parent, {gate, V} another
        assert _object(d, "text/layers/3/attention/query") == _object(
            d, "text/layers/3/attention/key"
        )
        assert _object(d, "text/layers/3/attention/query") != _object(
            d, "text/layers/3/attention/gate"
        )


def q_rows(q_proj: np.ndarray, which: int) -> np.ndarray:
    """transformers' q_proj: per head D query rows then D gate rows."""
    d = TEXT["head_dim"]
    heads = q_proj.shape[0] // (2 * d)
    return q_proj.reshape(heads, 2, d, -1)[:, which].reshape(heads * d, -1)


@pytest.mark.parametrize(("moe", "fused"), [(False, False), (True, False), (True, True)])
def test_mtp_weights_are_kept_exactly(tmp_path, moe, fused):
    t = write_official(tmp_path, layers=4, depth=0, moe=moe, fused=fused)
    out = import_checkpoint(tmp_path, tmp_path / "m.ninfer", fmt="bf16")[0]
    m = "mtp.layers.0."
    want = {
        "mtp/input_projection": t["mtp.fc.weight"],
        "mtp/embedding_norm": t["mtp.pre_fc_norm_embedding.weight"],
        "mtp/hidden_norm": t["mtp.pre_fc_norm_hidden.weight"],
        "mtp/final_norm": t["mtp.norm.weight"],
        "mtp/layers/0/attention/query": q_rows(t[m + "self_attn.q_proj.weight"], 0),
        "mtp/layers/0/attention/gate": q_rows(t[m + "self_attn.q_proj.weight"], 1),
        "mtp/layers/0/attention/value": t[m + "self_attn.v_proj.weight"],
        "mtp/layers/0/attention/key_norm": t[m + "self_attn.k_norm.weight"],
        "mtp/layers/0/post_attention_norm": t[m + "post_attention_layernorm.weight"],
    }
    if not moe:
        want["mtp/layers/0/mlp/down"] = t[m + "mlp.down_proj.weight"]
    elif fused:
        ir = t[m + "mlp.experts.gate_up_proj"].shape[1] // 2
        want["mtp/layers/0/moe/experts/3/up"] = t[m + "mlp.experts.gate_up_proj"][3, ir:]
        want["mtp/layers/0/moe/experts/1/down"] = t[m + "mlp.experts.down_proj"][1]
    else:
        want["mtp/layers/0/moe/experts/2/gate"] = t[m + "mlp.experts.2.gate_proj.weight"]
        want["mtp/layers/0/moe/shared_score"] = t[m + "mlp.shared_expert_gate.weight"]
    with open_model_file(out) as f:
        d = f.artifact.directory
        arch = "Qwen3_5MoeMTP" if moe else "Qwen3_5MTP"
        assert d.components["mtp"].config == {"architectures": [arch]}
        for name, values in want.items():
            np.testing.assert_array_equal(f.decode(name), values, err_msg=name)
        assert ("text/output_head", "mtp/final_hidden") in {(u.parameter, u.input) for u in d.uses}
    assert validate(out) == []


def test_the_proposal_head_gathers_the_most_frequent_rows(tmp_path):
    t = write_official(tmp_path, layers=4, depth=0)
    vocab = t["lm_head.weight"].shape[0]
    order = frequency_order(vocab)
    special = specials(tmp_path)
    path = ids_file(tmp_path, order)
    out = import_checkpoint(
        tmp_path, tmp_path / "p.ninfer", fmt="bf16", proposal_ids=path, proposal_rows=ROWS
    )[0]
    # by hand: the first ROWS - |specials| non-special ids in list order, specials where met,
    # the unmet specials after them, ascending
    budget, chosen = ROWS - len(special), []
    for i in order:
        if i in special:
            chosen.append(i)
        elif budget:
            chosen.append(i)
            budget -= 1
        if not budget and set(special) <= set(chosen):
            break
    chosen += sorted(set(special) - set(chosen))
    with open_model_file(out) as f:
        ids = f.decode("proposal/token_ids")
        assert ids.dtype == np.int32
        assert ids.tolist() == chosen and len(chosen) == ROWS
        np.testing.assert_array_equal(f.decode("proposal/head"), t["lm_head.weight"][chosen])
        assert f.artifact.directory.components["text"].proposal.rows == ROWS
    assert validate(out) == []


def bad_lists(vocab: int, special: list[int]) -> dict[str, tuple[str, int]]:
    """name -> (the file's text, rows)."""
    good = "".join(f"{i}\n" for i in range(vocab))
    return {
        "not_a_number": ("3\n4\nfour\n", ROWS),
        "negative": ("3\n-4\n", ROWS),
        "two_ids_on_a_line": ("3 4\n", ROWS),
        "empty_line": ("3\n\n4\n", ROWS),
        "twice": ("3\n4\n3\n", ROWS),
        "outside_the_domain": (f"3\n{vocab}\n", ROWS),
        "rows_above_vocab": (good, vocab + 1),
        "rows_below_specials": (good, len(special) - 1),
        "too_short": ("3\n4\n5\n", ROWS),
    }


@pytest.mark.parametrize(
    "case",
    ["not_a_number", "negative", "two_ids_on_a_line", "empty_line", "twice", "outside_the_domain",
     "rows_above_vocab", "rows_below_specials", "too_short"],
)  # fmt: skip
def test_a_bad_frequency_list_is_a_typed_error(tmp_path, case):
    t = write_official(tmp_path, layers=4, depth=0)
    vocab = t["lm_head.weight"].shape[0]
    text, rows = bad_lists(vocab, specials(tmp_path))[case]
    (tmp_path / "ids.txt").write_text(text)
    with pytest.raises(InvalidError) as exc:
        import_checkpoint(
            tmp_path, tmp_path / "x.ninfer", proposal_ids=tmp_path / "ids.txt", proposal_rows=rows
        )
    assert exc.value.rule == "qwen35.import.proposal"
    if case in ("not_a_number", "twice", "outside_the_domain"):
        assert exc.value.path.startswith("ids.txt:") and exc.value.offset is not None
    assert not (tmp_path / "x.ninfer").exists()


def test_a_proposal_head_needs_mtp_weights_and_both_options(tmp_path):
    write_official(tmp_path, layers=4, depth=0, mtp=False)
    path = ids_file(tmp_path, list(range(50)))
    with pytest.raises(InvalidError, match="no mtp") as exc:
        import_checkpoint(tmp_path, tmp_path / "x.ninfer", proposal_ids=path, proposal_rows=8)
    assert exc.value.rule == "qwen35.import.proposal"
    with pytest.raises(InvalidError) as exc:
        import_checkpoint(tmp_path, tmp_path / "x.ninfer", proposal_ids=path)
    assert exc.value.rule == "qwen35.import.proposal"
    # without MTP weights there is no mtp component, and no ignored MTP tensor either
    out = import_checkpoint(tmp_path, tmp_path / "t.ninfer", recipe="qwen3_6_27b")[0]
    with open_model_file(out) as f:
        assert set(f.artifact.directory.components) == {"text"}


def test_mtp_of_two_layers_and_unknown_recipes_are_refused(tmp_path):
    write_official(tmp_path, layers=4, depth=0)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["text_config"]["mtp_num_hidden_layers"] = 2
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(UnsupportedError) as exc:
        import_checkpoint(tmp_path, tmp_path / "x.ninfer")
    assert exc.value.rule == "qwen35.import.mtp"
    with pytest.raises(InvalidError) as exc:
        import_checkpoint(tmp_path, tmp_path / "x.ninfer", recipe="no_such_recipe")
    assert exc.value.rule == "qwen35.import.recipe"
