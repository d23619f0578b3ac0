"""`weightfile run` and `weightfile trace` on an imported `.ninfer`: the file is self-contained
(tokenizer, chat template and EOS ids come from its resources, no sidecar files)."""

from __future__ import annotations

import numpy as np
import pytest
from strategies.qwen35_checkpoint import TEMPLATE, write_checkpoint
from strategies.tiny_vqf import bpe_tokenizer

from weightfile.cli import main
from weightfile.families.qwen35.to_ninfer import import_checkpoint
from weightfile.fast.backend import FAST
from weightfile.frontend.chat import render_chat
from weightfile.frontend.generate import stream_tokens
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.ref.qwen35.trace import trace_names

PROMPT = "a line of text becomes tokens"
EOS = 2  # generation_config's eos_token_id; also <|im_end|>, the tokenizer_config eos_token


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf35")
    write_checkpoint(folder, tied=False, seed=9)
    out = tmp_path_factory.mktemp("out") / "m.ninfer"
    import_checkpoint(folder, out, fmt="q8_g32_fp16", backend=FAST)
    assert sorted(p.name for p in out.parent.iterdir()) == ["m.ninfer"]  # no sidecars
    return out


def reference(path) -> Qwen35Model:
    with open_artifact(path) as nf:
        return Qwen35Model(*bind_ninfer(nf))


def test_run_generates_what_the_reference_generates(imported, capsys):
    tok = bpe_tokenizer()
    prompt = tok.encode(PROMPT).ids
    want = list(stream_tokens(reference(imported), prompt, 6, {EOS}))
    assert want  # this model does not stop at once
    assert main(["run", str(imported), "--prompt", PROMPT, "--max-tokens", "6"]) == 0
    assert capsys.readouterr().out == tok.decode(want) + "\n"
    ids = ",".join(map(str, prompt))
    assert main(["run", str(imported), "--token-ids", ids, "--max-tokens", "6"]) == 0
    assert capsys.readouterr().out == tok.decode(want) + "\n"  # the file has a tokenizer


def test_sampling_is_seeded(imported, capsys):
    args = ["run", str(imported), "--token-ids", "5,6,7", "--max-tokens", "5"]
    outs = []
    for _ in range(2):
        assert main([*args, "--temperature", "0.9", "--seed", "4"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


def test_trace_of_a_chat_prompt(imported, tmp_path):
    out = tmp_path / "t.npz"
    argv = ["trace", str(imported), "--prompt", "hi", "--chat", "--out", str(out)]
    assert main(argv) == 0
    model = reference(imported)
    text = render_chat(TEMPLATE, [{"role": "user", "content": "hi"}])  # the file's template
    ids = bpe_tokenizer().encode(text).ids
    with np.load(out) as z:
        assert z["input_ids"].tolist() == ids
        names = set(z.files) - {"input_ids"}
        assert names == set(trace_names(model.config.layer_types, moe=False))
        want = model.forward(ids, model.new_cache())
        assert z["logits"].view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_prefill_and_token_by_token_decode_agree_bit_for_bit(imported):
    model = reference(imported)
    ids = bpe_tokenizer().encode(PROMPT).ids
    prefill = model.forward(ids, model.new_cache())
    cache = model.new_cache()
    decode = np.concatenate([model.forward([t], cache) for t in ids])
    assert prefill.view(np.uint32).tolist() == decode.view(np.uint32).tolist()
