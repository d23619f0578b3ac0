"""The text frontend: tokenizer lookup, streamed decoding, sandboxed chat templates, stop ids."""

from __future__ import annotations

from pathlib import Path

import pytest
from strategies.model import random_weights, tiny_config
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from weightfile.frontend.chat import CHATML, render_chat
from weightfile.frontend.generate import stream_tokens
from weightfile.frontend.tokenizer import (
    TextStream,
    find_tokenizer,
    load_tokenizer,
    sidecar_path,
    stream_text,
)
from weightfile.ref.layers.sampling import generate
from weightfile.ref.qwen3.decoder import Qwen3Model
from weightfile.spec.errors import InvalidError, NotFoundError

TEXT = ["naïve café ☕ costs 3 €", "the quick brown fox jumps over the lazy dog"] * 4


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )  # fmt: skip
    tok.train_from_iterator(TEXT, trainer)
    return tok


def test_tokenizer_is_found_given_then_sidecar_then_beside(tmp_path, tokenizer):
    model = tmp_path / "m.vqf"
    with pytest.raises(NotFoundError) as e:
        find_tokenizer(model, None)
    assert e.value.rule == "frontend.tokenizer.missing"
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    assert find_tokenizer(model, None) == tmp_path / "tokenizer.json"
    tokenizer.save(str(sidecar_path(model)))
    assert find_tokenizer(model, None) == sidecar_path(model)
    other = tmp_path / "other.json"
    tokenizer.save(str(other))
    assert find_tokenizer(model, other) == other
    with pytest.raises(NotFoundError):
        find_tokenizer(model, tmp_path / "absent.json")


def test_a_broken_tokenizer_json_is_invalid(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"model": 42}')
    with pytest.raises(InvalidError) as e:
        load_tokenizer(bad)
    assert e.value.rule == "frontend.tokenizer.invalid"


def test_streamed_pieces_join_to_the_whole_text(tokenizer):
    ids = tokenizer.encode("naïve café ☕ and € signs").ids
    pieces = list(stream_text(tokenizer, ids))
    assert "".join(pieces) == tokenizer.decode(ids) == "naïve café ☕ and € signs"
    assert len(pieces) > 1  # it really streams
    stream = TextStream(tokenizer)
    assert all("\ufffd" not in stream.push(t) for t in ids)


def test_chatml_by_hand():
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    want = (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_chat(CHATML, messages) == want
    assert render_chat(CHATML, messages, add_generation_prompt=False) == want.rsplit("<|im_s", 1)[0]


MALICIOUS = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ messages.__class__.__base__.__subclasses__() }}",
    "{{ raise_exception.__globals__['__builtins__']['open']('{sentinel}', 'w') }}",
    "{{ cycler.__init__.__globals__.os.system('touch {sentinel}') }}",
    "{{ self._TemplateReference__context }}",
    "{% set _ = messages.append({'role': 'x'}) %}",
    "{% set _ = messages[0].update({'content': 'x'}) %}",
    "{{ (messages|first).__setitem__('role', 'x') }}",
]


@pytest.mark.parametrize("template", MALICIOUS)
def test_a_malicious_template_cannot_reach_python(template, tmp_path):
    sentinel = tmp_path / "pwned"
    messages = [{"role": "user", "content": "Hi"}]
    with pytest.raises(InvalidError) as e:
        render_chat(template.replace("{sentinel}", str(sentinel)), messages)
    assert e.value.rule == "frontend.chat_template.unsafe"
    assert not sentinel.exists()
    assert messages == [{"role": "user", "content": "Hi"}]


def test_template_errors_are_typed():
    for bad in ("{% for %}", "{{ raise_exception('no system role') }}", "{{ 1 + 'a' }}"):
        with pytest.raises(InvalidError) as e:
            render_chat(bad, [])
        assert e.value.rule == "frontend.chat_template.error"


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_streaming_chooses_what_generate_chooses(temperature):
    c = tiny_config()
    model = Qwen3Model(c, random_weights(c, seed=3))
    prompt = [1, 5, 9]
    want = generate(model, prompt, 6, eos_id=None, temperature=temperature, seed=11)
    got = list(stream_tokens(model, prompt, 6, temperature=temperature, seed=11))
    assert got == want and len(got) == 6
    stop = got[3]
    cut = list(stream_tokens(model, prompt, 6, {stop}, temperature=temperature, seed=11))
    assert cut == got[: got.index(stop)]


def test_import_copies_the_chat_template(tmp_path):
    from weightfile.convert.checkpoint import chat_template
    from weightfile.families.qwen3.to_vqf import RULES

    assert chat_template(tmp_path, RULES) is None
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "T"}')
    assert chat_template(tmp_path, RULES) == "T"
    (tmp_path / "chat_template.jinja").write_text("J")
    assert chat_template(Path(tmp_path), RULES) == "J"
