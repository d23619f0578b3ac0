"""Issue 15 item 8: the streamed detokenizer (tokenizers.decoders.DecodeStream) gives pieces
that add up to the library's batch decode of the same ids, for any id sequence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from weightfile.frontend.tokenizer import TextStream, stream_text

TEXT = ["naïve café ☕ costs 3 €", "the quick brown fox jumps over the lazy dog", "日本語 テキスト"]


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<|endoftext|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXT * 4, trainer)
    return tok


@settings(max_examples=60)
@given(data=st.data())
def test_pieces_add_up_to_the_batch_decode(tokenizer, data):
    """Random ids split multi-byte characters anywhere (byte-level BPE), and special ids are
    skipped: the pieces still join to exactly the batch decode, U+FFFD included."""
    vocab = tokenizer.get_vocab_size()
    ids = data.draw(st.lists(st.integers(0, vocab - 1), max_size=40))
    pieces = list(stream_text(tokenizer, ids))
    assert "".join(pieces) == tokenizer.decode(ids, skip_special_tokens=True)


def test_a_split_character_waits_for_its_last_byte(tokenizer):
    """☕ is three UTF-8 bytes, one byte-level token each (no merge covers it): no piece shows
    half of it, and the pieces join to the text."""
    ids = [tokenizer.token_to_id("a")] + [tokenizer.token_to_id(c) for c in ("â", "ĺ", "ķ")]
    assert None not in ids and tokenizer.decode(ids) == "a☕"
    stream = TextStream(tokenizer)
    pieces = [stream.push(t) for t in ids]
    assert pieces[1:3] == ["", ""] and "\ufffd" not in "".join(pieces)
    assert "".join(pieces) + stream.flush() == "a☕"
