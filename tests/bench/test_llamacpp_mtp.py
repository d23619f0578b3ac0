"""llama.cpp's MTP drafts against ours (issue 30 item 7, spec/ninfer3.md §qwen35-gguf-mtp): the
tiny dense Qwen3.5 checkpoint with an MTP block, imported as bf16 and exported to GGUF; llama.cpp's
MTP context (commit 0c1e570, libllama through ctypes) fed our target's hidden states drafts the
same K = 3 greedy tokens as `fast.qwen35.mtp`, draft logits within 2% of the largest (the bf16
tolerance of the target-logit cross-check). Skipped when llama.cpp is not built (it is not in
CI): build it with `benchmarks/vs_llamacpp.py --build`."""

from __future__ import annotations

import argparse

import pytest

from .test_llamacpp_build_dir import load

script = load("llamacpp_crosscheck")
LLAMA = script.default_llama_dir()


@pytest.mark.skipif(
    not (LLAMA / "libllama.so").exists() or not script.default_bindings().exists(),
    reason=f"llama.cpp is not built in {LLAMA} (benchmarks/vs_llamacpp.py --build)",
)
def test_mtp_drafts_equal_llamacpp_given_the_same_hidden_states(tmp_path):
    L = script.bindings(LLAMA, script.default_bindings())
    args = argparse.Namespace(llama_dir=LLAMA, seed=0)
    nf, gguf = script.qwen35_files(tmp_path, "qwen35 bf16", False, "bf16", args.seed)
    prompts = [[5, 17, 100, 33, 250, 9], [120, 7, 64, 3, 299, 41, 88, 12]]
    rows = script.mtp_case(L, script.MtpLib(LLAMA), nf, gguf, prompts, 3)
    assert all(rows["first"])
    for r in rows["same h"] + rows["own"]:
        assert r["ours"] == r["llama.cpp"]
    assert max(r["max_rel"] for r in rows["same h"]) < 0.02
