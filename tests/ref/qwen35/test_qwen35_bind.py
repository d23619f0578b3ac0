"""bind_ninfer on files written with the reference writer (spec/ninfer3.md §binding, §use,
§validation, §qwen35-text).

A good file binds to exactly the weights it was written from (bf16: the bf16-rounded values;
q8: the codec's decoded values) and runs to the same logits bit for bit; each binder rule
rejects its one broken file with its rule id and path.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from strategies.ninfer3 import raises_rule
from strategies.qwen35 import (
    TextFile,
    bf16_round,
    random_parameters,
    text_file,
    tiny_config,
)

from weightfile.ref.codecs.ninfer3.codec import get_codec
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.config import validate_text_config
from weightfile.ref.qwen35.model import Qwen35Model
from weightfile.ref.qwen35.weights import weights_from_parameters
from weightfile.spec.errors import InvalidError

L0, L1 = "text/layers/0/", "text/layers/1/"


@cache
def params(moe: bool = False) -> dict[str, np.ndarray]:
    return random_parameters(tiny_config(moe), seed=3)


def bind_file(tmp_path: Path, tf: TextFile):
    with open_artifact(tf.write(tmp_path / "m.ninfer")) as nf:
        return bind_ninfer(nf)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


@pytest.mark.parametrize("moe", [False, True], ids=["dense", "moe"])
def test_bf16_file_binds_to_its_rounded_weights_and_logits(tmp_path: Path, moe: bool) -> None:
    config = tiny_config(moe)
    rounded = {
        n: v if n.endswith(("a_log", "dt_bias")) else bf16_round(v) for n, v in params(moe).items()
    }
    bound_config, bound = bind_file(tmp_path, text_file(config, params(moe), "bf16"))
    assert bound_config.json == config.json
    want = weights_from_parameters(config, rounded)
    assert (bits(bound.token_embedding) == bits(want.token_embedding)).all()
    g0, w0 = bound.layers[0].mixer, want.layers[0].mixer
    assert (bits(g0.a_log) == bits(w0.a_log)).all()  # fp32 direct: not rounded
    assert (bits(g0.convolution) == bits(w0.convolution)).all()
    tokens = [4, 8, 15, 16, 23, 42]
    got = Qwen35Model(bound_config, bound).forward(tokens, Qwen35Model(config, want).new_cache())
    ref = Qwen35Model(config, want).forward(tokens, Qwen35Model(config, want).new_cache())
    assert (bits(got) == bits(ref)).all()


def test_q8_parents_decode_through_their_codec(tmp_path: Path) -> None:
    config = tiny_config()
    _, bound = bind_file(tmp_path, text_file(config, params(), "q8_g32_fp16"))
    codec = get_codec("q8_g32_fp16", "row_split_k128_v1")
    down = params()[L0 + "mlp/down"]
    want = codec.decode(codec.encode(down, down.shape), down.shape)
    assert (bits(bound.layers[0].ffn.down.values) == bits(want)).all()
    # the fused {q, k, v, z} parent: q is its first Kg rows, decoded with the parent's scales
    q = bound.layers[0].mixer.query.values
    assert np.abs(q - params()[L0 + "gdn/query"]).max() < 0.01


Edit = Callable[[TextFile], None]


def drop_binding(name: str) -> Edit:
    def edit(tf: TextFile) -> None:
        del tf.bindings[name]
        tf.uses[:] = [u for u in tf.uses if u["parameter"] != name]

    return edit


def rebind(name: str, binding: dict) -> Edit:
    return lambda tf: tf.bindings.__setitem__(name, binding)


def shrink_part(name: str) -> Edit:
    def edit(tf: TextFile) -> None:
        tf.bindings[name]["parts"][0]["range"][1] -= 1

    return edit


def a_log_as_bf16(tf: TextFile) -> None:
    name = L0 + "gdn/a_log"
    tf.objects[:] = [o for o in tf.objects if o.id != f"w.{name}"]
    tf.add_tensor(f"w.{name}", params()[name], "bf16", "contiguous_le_v1")


def edit_use(index: int, **changes) -> Edit:
    def edit(tf: TextFile) -> None:
        for key, value in changes.items():
            if value is None:
                del tf.uses[index][key]
            else:
                tf.uses[index][key] = value

    return edit


def drop_use(tf: TextFile) -> None:
    del tf.uses[0]


def drop_resource(tf: TextFile) -> None:
    del tf.resources["chat_template.jinja"]


def bad_config(tf: TextFile) -> None:
    tf.config["hidden_act"] = "silu"


CASES: list[tuple[str, Edit, str, str]] = [
    ("missing parameter", drop_binding(L1 + "attention/key_norm"), "binder.parameter", "bindings"),
    (
        "mis-shaped whole",
        rebind(L0 + "input_norm", {"object": f"w.{L1}attention/key_norm"}),
        "binder.shape",
        f'bindings["{L0}input_norm"]',
    ),
    (
        "short coverage",
        shrink_part(L0 + "gdn/query"),
        "binder.coverage",
        f'bindings["{L0}gdn/query"]',
    ),
    ("a_log not fp32", a_log_as_bf16, "text.direct_format", f'bindings["{L0}gdn/a_log"]'),
    (
        "unexpected name",
        rebind("text/layers/9/input_norm", {"object": f"w.{L0}input_norm"}),
        "text.unexpected_parameter",
        'bindings["text/layers/9/input_norm"]',
    ),
    ("use without policy", edit_use(0, activation_policy=None), "text.use_policy", "uses[0]"),
    (
        "use at wrong input",
        edit_use(0, input="text/layers/0/ffn_input"),
        "text.use_unexpected",
        "uses[0].input",
    ),
    ("declared input unused", drop_use, "text.use_missing", "uses"),
    ("missing resource", drop_resource, "binder.resource", "components.text.resources"),
    ("closed config", bad_config, "text.key", "components.text.config.hidden_act"),
]


@pytest.mark.parametrize(
    ("edit", "rule", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_binder_rule_rejects_its_file(
    tmp_path: Path, edit: Edit, rule: str, path: str
) -> None:
    tf = text_file(tiny_config(), params(), "bf16")
    edit(tf)
    with raises_rule(InvalidError, f"ninfer3.{rule}") as info:
        bind_file(tmp_path, tf)
    assert info.value.path == path


def test_output_head_use_for_an_absent_component_is_rejected(tmp_path: Path) -> None:
    tf = text_file(tiny_config(), params(), "bf16")
    use = {"parameter": "text/output_head", "input": "mtp/final_hidden"}
    tf.uses.append(use | {"activation_policy": "AllowA8"})
    with raises_rule(InvalidError, "ninfer3.text.use_unexpected"):  # no mtp component: rejected
        bind_file(tmp_path, tf)


@cache
def wide_config():
    """K must be a multiple of 1024, so the Hadamard cases use a 1024-wide single-layer model;
    untied, so that the head is a matrix of its own."""
    return validate_text_config(
        {
            "architectures": ["Qwen3_5ForCausalLM"],
            "model_type": "qwen3_5_text",
            "hidden_size": 1024,
            "vocab_size": 4,
            "num_hidden_layers": 1,
            "max_position_embeddings": 64,
            "tie_word_embeddings": False,
            "rms_norm_eps": 1e-6,
            "layer_types": ["full_attention"],
            "num_attention_heads": 1,
            "num_key_value_heads": 1,
            "head_dim": 4,
            "intermediate_size": 2,
            "rope_parameters": {
                "rope_theta": 10000,
                "partial_rotary_factor": 0.5,
                "mrope_section": [1, 0, 0],
            },
        }
    )


SIGNS = np.where(np.arange(1024) % 3 == 0, -1.0, 1.0)
HEAD = "text/output_head"


def wide_file(
    signs: np.ndarray = SIGNS, parameter: str = HEAD, fmt: str = "bf16", extra: str | None = None
) -> TextFile:
    """The wide model with `signs` as hadamard_signs of `parameter`'s Use (and of `extra`'s,
    sharing the one signs object: identical bindings are allowed, spec/ninfer3.md §use)."""
    config = wide_config()
    tf = text_file(config, random_parameters(config, seed=1), "bf16")
    tf.add_tensor("w.signs", signs, fmt, "contiguous_le_v1")
    for use in tf.uses:
        if use["parameter"] in (parameter, extra):
            use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs"}}
    return tf


def test_hadamard_signs_make_the_product_w_times_h_of_x(tmp_path: Path) -> None:
    """A legal file binds: the head and mlp/gate (both K = 1024) become W · H(x); the logits are
    the plain file's logits computed with the stored head times H(signs ∘ final hidden), which
    the reference computes through its kernels, checked here against the bound model's own
    trace (spec/numerics.md §hadamard, the float order of ref/numerics/hadamard.py)."""
    from weightfile.ref.numerics.hadamard import hadamard
    from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix

    gate = L0 + "mlp/gate"
    _, weights = bind_file(tmp_path, wide_file(extra=gate))
    head = weights.output_head
    assert isinstance(head, HadamardMatrix) and isinstance(head.matrix, DenseMatrix)
    assert head.signs.tolist() == SIGNS.astype(int).tolist()
    assert isinstance(weights.layers[0].ffn.gate, HadamardMatrix)
    assert isinstance(weights.layers[0].ffn.up, DenseMatrix)  # no signs on its Use
    model = Qwen35Model(wide_config(), weights)
    seen: dict[str, np.ndarray] = {}
    logits = model.forward([1, 3, 2], model.new_cache(), trace=seen.__setitem__)
    for t, n in enumerate(seen["final_norm"]):
        z = hadamard(list(n), SIGNS.astype(int).tolist())
        want = [model.kernels.dot(row, z) for row in head.matrix.values]
        assert bits(logits[t]).tolist() == bits(np.array(want, dtype=np.float32)).tolist()
    # the rotation changes the logits: the same file without signs gives others
    plain = wide_file()
    for use in plain.uses:
        use.pop("auxiliaries", None)
    (tmp_path / "plain").mkdir()
    _, unrotated = bind_file(tmp_path / "plain", plain)
    other = Qwen35Model(wide_config(), unrotated).forward([1, 3, 2], model.new_cache())
    assert not np.array_equal(other, logits)


@pytest.mark.parametrize(
    "signs,parameter,fmt,detail",
    [
        (SIGNS * 0.5, HEAD, "bf16", "neither +1 nor -1"),  # not ±1
        (SIGNS[:512], HEAD, "bf16", "512 signs for K = 1024"),  # wrong length
        (SIGNS[:4], L0 + "attention/output", "bf16", "K = 4 is not a multiple of 1024"),
        (SIGNS, HEAD, "fp32", "not bf16"),
    ],
    ids=["not-plus-minus-one", "wrong-length", "k-not-multiple-of-1024", "not-bf16"],
)
def test_bad_hadamard_signs_are_rejected(
    tmp_path: Path, signs: np.ndarray, parameter: str, fmt: str, detail: str
) -> None:
    """Each beside the legal file above (same model, same Use, only the signs differ)."""
    with raises_rule(InvalidError, "ninfer3.binder.hadamard") as info:
        bind_file(tmp_path, wide_file(signs, parameter, fmt))
    assert detail in info.value.detail
    assert info.value.path.startswith("uses[") and "hadamard_signs" in info.value.path


def logits_of(tmp_path: Path, tf: TextFile, name: str) -> np.ndarray:
    with open_artifact(tf.write(tmp_path / name)) as nf:
        config, weights = bind_ninfer(nf)
    model = Qwen35Model(config, weights)
    return model.forward([7, 1, 30, 2], model.new_cache())


def test_policies_and_divisors_do_not_change_the_reference(tmp_path: Path) -> None:
    """spec/models.md §qwen35-activations: A16Only, AllowA8 and AllowA4 mean the same float32
    computation."""
    plain = text_file(tiny_config(), params(), "bf16")
    relaxed = text_file(tiny_config(), params(), "bf16")
    relaxed.add_tensor("w.divisor", np.array(0.25, dtype=np.float32), "fp32", "contiguous_le_v1")
    for n, use in enumerate(relaxed.uses):
        use["activation_policy"] = ("AllowA8", "AllowA4")[n % 2]
        use["auxiliaries"] = {"activation_input_divisor": {"object": "w.divisor"}}
    want = logits_of(tmp_path, plain, "a.ninfer")
    assert (bits(logits_of(tmp_path, relaxed, "b.ninfer")) == bits(want)).all()


def test_parts_are_concatenated_in_binding_order(tmp_path: Path) -> None:
    """spec/ninfer3.md §binding: parts may reorder rows; the parameter is the parts' elements in
    array order."""
    tf = text_file(tiny_config(), params(), "bf16")
    name = L0 + "mlp/gate"
    rows = params()[name]
    half = rows.shape[0] // 2 * rows.shape[1]  # elements in the top half
    top, bottom = rows[: rows.shape[0] // 2], rows[rows.shape[0] // 2 :]
    tf.add_tensor("w.swapped", np.concatenate([bottom, top]), "bf16", "contiguous_le_v1")
    tf.bindings[name] = {
        "parts": [
            {"object": "w.swapped", "range": [rows.size - half, rows.size]},
            {"object": "w.swapped", "range": [0, rows.size - half]},
        ]
    }
    with open_artifact(tf.write(tmp_path / "m.ninfer")) as nf:
        _, bound = bind_ninfer(nf)
    assert (bits(bound.layers[0].ffn.gate.values) == bits(bf16_round(rows))).all()


@pytest.mark.parametrize(
    ("aux", "rule"),
    [
        ({"activation_scale": {"object": "w.divisor"}}, "binder.auxiliary_role"),
        ({"activation_input_divisor": {"object": "w.negative"}}, "binder.divisor"),
    ],
    ids=["unknown role", "negative divisor"],
)
def test_auxiliaries_are_checked(tmp_path: Path, aux: dict, rule: str) -> None:
    tf = text_file(tiny_config(), params(), "bf16")
    tf.add_tensor("w.divisor", np.array(0.25, dtype=np.float32), "fp32", "contiguous_le_v1")
    tf.add_tensor("w.negative", np.array(-1.0, dtype=np.float32), "fp32", "contiguous_le_v1")
    tf.uses[3]["auxiliaries"] = aux
    with raises_rule(InvalidError, f"ninfer3.{rule}"):
        bind_file(tmp_path, tf)


def test_fast_codecs_decode_the_same_weights(tmp_path: Path) -> None:
    from weightfile.fast.codecs.ninfer3.codec import get_codec as fast_codec

    entry = text_file(tiny_config(), params(), "q5_g64_fp16").write(tmp_path / "m.ninfer")
    with open_artifact(entry) as nf:
        _, ref = bind_ninfer(nf)
        _, fast = bind_ninfer(nf, fast_codec)
    assert (bits(ref.layers[1].mixer.query.values) == bits(fast.layers[1].mixer.query.values)).all()
    assert (bits(ref.output_head.values) == bits(fast.output_head.values)).all()
