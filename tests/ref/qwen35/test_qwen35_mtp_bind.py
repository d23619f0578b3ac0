"""The `.ninfer` MTP and proposal-head binders on files written with the reference writer
(spec/ninfer3.md §qwen35-mtp-names, spec/models.md §qwen35-mtp).

A legal file binds: the MTP block's weights are the written bf16 values (its {query, key, gate,
value} one fused parent, as the official converter packs it), and the proposal ids are the
written int32 words. Each new rule rejects its one broken file with its rule id and JSON path.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from strategies.ninfer3 import raises_rule
from strategies.qwen35 import (
    TextFile,
    add_mtp,
    add_proposal,
    bf16_round,
    random_mtp_parameters,
    random_parameters,
    text_file,
)
from strategies.qwen35_mtp import small_config

from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import ObjectDecoder, bind_ninfer
from weightfile.ref.qwen35.config import validate_text_config
from weightfile.ref.qwen35.mtp_bind import check_mtp, check_proposal, mtp_weights
from weightfile.spec.errors import InvalidError, UnsupportedError

M0 = "mtp/layers/0/"
IDS = np.array([7, 3, 0, 47, 12, 30], dtype=np.int32)


@cache
def params() -> tuple[dict, dict]:
    c = small_config(False)
    return random_parameters(c, seed=11), random_mtp_parameters(c, seed=12)


def mtp_file(ids: np.ndarray | None = IDS) -> TextFile:
    text, mtp = params()
    tf = text_file(small_config(False), text, "bf16")
    add_mtp(tf, mtp)
    if ids is not None:
        add_proposal(tf, text["text/output_head"][np.asarray(ids) % 48][: len(ids)], ids)
    return tf


def check(tmp_path: Path, tf: TextFile):
    with open_artifact(tf.write(tmp_path / "m.ninfer")) as nf:
        config, _ = bind_ninfer(nf)
        binding = check_mtp(nf, config)
        return mtp_weights(binding, ObjectDecoder(nf)), check_proposal(nf, config)


def test_legal_file_binds_to_its_bf16_weights(tmp_path: Path) -> None:
    w, proposal = check(tmp_path, mtp_file())
    _, mtp = params()
    want = bf16_round(mtp[M0 + "attention/gate"])
    assert np.array_equal(w.block.mixer.gate.values.view(np.uint32), want.view(np.uint32))
    want = bf16_round(mtp["mtp/input_projection"])
    assert np.array_equal(w.input_projection.values.view(np.uint32), want.view(np.uint32))
    want = bf16_round(mtp["mtp/hidden_norm"])
    assert np.array_equal(w.hidden_norm.view(np.uint32), want.view(np.uint32))
    assert proposal is not None and proposal.token_ids.tolist() == IDS.tolist()
    assert proposal.head.shape == (6, 16)


def test_moe_block_has_the_text_ffn_form(tmp_path: Path) -> None:
    c = small_config(True)
    tf = text_file(c, random_parameters(c, seed=1), "bf16")
    add_mtp(tf, random_mtp_parameters(c, seed=2))
    w, proposal = check(tmp_path, tf)
    assert len(w.block.ffn.experts) == 3 and proposal is None


def test_full_domain_proposal_has_no_ids(tmp_path: Path) -> None:
    tf = mtp_file(None)
    add_proposal(tf, params()[0]["text/output_head"], None)
    _, proposal = check(tmp_path, tf)
    assert proposal is not None and proposal.token_ids is None and proposal.head.shape == (48, 16)


Edit = Callable[[TextFile], None]


def mtp_config(value) -> Edit:
    return lambda tf: tf.others["mtp"].__setitem__("config", value)


def drop_use(name: str, consumed: str | None = None) -> Edit:
    def edit(tf: TextFile) -> None:
        tf.uses[:] = [
            u for u in tf.uses if not (u["parameter"] == name and consumed in (None, u["input"]))
        ]

    return edit


def edit_use(name: str, **changes) -> Edit:
    def edit(tf: TextFile) -> None:
        use = next(u for u in tf.uses if u["parameter"] == name)
        for k, v in changes.items():
            if v is None:
                del use[k]
            else:
                use[k] = v

    return edit


def norm_as_fp32(tf: TextFile) -> None:
    name = "mtp/final_norm"
    tf.objects[:] = [o for o in tf.objects if o.id != "m." + name]
    tf.add_tensor("m." + name, params()[1][name], "fp32", "contiguous_le_v1")


def stray(name: str) -> Edit:
    return lambda tf: tf.bindings.__setitem__(name, {"object": "m.mtp/final_norm"})


def ids_file(ids) -> Edit:
    def edit(tf: TextFile) -> None:
        tf.objects[:] = [o for o in tf.objects if o.id not in ("p.ids", "p.head")]
        tf.uses[:] = [u for u in tf.uses if u["parameter"] != "proposal/head"]
        add_proposal(tf, params()[0]["text/output_head"][: len(ids)], np.array(ids))

    return edit


def rows(n: int) -> Edit:
    return lambda tf: tf.proposal.__setitem__("rows", n)


def ids_as_bf16(tf: TextFile) -> None:
    tf.objects[:] = [o for o in tf.objects if o.id != "p.ids"]
    tf.add_tensor("p.ids", IDS.astype(np.float32), "bf16", "contiguous_le_v1")


C = "components.mtp.config"
CASES: list[tuple[str, Edit, str, str | None]] = [
    ("config key", mtp_config({"architectures": ["Qwen3_5MTP"], "n": 1}), "ninfer3.mtp.config", C),
    ("config shape", mtp_config({"architectures": "Qwen3_5MTP"}), "ninfer3.mtp.config", C),
    ("architecture", mtp_config({"architectures": ["Qwen3_5MoeMTP"]}),
     "ninfer3.mtp.architecture", C + ".architectures[0]"),
    ("stray binding", stray("mtp/layers/1/input_norm"), "ninfer3.mtp.unexpected_parameter",
     'bindings["mtp/layers/1/input_norm"]'),
    ("direct format", norm_as_fp32, "ninfer3.mtp.direct_format", 'bindings["mtp/final_norm"]'),
    ("use missing", drop_use("mtp/input_projection"), "ninfer3.mtp.use_missing", "uses"),
    ("head use missing", drop_use("text/output_head", "mtp/final_hidden"),
     "ninfer3.mtp.use_missing", "uses"),
    ("use policy", edit_use(M0 + "mlp/down", activation_policy=None), "ninfer3.mtp.use_policy",
     None),
    ("use input", edit_use(M0 + "mlp/down", input=M0 + "ffn_input"), "ninfer3.mtp.use_unexpected",
     None),
    ("proposal rows", rows(5), "ninfer3.proposal.rows", "components.text.proposal.rows"),
    ("proposal id range", ids_file([1, 2, 48]), "ninfer3.proposal.token_range",
     'bindings["proposal/token_ids"]'),
    ("proposal negative id", ids_file([1, -2, 4]), "ninfer3.proposal.token_range",
     'bindings["proposal/token_ids"]'),
    ("proposal duplicate", ids_file([1, 9, 4, 9]), "ninfer3.proposal.duplicate",
     'bindings["proposal/token_ids"]'),
    ("proposal ids format", ids_as_bf16, "ninfer3.proposal.format",
     'bindings["proposal/token_ids"]'),
    ("proposal stray", stray("proposal/extra"), "ninfer3.proposal.unexpected_parameter",
     'bindings["proposal/extra"]'),
    ("proposal use missing", drop_use("proposal/head"), "ninfer3.proposal.use_missing", "uses"),
    ("proposal use input", edit_use("proposal/head", input="text/final_hidden"),
     "ninfer3.proposal.use_unexpected", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "rule", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_mtp_rule_rejects_its_file(
    tmp_path: Path, edit: Edit, rule: str, path: str | None
) -> None:
    tf = mtp_file()
    edit(tf)
    with raises_rule(InvalidError, rule) as info:
        check(tmp_path, tf)
    if path is not None:
        assert info.value.path == path
    else:
        assert info.value.path.startswith("uses[")


def test_ids_outside_the_tokenizers_public_domain(tmp_path: Path) -> None:
    """The tokenizer addresses ids 0..39: id 45 is a head row but no public token."""
    tf = mtp_file()
    vocab = {f"t{i}": i for i in range(40)}
    blob = json.dumps({"model": {"vocab": vocab}}).encode()
    tf.data["r.tokenizer.json"] = blob
    tf.objects[:] = [
        type(o)(o.id, len(blob)) if o.id == "r.tokenizer.json" else o for o in tf.objects
    ]
    ids_file([3, 45])(tf)
    with raises_rule(InvalidError, "ninfer3.proposal.token_range"):
        check(tmp_path, tf)


def test_mtp_needs_attention_keys(tmp_path: Path) -> None:
    """An all-GDN text config has no attention keys: the MTP block cannot be shaped."""
    doc = copy.deepcopy(dict(small_config(False).json))
    doc |= {"num_hidden_layers": 1, "layer_types": ["linear_attention"]}
    for key in ("num_attention_heads", "num_key_value_heads", "head_dim", "rope_parameters"):
        del doc[key]
    c = validate_text_config(doc)
    tf = text_file(c, random_parameters(c, seed=1), "bf16")
    tf.others["mtp"] = {"config": {"architectures": ["Qwen3_5MTP"]}, "target": "text"}
    with raises_rule(InvalidError, "ninfer3.mtp.attention"):
        check(tmp_path, tf)


def test_target_must_be_text(tmp_path: Path) -> None:
    tf = mtp_file()
    tf.others["mtp"]["target"] = "mtp"
    with raises_rule(InvalidError, "ninfer3.binder.component_target"):
        check(tmp_path, tf)


def test_hadamard_signs_on_an_mtp_use_are_refused(tmp_path: Path) -> None:
    """Signs need K % 1024 == 0: an FFN 1024 wide, signs on the MTP down projection's Use."""
    doc = dict(small_config(False).json) | {"intermediate_size": 1024}
    c = validate_text_config(doc)
    tf = text_file(c, random_parameters(c, seed=1), "bf16")
    add_mtp(tf, random_mtp_parameters(c, seed=2))
    signs = np.where(np.arange(1024) % 3 == 0, -1.0, 1.0).astype(np.float32)
    tf.add_tensor("w.signs", signs, "bf16", "contiguous_le_v1")
    use = next(u for u in tf.uses if u["parameter"] == M0 + "mlp/down")
    use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs"}}
    with raises_rule(UnsupportedError, "ninfer3.mtp.hadamard") as info:
        check(tmp_path, tf)
    assert info.value.path.endswith(".auxiliaries")


def test_a_dense_mtp_has_the_official_16_bindings_and_9_uses() -> None:
    """The official Qwen3.6-27B inventory counts MTP 16 bindings and 9 Uses (the issue's table;
    the output head's Use at mtp/final_hidden is counted with text)."""
    from weightfile.spec.ninfer3.mtp_names import mtp_parameters

    params = mtp_parameters(small_config(False).json)
    assert len(params) == 16
    assert sum(len(p.inputs) for p in params) == 9
