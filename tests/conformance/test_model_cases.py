"""The model cases' expected answers agree with what can be derived without the forward pass:
the embedding activation from numpy's float16 decode of token_embed, and the greedy tokens from
the logits rows (spec/vqf.md §f16, spec/numerics.md; README "Model cases")."""

from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest

from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import case_ids

MODEL_CASES = case_ids(pattern="vqf/*/model/*")
#: The greedy ones: the sampled cases of vqf/v5 draw their tokens (test_new_case_kinds.py)
GREEDY_CASES = [c for c in MODEL_CASES if "-sampled-" not in c]


def token_embed(blob: bytes) -> tuple[int, np.ndarray]:
    """The token_embed entry, read with struct from the spec/vqf.md §entry directory, decoded by
    numpy."""
    n = struct.unpack_from("<I", blob, 12)[0]
    for i in range(n):
        at = 448 + 64 * i
        name = blob[at : at + 32].split(b"\0")[0]
        qtype, rows, cols = struct.unpack_from("<3I", blob, at + 32)
        offset, size = struct.unpack_from("<2Q", blob, at + 48)
        if name == b"token_embed":
            raw = blob[offset : offset + size]
            dtype = "<f2" if qtype == 5 else "<f4"
            return qtype, np.frombuffer(raw, dtype=dtype).astype(np.float32).reshape(rows, cols)
    raise AssertionError("no token_embed")


def test_there_are_model_cases_for_q8_q4_and_f32():
    assert len(MODEL_CASES) >= 3


@pytest.mark.parametrize("cid", MODEL_CASES)
def test_embed_digest_is_the_numpy_decoded_rows(cid):
    folder = CORPUS_DIR / cid
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    _, embed = token_embed((folder / case["model"]).read_bytes())
    rows = embed[[int(t) for t in case["prompt"]]]
    assert hashlib.sha256(rows.astype("<f4").tobytes()).hexdigest() == want["activations"]["embed"]


@pytest.mark.parametrize("cid", GREEDY_CASES)
def test_greedy_tokens_are_the_argmax_of_the_logits_rows(cid):
    folder = CORPUS_DIR / cid
    case = json.loads((folder / "case.json").read_text())
    want = json.loads((folder / "want.json").read_text())
    prompt, steps = len(case["prompt"]), int(case["new_tokens"])
    shape = [int(n) for n in want["logits"]["shape"]]
    assert shape[0] == prompt + steps - 1
    logits = np.frombuffer(bytes.fromhex(want["logits"]["hex"]), "<f4").reshape(shape)
    picked = [int(np.argmax(logits[prompt - 1 + i])) for i in range(steps)]  # first max wins
    assert [str(t) for t in picked] == want["tokens"]
    # Each generated token is fed back: the next row's embed is the token's (checked above).
    assert len(want["activations"]) == 1 + 17 * 2 + 2


def test_the_fast_engine_runs_model_cases_through_the_familys_fast_model(monkeypatch):
    """The fast engine answers model cases through the registry row's fast model,
    weightfile.fast.qwen3.open_model (called with the open file and threads=), and a model that
    is off by one ulp anywhere fails."""
    from weightfile.conformance.runner import builtin_implementation, run_corpus
    from weightfile.families.qwen3 import conformance as model_cases
    from weightfile.families.qwen3.conformance import ref_model
    from weightfile.fast import qwen3 as fast_qwen3

    calls = []

    class OffByOneUlp:
        def __init__(self, inner):
            self.inner, self.config, self.kernels = inner, inner.config, inner.kernels

        def new_cache(self):
            return self.inner.new_cache()

        def forward(self, tokens, cache, trace=None):
            out = np.array(self.inner.forward(tokens, cache, trace=trace), dtype=np.float32)
            out.view(np.uint32)[0, 0] ^= 1
            return out

    def open_model(vqf, threads):
        calls.append(threads)
        return ref_model(vqf)

    from weightfile.conformance import adapter

    # kernels "present" for the adapter's `kinds` reply and for the answer
    monkeypatch.setattr(adapter, "library", lambda: object())
    monkeypatch.setattr(model_cases, "library", lambda: object())
    monkeypatch.setattr(fast_qwen3, "open_model", open_model)
    results = run_corpus(builtin_implementation("fast"), pattern="vqf/*/model/*")
    assert len(results) == len(MODEL_CASES) and all(r.passed for r in results), results
    assert calls == [1] * len(MODEL_CASES)
    monkeypatch.setattr(fast_qwen3, "open_model", lambda vqf, threads: OffByOneUlp(ref_model(vqf)))
    results = run_corpus(builtin_implementation("fast"), pattern="vqf/*/model/*")
    assert results and not any(r.passed for r in results)


def test_without_c_kernels_fast_skips_vqf_model_cases_instead_of_answering_with_ref(monkeypatch):
    from weightfile.conformance import adapter
    from weightfile.conformance.runner import builtin_implementation, run_corpus
    from weightfile.families.qwen3 import conformance as model_cases

    monkeypatch.setattr(adapter, "library", lambda: None)  # the `kinds` reply skips them
    monkeypatch.setattr(model_cases, "library", lambda: None)
    results = run_corpus(builtin_implementation("fast"), pattern="vqf/*/model/*")
    assert len(results) == len(MODEL_CASES)
    assert all(r.skipped and "no C kernels" in r.reason for r in results), results
