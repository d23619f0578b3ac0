"""A GGUF file's vocabulary as the tokenizer sidecars of a VQF file (spec/vqf.md §converter).

A VQF file carries no tokenizer; the frontend reads `<file>.tokenizer.json` and
`<file>.chat_template.jinja`. A GGUF file carries both: llama.cpp's `tokenizer.ggml.*` keys (the
token texts, their types and the BPE merges) and `tokenizer.chat_template`. This module rebuilds
the Hugging Face tokenizer.json of a byte-level BPE vocabulary (`tokenizer.ggml.model` "gpt2") from
them, the reverse of what the VQF -> GGUF exporter writes (weightfile/convert/vqf_gguf.py):

* NORMAL tokens are the BPE vocabulary, at their ids; the merges are `tokenizer.ggml.merges`,
  each "left right" (every other id is in the vocabulary too, unreachable, to keep the ids);
* CONTROL tokens are special added tokens, USER_DEFINED ones added tokens that are not special
  (both unnormalized, at their ids); UNUSED ids (the exporter's `[PAD<id>]`) after the last
  used id get no token, those between used ids a special placeholder that decodes to nothing;
* `tokenizer.ggml.pre` names the pre-tokenizer: "qwen2" is Qwen2/Qwen3's (NFC, then the Qwen2
  split pattern, isolated, then byte-level without its own regex), "gpt2" or "default" GPT-2's
  byte-level split. Any other pre-tokenizer, or another tokenizer model, gives no sidecar (the
  reason is returned): a tokenizer that splits differently would encode prompts wrongly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Qwen2's pre-tokenizer split (its tokenizer.json `Split` pattern, behavior "Isolated").
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: gguf.TokenType values (gguf-py's enum), spelled out so this module needs no gguf import.
NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5
PRE_TOKENIZERS = ("qwen2", "gpt2", "default")


def tokenizer_json(meta: Mapping[str, Any]) -> tuple[str | None, str]:
    """(the tokenizer.json text, "") of GGUF metadata `meta`, or (None, why there is none)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    model = meta.get("tokenizer.ggml.model")
    if model != "gpt2":
        return None, f"tokenizer model {model!r} is not a byte-level BPE (gpt2)"
    pre = str(meta.get("tokenizer.ggml.pre", "default"))
    if pre not in PRE_TOKENIZERS:
        return None, f"pre-tokenizer {pre!r} is not one of {', '.join(PRE_TOKENIZERS)}"
    tokens: Sequence[str] = meta.get("tokenizer.ggml.tokens") or []
    types: Sequence[int] = meta.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens)
    # every id up to the last used one in the BPE vocabulary, added and unused ones too: an added
    # token whose text the model knows keeps that id (tokenizers gives others the next free id,
    # which would renumber them past a gap); BPE never produces them, as no merge does and the
    # added vocabulary splits the added ones off first. Unused ids after the last used one are
    # left out, as in the original tokenizer: decoding them gives no text.
    end = max((i + 1 for i, k in enumerate(types) if k != UNUSED), default=0)
    vocab = {tokens[i]: i for i in range(end)}
    merges = [tuple(m.split(" ", 1)) for m in meta.get("tokenizer.ggml.merges") or []]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=pre != "qwen2")
    if pre == "qwen2":
        tok.normalizer = normalizers.NFC()
        split = pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False)
        tok.pre_tokenizer = pre_tokenizers.Sequence([split, byte_level])
    else:
        tok.pre_tokenizer = byte_level
    tok.decoder = decoders.ByteLevel()
    doc = json.loads(tok.to_str())
    # unused ids inside the range are special too, so a decode that skips special tokens (the
    # frontend's) gives them no text, as the original tokenizer, which has no such token, does
    doc["added_tokens"] = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": k != USER_DEFINED}
        for i, (t, k) in enumerate(zip(tokens[:end], types[:end], strict=True))
        if k != NORMAL
    ]  # fmt: skip
    return json.dumps(doc, ensure_ascii=False), ""


def write_gguf_sidecars(meta: Mapping[str, Any], path: Path) -> str:
    """The tokenizer and chat-template sidecars of the VQF at `path` from GGUF metadata, each
    published by the output policy (ref/staging.py `write_output`); returns why there is no
    tokenizer sidecar ("" when one was written)."""
    from weightfile.frontend.chat import chat_template_path
    from weightfile.frontend.tokenizer import sidecar_path
    from weightfile.ref.staging import write_output

    text, why = tokenizer_json(meta)
    if text is not None:
        write_output(sidecar_path(path), text.encode("utf-8"), overwrite=True)
    template = meta.get("tokenizer.chat_template")
    if isinstance(template, str) and template:
        write_output(chat_template_path(path), template.encode("utf-8"), overwrite=True)
    return why


# ---- the other way: a tokenizer.json as llama.cpp's keys (the GGUF exporters') ----


def add_tokenizer(w: Any, path: Path, a: dict[str, Any]) -> None:
    """A byte-level BPE tokenizer.json as llama.cpp's gpt2-style vocabulary keys: the BPE
    vocabulary NORMAL, added tokens CONTROL or USER_DEFINED (`added_token_type`), unfilled ids
    UNUSED `[PAD<id>]`."""
    import gguf

    tok = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    model = tok.get("model") or {}
    vocab: dict[str, int] = dict(model.get("vocab") or {})
    added = {t["content"]: t for t in tok.get("added_tokens", [])}
    if model.get("type") != "BPE" or not vocab:
        # no vocabulary llama.cpp can use: its "none" model, vocab_size placeholder tokens, so
        # the file still loads and runs on token ids
        w.add_tokenizer_model("none")
        w.add_vocab_size(int(a["vocab_size"]))
        return
    ids = [*vocab.values(), *(int(t["id"]) for t in added.values())]
    size = max(int(a["vocab_size"]), *(i + 1 for i in ids))
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [int(gguf.TokenType.UNUSED)] * size
    for text, i in vocab.items():
        tokens[i], types[i] = text, int(gguf.TokenType.NORMAL)
    for text, t in added.items():
        tokens[t["id"]], types[t["id"]] = added_token_type(text, bool(t.get("special")))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)


def looks_special(text: str) -> bool:
    """llama.cpp's `does_token_look_special` (convert_hf_to_gguf.py): an added token marked
    not special that is a control token all the same."""
    return (
        text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
        or (text.startswith("<|") and text.endswith("|>"))
        or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
        or (text.startswith("<unused") and text.endswith(">"))
    )


def added_token_type(text: str, special: bool) -> tuple[str, int]:
    """An added token's GGUF text and type as llama.cpp's convert_hf_to_gguf.py assigns them
    (`get_vocab_base`, spec/vqf.md §converter): CONTROL when the tokenizer marks it special or
    it looks special, else USER_DEFINED with "\u2581" pre-normalized to a space."""
    import gguf

    if special or looks_special(text):
        return text, int(gguf.TokenType.CONTROL)
    return text.replace("\u2581", " "), int(gguf.TokenType.USER_DEFINED)
