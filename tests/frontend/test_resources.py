"""The frontend of a `.ninfer` file from its own resources (spec/ninfer3.md §qwen35-names resource
roles)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from strategies.tiny_vqf import bpe_tokenizer

from weightfile.frontend.chat import render_chat
from weightfile.frontend.resources import load_text_resources
from weightfile.ref.ninfer3.plan import ResourceSpec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.ninfer3.write import write_artifact
from weightfile.spec.errors import InvalidError

TEMPLATE = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"


def write_file(path: Path, resources: dict[str, bytes]) -> Path:
    """A .ninfer whose only objects are the given text resources (a reader needs no tensor)."""
    ids = {role: f"r.{i}" for i, role in enumerate(resources)}
    write_artifact(
        path,
        {ids[r]: data for r, data in resources.items()},
        objects=[ResourceSpec(ids[r], len(data)) for r, data in resources.items()],
        components={"text": {"config": {}, "resources": ids}},
    )
    return path


@pytest.fixture(scope="module")
def tokenizer_json() -> bytes:
    return bpe_tokenizer().to_str().encode()


def full(tokenizer_json: bytes, **changes: bytes) -> dict[str, bytes]:
    resources = {
        "tokenizer.json": tokenizer_json,
        "tokenizer_config.json": json.dumps({"eos_token": "<|im_end|>"}).encode(),
        "chat_template.jinja": TEMPLATE.encode(),
        "generation_config.json": json.dumps({"eos_token_id": [0, 7], "top_k": 20}).encode(),
    }
    return resources | changes


def test_all_four_roles(tmp_path, tokenizer_json):
    path = write_file(tmp_path / "m.ninfer", full(tokenizer_json))
    with open_artifact(path) as a:
        res = load_text_resources(a, need_tokenizer=True)
    original = bpe_tokenizer()
    text = "a line of text becomes tokens"
    assert res.tokenizer is not None
    assert res.tokenizer.encode(text).ids == original.encode(text).ids
    # generation_config's list, plus the tokenizer_config eos token's id (2 in bpe_tokenizer's
    # special tokens: <|endoftext|>, <|im_start|>, <|im_end|>)
    assert res.eos_ids == {0, 7, 2}
    assert res.chat_template == TEMPLATE
    prompt = render_chat(res.chat_template, [{"role": "user", "content": "hi"}])
    assert prompt == "[user] hi\n"


def test_eos_token_as_added_token_object_and_single_id(tmp_path, tokenizer_json):
    changed = full(
        tokenizer_json,
        **{
            "tokenizer_config.json": json.dumps(
                {"eos_token": {"content": "<|im_start|>"}}
            ).encode(),
            "generation_config.json": b'{"eos_token_id": 5}',
        },
    )
    with open_artifact(write_file(tmp_path / "m.ninfer", changed)) as a:
        assert load_text_resources(a, need_tokenizer=False).eos_ids == {5, 1}


@pytest.mark.parametrize(
    "role, data",
    [
        ("generation_config.json", b'{"eos_token_id": "two"}'),
        ("generation_config.json", b'{"eos_token_id": [1, true]}'),
        ("generation_config.json", b"[1]"),
        ("generation_config.json", b"{"),
        ("tokenizer_config.json", b"\xff\xfe"),
        ("tokenizer.json", b'{"not": "a tokenizer"}'),
    ],
)
def test_broken_resources_are_typed(tmp_path, tokenizer_json, role, data):
    path = write_file(tmp_path / "m.ninfer", full(tokenizer_json, **{role: data}))
    with open_artifact(path) as a, pytest.raises(InvalidError) as info:
        load_text_resources(a, need_tokenizer=True)
    assert info.value.rule == "frontend.resource.invalid"
    assert info.value.path in (role, "eos_token_id")


def test_a_missing_tokenizer_fails_only_when_needed(tmp_path, tokenizer_json):
    resources = full(tokenizer_json)
    del resources["tokenizer.json"]
    with open_artifact(write_file(tmp_path / "m.ninfer", resources)) as a:
        res = load_text_resources(a, need_tokenizer=False)
        assert res.tokenizer is None and res.eos_ids == {0, 7}  # no tokenizer: no eos_token id
        with pytest.raises(InvalidError) as info:
            load_text_resources(a, need_tokenizer=True)
    assert info.value.rule == "ninfer3.binder.resource"
