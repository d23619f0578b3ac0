"""The `ninfer3-model` cases (README "Model cases") and the corpus's seeded value source.

Expected answers are checked against what can be derived without the forward pass: the embed
digest from ml_dtypes' bfloat16 decode of the token embedding's bytes, the greedy tokens from
the logits rows, the trace-name count from spec/models.md §qwen35-trace counted by hand. The value
source is checked against SplitMix64's published first output and ref/layers/sampling.py.
"""

from __future__ import annotations

import hashlib
import json
import sys

import ml_dtypes
import numpy as np
import pytest

from weightfile.conformance import seeded
from weightfile.conformance.adapter import main as adapter_main
from weightfile.conformance.generate import CORPUS_DIR
from weightfile.conformance.runner import builtin_implementation, case_ids, run_corpus
from weightfile.ref.layers.sampling import SplitMix64
from weightfile.ref.ninfer3.read import open_artifact

VALID = [c for c in case_ids(pattern="ninfer3/*/model/qwen35/*") if "/reject-" not in c]
REJECTED = case_ids(pattern="ninfer3/*/model/qwen35/reject-*")


def _case(cid: str) -> tuple[dict, dict]:
    folder = CORPUS_DIR / cid
    want = folder / "want.json"
    return json.loads((folder / "case.json").read_text()), (
        json.loads(want.read_text()) if want.exists() else {}
    )


def test_splitmix64_words_are_the_published_stream():
    # SplitMix64 seeded with 0: the first output is 0xE220A8397B1DCDAF (Vigna's reference code).
    assert int(seeded.words(0, 1)[0]) == 0xE220A8397B1DCDAF
    scalar = SplitMix64(12345)
    assert [int(w) for w in seeded.words(12345, 5)] == [scalar.next_u64() for _ in range(5)]


def test_uniform_is_the_documented_arithmetic():
    # ((0xE220A8397B1DCDAF >> 40) - 2^23) * 2^-23 = (0xE220A8 - 0x800000) / 2^23, times 0.5.
    assert seeded.uniform(0, 1, 0.5)[0] == np.float32((0xE220A8 - 0x800000) / 2**23 * 0.5)
    u = seeded.uniform(9, (64, 33))
    assert u.dtype == np.float32 and u.shape == (64, 33)
    assert u.min() >= -1.0 and u.max() < 1.0
    assert (u * 2**23 == np.round(u * 2**23)).all()  # on the 2^-23 grid
    assert seeded.integers(0, 1)[0] == np.int32(0x7B1DCDAF)  # the low 32 bits


def test_there_are_dense_quantised_and_moe_cases_and_every_rule_has_a_file():
    assert {c.split("/")[-1] for c in VALID} == {
        "dense-bf16", "dense-q4-q8-fused", "moe-q8-fused", "wide-hadamard"
    }  # fmt: skip
    assert len(REJECTED) == 21  # ninfer3.text.hadamard's case withdrawn (CHANGELOG, generator 5)


@pytest.mark.parametrize("cid", VALID)
def test_embed_digest_is_the_bf16_decoded_rows(cid):
    case, want = _case(cid)
    with open_artifact(CORPUS_DIR / cid / case["model"]) as nf:
        binding = nf.directory.bindings["text/token_embedding"]
        o = nf.object(binding.object_id)
        raw = bytes(nf.object_bytes(o.id))
    assert o.format == "bf16"
    table = np.frombuffer(raw, dtype="<u2").view(ml_dtypes.bfloat16).astype(np.float32)
    rows = table.reshape(o.shape)[[int(t) for t in case["prompt"]]]
    digest = hashlib.sha256(rows.astype("<f4").tobytes()).hexdigest()
    assert want["activations"]["embed"] == digest


#: spec/models.md §qwen35-trace per layer: Gated DeltaNet 14 + attention 13 names, dense FFN 6 / MoE
#: 7; then embed, final_norm, logits.
TRACE_COUNT = {"dense-bf16": 14 + 13 + 2 * 6 + 3, "dense-q4-q8-fused": 14 + 13 + 2 * 6 + 3,
               "moe-q8-fused": 14 + 13 + 2 * 7 + 3, "wide-hadamard": 13 + 6 + 3}  # fmt: skip


