"""llama.cpp's MTP drafts against ours (issue 30 item 7, spec/ninfer3.md §qwen35-gguf-mtp): the
tiny dense Qwen3.5 checkpoint with an MTP block, imported as bf16 and exported to GGUF; llama.cpp's
MTP context (commit 0c1e570, libllama through ctypes) fed our target's hidden states drafts the
same K = 3 greedy tokens as `fast.qwen35.mtp`, draft logits within 2% of the largest (the bf16
tolerance of the target-logit cross-check); on the q8 file's F32 twin with K/V in binary32 all
three comparisons give our drafts, draft logits within the twin tolerance. Skipped when llama.cpp
is not built (it is not in CI): build it with `benchmarks/vs_llamacpp.py --build`. The
benchmark's own drafts are checked against `run --spec mtp`'s first round without llama.cpp."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from .test_llamacpp_build_dir import load

script = load("llamacpp_crosscheck")
LLAMA = script.default_llama_dir()


needs_llama = pytest.mark.skipif(
    not (LLAMA / "libllama.so").exists() or not script.default_bindings().exists(),
    reason=f"llama.cpp is not built in {LLAMA} (benchmarks/vs_llamacpp.py --build)",
)


@needs_llama
def test_mtp_drafts_equal_llamacpp_given_the_same_hidden_states(tmp_path):
    L = script.bindings(LLAMA, script.default_bindings())
    args = argparse.Namespace(llama_dir=LLAMA, seed=0)
    nf, gguf = script.qwen35_files(tmp_path, "qwen35 bf16", False, "bf16", args.seed)
    prompts = [[5, 17, 100, 33, 250, 9], [120, 7, 64, 3, 299, 41, 88, 12]]
    rows = script.mtp_case(
        L, script.MtpLib(LLAMA), script.our_mtp(nf, prompts, 3), gguf, prompts, 3
    )
    assert all(rows["first"])
    for r in rows["same h"] + rows["own"]:
        assert r["ours"] == r["llama.cpp"]
    assert max(r["max_rel"] for r in rows["same h"]) < 0.02


@needs_llama
def test_mtp_drafts_equal_llamacpp_on_the_f32_twin(tmp_path):
    """The q8 dense file, where llama.cpp's own arithmetic (activations quantised to Q8_0) moves
    the draft logits by several % and flips drafts: on its F32 twin (the same values, MTP block
    included) run with K/V in binary32, as the benchmark judges, all three comparisons give our
    drafts, logits within the twin tolerance."""
    L = script.bindings(LLAMA, script.default_bindings())
    nf, gguf = script.qwen35_files(tmp_path, "qwen35 q8", False, "q8_g32_fp16", 0)
    twin = script.dequantized_twin(gguf, tmp_path / "twin.gguf")
    prompts = [[5, 17, 100, 33, 250, 9], [120, 7, 64, 3, 299, 41, 88, 12]]
    mine = script.our_mtp(nf, prompts, 3)
    rows = script.mtp_case(L, script.MtpLib(LLAMA), mine, twin, prompts, 3, f32_cache=True)
    assert all(rows["first"]) and all(len(rows[k]) == 2 for k in script.MTP_KINDS)
    for r in rows["same h"] + rows["own"] + rows["driver"]:
        assert r["ours"] == r["llama.cpp"]
        assert r["max_rel"] <= script.SAME_VALUES_TOL
    assert script.mtp_judge(rows)


def test_mtp_judge_fails_on_a_different_draft_a_far_logit_or_a_left_out_prompt():
    """The MTP verdict (no llama.cpp needed): each failure mode turns it to False."""

    def row(agree=3, rel=1e-4):
        return {"agree": agree, "k": 3, "max_rel": rel}

    def rows(**change):
        base = {"first": [True, True], **{k: [row(), row()] for k in script.MTP_KINDS}}
        return base | change

    assert script.mtp_judge(rows())
    assert not script.mtp_judge(rows(own=[row(), row(agree=2)]))
    assert not script.mtp_judge(rows(driver=[row(rel=2 * script.SAME_VALUES_TOL), row()]))
    assert not script.mtp_judge(rows(first=[True, False], own=[row()], driver=[row()]))


def test_our_side_is_the_first_round_of_run_spec_mtp(tmp_path):
    """The benchmark's drafts in our alignment are `run --spec mtp`'s first round, bit for bit
    (so the comparison is about what `run` drafts); no llama.cpp needed."""
    from strategies.qwen35_official import write_official

    from weightfile.cli import main

    write_official(tmp_path, layers=4, depth=0, moe=False, fused=False, seed=0)
    nf, out = tmp_path / "m.ninfer", tmp_path / "r.npz"
    assert main(["convert", str(tmp_path), str(nf), "--format", "bf16", "--quiet"]) == 0
    prompt = [5, 17, 100, 33, 250, 9]
    argv = ["run", str(nf), "--engine", "fast", "--spec", "mtp", "--draft-tokens", "3",
            "--token-ids", ",".join(map(str, prompt)), "--max-tokens", "5", "--save-logits",
            str(out)]  # fmt: skip
    assert main(argv) == 0
    arrays = np.load(out)
    (mine,) = script.our_mtp(nf, [prompt], 3)
    assert mine["own"][0] == arrays["mtp.round0.draft_tokens"].tolist()
    want = arrays["mtp.round0.draft_logits"].view(np.uint32)
    assert np.array_equal(mine["own"][1].view(np.uint32), want)
    # the driver alignment has one more entry first: a different MTP cache, other logits
    assert not np.array_equal(mine["driver"][1], mine["own"][1])
