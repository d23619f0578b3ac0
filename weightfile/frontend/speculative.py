"""`run --spec mtp`: speculative decoding with a `.ninfer` file's MTP head (spec/models.md
§qwen35-mtp-round), on the session's engine: the fast family's model drafts with
`fast.qwen35.mtp`, the reference's with `ref.qwen35.mtp`, both through the one round logic
`ref.qwen35.speculative.Speculation` (the same tokens, draft logits and acceptances bit for bit).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from weightfile.fast.backend import FAST
from weightfile.fast.qwen35.model import FastQwen35Model
from weightfile.fast.qwen35.mtp import FastVerifier, open_mtp
from weightfile.ref.ninfer3.read import Artifact, open_artifact
from weightfile.ref.qwen35.mtp import RefVerifier, load_mtp
from weightfile.ref.qwen35.speculative import Speculation

from .session import Session


def speculation_for(
    s: Session, draft_tokens: int, proposal: bool, temperature: float = 0.0, seed: int = 0
) -> Speculation:
    """The session's text model as the target and the file's MTP head as the drafter (with the
    proposal head when `proposal`); the file's mtp component is checked here."""
    if isinstance(s.model, FastQwen35Model):
        assert isinstance(s.source, Artifact)  # the fast model reads the open file
        head = open_mtp(s.source, s.model, proposal)
        return Speculation(FastVerifier(s.model), head, draft_tokens, temperature, seed)
    with open_artifact(s.path) as nf:  # the reference decodes, so the file can close again
        ref_head = load_mtp(nf, s.model, proposal, FAST.ninfer_codecs.get_codec)
    return Speculation(RefVerifier(s.model), ref_head, draft_tokens, temperature, seed)


def round_arrays(spec: Speculation) -> dict[str, np.ndarray]:
    """Per round r: mtp.round{r}.draft_tokens int32 [K], .draft_logits float32 [K, head rows],
    .accepted int32 [] (K is smaller in a last round cut by --max-tokens)."""
    out: dict[str, np.ndarray] = {}
    for r, rd in enumerate(spec.rounds):
        out[f"mtp.round{r}.draft_tokens"] = np.array(rd.draft_tokens, dtype=np.int32)
        out[f"mtp.round{r}.draft_logits"] = np.asarray(rd.draft_logits, dtype=np.float32)
        out[f"mtp.round{r}.accepted"] = np.array(rd.accepted, dtype=np.int32)
    return out


def summary(spec: Speculation, generated: Sequence[int]) -> str:
    """One stderr line: rounds, the acceptance rate (accepted ÷ drafted) and tokens per round
    (accepted + 1, averaged over rounds)."""
    rounds = len(spec.rounds)
    drafted = sum(len(r.draft_tokens) for r in spec.rounds)
    accepted = sum(r.accepted for r in spec.rounds)
    rate = f"{accepted / drafted:.3f} ({accepted} of {drafted} drafts)" if drafted else "n/a"
    per = f"{(accepted + rounds) / rounds:.2f}" if rounds else "n/a"
    return (
        f"mtp: {spec.draft_tokens} draft tokens, {rounds} rounds, acceptance {rate}, "
        f"{per} tokens per round, {len(generated)} tokens"
    )