@pytest.mark.parametrize("cid", VALID)
def test_tokens_are_the_argmax_of_the_logits_rows(cid):
    case, want = _case(cid)
    prompt, steps = len(case["prompt"]), int(case["new_tokens"])
    shape = [int(n) for n in want["logits"]["shape"]]
    wide = cid.endswith("wide-hadamard")  # one attention layer, vocab 8
    assert shape == [prompt + steps - 1, 8 if wide else 64]
    logits = np.frombuffer(bytes.fromhex(want["logits"]["hex"]), "<f4").reshape(shape)
    assert np.isfinite(logits).all()
    picked = [int(np.argmax(logits[prompt - 1 + i])) for i in range(steps)]
    assert [str(t) for t in picked] == want["tokens"]
    names = list(want["activations"])
    assert len(names) == TRACE_COUNT[cid.split("/")[-1]]
    assert names[:2] == ["embed", "layers.0.attn_norm"] and names[-1] == "logits"
    assert "layers.0.gated_attn" in names if wide else "layers.0.gdn_core" in names


def test_the_quantised_case_binds_fused_parents_by_parts():
    with open_artifact(
        CORPUS_DIR / "ninfer3/v1/model/qwen35/dense-q4-q8-fused" / "model.ninfer"
    ) as nf:
        formats = {o.format for o in nf.directory.objects if o.kind == "tensor"}
        parts = [b for b in nf.directory.bindings.values() if b.object_id is None]
    assert {"q4_g64_fp16", "q8_g32_fp16", "bf16", "fp32"} <= formats
    assert len(parts) >= 10


def test_fast_binds_with_the_fast_codecs_and_a_wrong_decode_fails(monkeypatch):
    """`fast` answers ninfer3-model through weightfile.fast's get_codec: a decoder that is off
    by one ulp in one element makes every accepted Qwen3.5 case fail."""
    import weightfile.fast.codecs.ninfer3.codec as fast_codec

    real = fast_codec.get_codec
    calls: list[tuple[str, str]] = []

    class OffByOneUlp:
        def __init__(self, inner):
            self.inner = inner

        def decode(self, payload, shape):
            out = np.array(self.inner.decode(payload, shape), dtype=np.float32)
            out.reshape(-1).view(np.uint32)[0] ^= 1
            return out

    def spy(fmt, layout):
        calls.append((fmt, layout))
        return real(fmt, layout)

    monkeypatch.setattr(fast_codec, "get_codec", spy)
    results = run_corpus(builtin_implementation("fast"), pattern="ninfer3/*/model/qwen35/*")
    assert len(results) == len(VALID) + len(REJECTED) and all(r.passed for r in results)
    assert ("q4_g64_fp16", "row_split_k128_v1") in calls
    monkeypatch.setattr(fast_codec, "get_codec", lambda f, lay: OffByOneUlp(real(f, lay)))
    results = run_corpus(builtin_implementation("fast"), pattern="ninfer3/*/model/qwen35/[dmw]*")
    assert len(results) == len(VALID) and not any(r.passed for r in results)


def test_fast_says_it_uses_the_reference_forward_pass(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["adapter"])
    assert adapter_main(["--engine", "fast", "kinds"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "ninfer3-model" in doc["kinds"]
    assert "reference" in doc["notes"]["ninfer3-model"]


def test_the_run_command_prints_the_fast_note_on_stderr_only(capsys):
    from weightfile.cli import main

    assert main(["conformance", "run", "--builtin", "fast", "--run", "*/qwen35/dense-bf16"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("note: ninfer3-model: fast codecs bind the weights")
    assert out.splitlines()[0].startswith("PASS ninfer3/v1/model/qwen35/dense-bf16")


def test_the_readme_lists_every_rejected_model_rule():
    from weightfile.families.qwen35.conformance_mutations import MUTATIONS
    from weightfile.spec.ninfer3.rules import RULES

    readme = (CORPUS_DIR.parent / "README.md").read_text()
    for rule in MUTATIONS:
        assert f"| `{rule}` | {RULES[rule].error_class} |" in readme, rule
