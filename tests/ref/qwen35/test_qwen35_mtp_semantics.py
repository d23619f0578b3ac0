"""The MTP step and the round against hand derivations (spec/models.md §qwen35-mtp, "A head
that always agrees"): on the agreeing model every layer adds zero, so the target's next token is
argmax(head · on(embed(x))) and the MTP's draft logits are head · on(on(embed(x_{t+1}), 0),
final_norm) — computed here in float64 NumPy from the file's decoded weights, not by the code
under test. The tokens shift by one in the MTP prefill, so the drafts are the target's next tokens
and (nearly) all are accepted; with the hidden half read instead they would repeat the anchor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from strategies.qwen35_mtp import mtp_file

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35 import Qwen35Model, bind_ninfer
from weightfile.ref.qwen35.mtp import RefVerifier, load_mtp
from weightfile.ref.qwen35.speculative import Speculation


def on(v: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    v = v.astype(np.float64)
    return (1 + w.astype(np.float64)) * v / np.sqrt(np.mean(v * v) + eps)


def test_agreeing_drafts_are_the_hand_derived_next_tokens(tmp_path: Path) -> None:
    path = mtp_file(tmp_path / "m.ninfer", 5, agree=1.0)
    with open_artifact(path) as nf:
        model = Qwen35Model(*bind_ninfer(nf, get_codec))
        head = load_mtp(nf, model, False, get_codec)
    w = model.weights
    embed, table = w.token_embedding, w.output_head.values.astype(np.float64)
    final = np.asarray(w.final_norm)

    def target_next(x: int) -> int:
        return int(np.argmax(table @ on(embed[x], final)))

    prompt = [7, 30, 2]
    spec = Speculation(RefVerifier(model), head, 3)
    tokens = list(spec.tokens(prompt, 10))
    chain = [target_next(prompt[-1])]
    while len(chain) < 10:
        chain.append(target_next(chain[-1]))
    assert tokens == chain
    # round 0's first draft: the MTP entry (h_n, x_{n+1}) predicts x_{n+2}
    x1 = tokens[0]
    want = table @ on(on(embed[x1], np.zeros_like(final)), final)
    got = spec.rounds[0].draft_logits[0].astype(np.float64)
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    assert spec.rounds[0].draft_tokens[0] == tokens[1]
    drafted = sum(len(r.draft_tokens) for r in spec.rounds)
    assert sum(r.accepted for r in spec.rounds) >= 0.9 * drafted
