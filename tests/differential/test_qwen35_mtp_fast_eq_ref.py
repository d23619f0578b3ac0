"""Speculative decoding with the MTP head (spec/models.md §qwen35-mtp, §qwen35-mtp-round).

Hypothesis draws small random `.ninfer` Qwen3.5 files with an MTP component — dense and MoE, with
or without an indexed proposal head, the MTP from random (drafts rarely accepted) to built to
agree (tests/strategies/qwen35_mtp.py: drafts accepted always or often, so rounds commit full and
partial prefixes and the GDN journal is exercised) —, prompts and K in 1..5, and checks:

* greedy speculative output == plain greedy output, token for token, on the reference and on the
  fast family (the property of the issue: verification never changes what greedy decoding emits);
* the fast drafter and verifier equal the reference bit for bit: every round's draft tokens, the
  draft logits as uint32 words and the accepted counts, greedy and sampled (keyed streams).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen35_mtp import mtp_file

from weightfile.fast.qwen35 import open_model
from weightfile.fast.qwen35.mtp import FastVerifier, open_mtp
from weightfile.frontend.generate import stream_tokens
from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer
from weightfile.ref.qwen35.mtp import RefVerifier, load_mtp
from weightfile.ref.qwen35.speculative import Speculation

cases = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**16),
        "moe": st.booleans(),
        "agree": st.sampled_from([0.0, 0.8, 0.95, 1.0]),
        "proposal": st.sampled_from([0, 0, 24]),
        "prompt": st.lists(st.integers(0, 47), min_size=1, max_size=5),
        "k": st.integers(1, 5),
        "new": st.integers(1, 9),
    }
)


def same_rounds(got: Speculation, want: Speculation) -> None:
    assert len(got.rounds) == len(want.rounds)
    for g, w in zip(got.rounds, want.rounds, strict=True):
        assert g.draft_tokens == w.draft_tokens and g.accepted == w.accepted
        assert g.draft_logits.shape == w.draft_logits.shape
        assert np.array_equal(g.draft_logits.view(np.uint32), w.draft_logits.view(np.uint32))


def run_both(case: dict, temperature: float) -> tuple[list, Speculation, list, Speculation, list]:
    """(plain greedy, ref speculation, its tokens, fast speculation, its tokens)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = mtp_file(Path(tmp) / "m.ninfer", case["seed"], case["moe"], case["agree"],
                        case["proposal"])  # fmt: skip
        with open_artifact(path) as nf:
            config, weights = bind_ninfer(nf)
            ref = Qwen35Model(config, weights)
            ref_head = load_mtp(nf, ref, bool(case["proposal"]), get_codec)
            fast = open_model(nf)
            fast_head = open_mtp(nf, fast, bool(case["proposal"]))
            prompt, new, k = case["prompt"], case["new"], case["k"]
            plain = list(stream_tokens(fast, prompt, new))
            rs = Speculation(RefVerifier(ref), ref_head, k, temperature, seed=case["seed"])
            fs = Speculation(FastVerifier(fast), fast_head, k, temperature, seed=case["seed"])
            return plain, rs, list(rs.tokens(prompt, new)), fs, list(fs.tokens(prompt, new))


@settings(max_examples=10)
@given(cases)
def test_greedy_speculation_emits_the_plain_tokens_and_fast_equals_ref(case: dict) -> None:
    plain, rs, ref_tokens, fs, fast_tokens = run_both(case, 0.0)
    assert ref_tokens == plain
    assert fast_tokens == plain
    same_rounds(fs, rs)
    for r in rs.rounds:  # greedy acceptance: each accepted draft is its column's argmax
        assert 0 <= r.accepted <= len(r.draft_tokens) <= case["k"]


@settings(max_examples=4)
@given(cases, st.sampled_from([0.6, 1.3]))
def test_sampled_speculation_fast_equals_ref(case: dict, temperature: float) -> None:
    _, rs, ref_tokens, fs, fast_tokens = run_both(case, temperature)
    assert fast_tokens == ref_tokens
    same_rounds(fs, rs)
