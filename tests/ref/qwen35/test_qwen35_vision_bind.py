"""The `.ninfer` vision binder on files written with the reference writer (spec/ninfer3.md
§qwen35-vision-names, spec/models.md §qwen35-vision).

A legal file binds: the decoded tower weights are the written bf16 values, fused {q, k, v}
parents included. Each new rule rejects its one broken file with its rule id and path. A file
without `vision` given an image is a one-line typed error naming the component; a file with
`vision` run without images never reads the vision payload (every vision tensor poisoned with
NaN bytes leaves the text logits bit for bit unchanged, while the same poison with an image
reaches the logits).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from strategies.ninfer3 import raises_rule
from strategies.qwen35 import (
    TINY_VISION,
    VISION_IDS,
    TextFile,
    add_vision,
    bf16_round,
    random_parameters,
    random_vision_parameters,
    text_file,
    tiny_config,
)

from weightfile.frontend.dispatch import load_session
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import Artifact, open_artifact
from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix
from weightfile.ref.qwen3_vl.vision import VisionInput, VisionTower
from weightfile.ref.qwen35.bind import ObjectDecoder, bind_ninfer
from weightfile.ref.qwen35.vision import check_vision, vision_weights
from weightfile.spec.errors import InvalidError

L0 = "vision/layers/0/"
TOKENS = [4, 8, VISION_IDS["<|vision_start|>"], *[VISION_IDS["<|image_pad|>"]] * 4, 9, 15]


@cache
def text_params() -> dict[str, np.ndarray]:
    return random_parameters(tiny_config(), seed=3)


@cache
def vision_params() -> dict[str, np.ndarray]:
    return random_vision_parameters(TINY_VISION, 32, seed=5)


def vl_file(vision: dict | None = None, poison: bool = False) -> TextFile:
    tf = text_file(tiny_config(), text_params(), "bf16")
    add_vision(tf, copy.deepcopy(vision or TINY_VISION), vision_params(), poison=poison)
    return tf


def check(tmp_path: Path, tf: TextFile):
    with open_artifact(tf.write(tmp_path / "m.ninfer")) as nf:
        config, _ = bind_ninfer(nf)
        binding = check_vision(nf, config)
        return binding, vision_weights(binding, ObjectDecoder(nf))


def test_legal_file_binds_to_its_bf16_weights(tmp_path: Path) -> None:
    binding, w = check(tmp_path, vl_file())
    assert binding.config.deepstack_visual_indexes == () and binding.config.head_dim == 8
    assert binding.ids.image == 92 and binding.ids.vision_start == 90
    p = vision_params()
    want_qkv = np.concatenate(
        [bf16_round(p[L0 + f"attention/{r}"]) for r in ("query", "key", "value")]
    )
    assert np.array_equal(w.blocks[0].qkv.values.view(np.uint32), want_qkv.view(np.uint32))
    want_bias = bf16_round(p[L0 + "attention/key_bias"])
    assert np.array_equal(w.blocks[0].qkv_b[16:32].view(np.uint32), want_bias.view(np.uint32))
    merger = bf16_round(p["vision/merger/fc2"])
    assert np.array_equal(w.merger.fc2.values.view(np.uint32), merger.view(np.uint32))
    assert w.pos_embed.shape == (9, 16) and w.patch_embed.shape == (16, 3 * 2 * 2 * 2)


Edit = Callable[[TextFile], None]


def config_edit(**changes) -> Edit:
    def edit(tf: TextFile) -> None:
        for k, v in changes.items():
            if v is None:
                del tf.others["vision"]["config"][k]
            else:
                tf.others["vision"]["config"][k] = v

    return edit


def drop_use(name: str) -> Edit:
    return lambda tf: tf.uses.__setitem__(
        slice(None), [u for u in tf.uses if u["parameter"] != name]
    )


def edit_use(name: str, **changes) -> Edit:
    def edit(tf: TextFile) -> None:
        use = next(u for u in tf.uses if u["parameter"] == name)
        for k, v in changes.items():
            if v is None:
                del use[k]
            else:
                use[k] = v

    return edit


def bias_as_fp32(tf: TextFile) -> None:
    name = "vision/merger/fc1_bias"
    tf.objects[:] = [o for o in tf.objects if o.id != "v." + name]
    tf.add_tensor("v." + name, vision_params()[name], "fp32", "contiguous_le_v1")


def no_image_token(tf: TextFile) -> None:
    tf.data["r.tokenizer.json"] = b'{"model": {"vocab": {}}, "added_tokens": []}'
    tf.objects[:] = [
        type(o)(o.id, len(tf.data[o.id])) if o.id == "r.tokenizer.json" else o for o in tf.objects
    ]


def drop_resource(tf: TextFile) -> None:
    del tf.others["vision"]["resources"]["video_preprocessor_config.json"]


def stray(tf: TextFile) -> None:
    tf.bindings["vision/layers/7/norm1_weight"] = {"object": f"v.{L0}norm1_weight"}


C = "components.vision.config."
CASES: list[tuple[str, Edit, str, str]] = [
    ("closed config", config_edit(hidden_act="gelu"), "ninfer3.vision.key", C + "hidden_act"),
    ("missing key", config_edit(depth=None), "ninfer3.vision.missing", C + "depth"),
    ("model_type", config_edit(model_type="qwen3_5_moe_vision"), "ninfer3.vision.model_type",
     C + "model_type"),
    ("value", config_edit(patch_size=0), "ninfer3.vision.value", C + "patch_size"),
    ("value type", config_edit(depth=2.0), "ninfer3.vision.value", C + "depth"),
    ("heads divide", config_edit(num_heads=3), "ninfer3.vision.heads", C + "num_heads"),
    ("head width % 4", config_edit(num_heads=8), "ninfer3.vision.heads", C + "num_heads"),
    ("square", config_edit(num_position_embeddings=8), "ninfer3.vision.positions",
     C + "num_position_embeddings"),
    ("image token", no_image_token, "ninfer3.vision.token",
     "components.text.resources.tokenizer.json"),
    ("resource", drop_resource, "ninfer3.binder.resource", "components.vision.resources"),
    ("stray binding", stray, "ninfer3.vision.unexpected_parameter",
     'bindings["vision/layers/7/norm1_weight"]'),
    ("direct format", bias_as_fp32, "ninfer3.vision.direct_format",
     'bindings["vision/merger/fc1_bias"]'),
    ("use missing", drop_use("vision/merger/fc2"), "ninfer3.vision.use_missing", "uses"),
    ("use policy", edit_use("vision/merger/fc1", activation_policy=None),
     "ninfer3.vision.use_policy",
     None),
    ("use input", edit_use("vision/merger/fc1", input="vision/merger/activation"),
     "ninfer3.vision.use_unexpected", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "rule", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_vision_rule_rejects_its_file(
    tmp_path: Path, edit: Edit, rule: str, path: str | None
) -> None:
    tf = vl_file()
    edit(tf)
    with raises_rule(InvalidError, rule) as info:
        check(tmp_path, tf)
    if path is not None:
        assert info.value.path == path
    else:
        assert info.value.path.startswith("uses[")


def test_target_must_be_text(tmp_path: Path) -> None:
    tf = vl_file()
    tf.others["vision"]["target"] = "vision"
    with raises_rule(InvalidError, "ninfer3.binder.component_target"):
        check(tmp_path, tf)


def rotated_fc2_file(signs_on: str = "mlp/fc2") -> TextFile:
    """A one-block tower whose MLP is 1024 wide (K % 1024 == 0 for fc2), signs on `signs_on`'s
    Use."""
    vision = dict(TINY_VISION, depth=1, intermediate_size=1024)
    tf = text_file(tiny_config(), text_params(), "bf16")
    add_vision(tf, vision, random_vision_parameters(vision, 32, seed=2))
    tf.add_tensor("w.signs", SIGNS.astype(np.float32), "bf16", "contiguous_le_v1")
    use = next(u for u in tf.uses if u["parameter"] == L0 + signs_on)
    use["auxiliaries"] = {"hadamard_signs": {"object": "w.signs"}}
    return tf


SIGNS = np.where(np.arange(1024) % 3 == 0, -1, 1).astype(np.int8)


def test_hadamard_signs_on_a_vision_use_make_a_rotated_matrix(tmp_path: Path) -> None:
    """spec/ninfer3.md §qwen35-vision-names: signs on a vision matrix Use with K = 1024 bind; the
    layer is the stored matrix read at H(signs ∘ x) (a HadamardMatrix with the file's signs)."""
    binding, w = check(tmp_path, rotated_fc2_file())
    fc2 = w.blocks[0].fc2
    assert isinstance(fc2, HadamardMatrix) and np.array_equal(fc2.signs, SIGNS)
    assert isinstance(w.blocks[0].fc1, DenseMatrix)
    assert list(binding.signs) == [L0 + "mlp/fc2"]


def test_hadamard_signs_need_k_a_multiple_of_1024(tmp_path: Path) -> None:
    """Signs on fc1 (K = 16 columns): the text binder's rule for bad signs, on the Use's
    auxiliary."""
    with raises_rule(InvalidError, "ninfer3.binder.hadamard") as info:
        check(tmp_path, rotated_fc2_file("mlp/fc1"))
    assert "not a multiple of 1024" in str(info.value)


def hadamard_matrix(n: int) -> np.ndarray:
    """The normalised Sylvester matrix of order n, built by Kronecker products in binary64 (not
    the butterflies of the code under test)."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.kron(np.array([[1.0, 1.0], [1.0, -1.0]]), h)
    return h / np.sqrt(n)


def test_rotated_fc2_is_the_stored_matrix_times_h_of_signed_input(tmp_path: Path) -> None:
    """The reference tower's fc2 rows equal W_stored · H(signs ∘ gelu) ⊕ b recomputed in
    binary64 from the trace's own input rows, within 1e-5 of the largest output."""
    tf = rotated_fc2_file()
    _, w = check(tmp_path, tf)
    rec = TraceRecorder()
    VisionTower(check_vision_config(tf), w).forward([image()], rec)
    g = rec.arrays()["vision.blocks.0.gelu"].astype(np.float64)
    stored = w.blocks[0].fc2.matrix.values.astype(np.float64)
    want = (g * SIGNS) @ hadamard_matrix(1024).T @ stored.T + w.blocks[0].fc2_b
    got = rec.arrays()["vision.blocks.0.fc2"]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def check_vision_config(tf: TextFile):
    from weightfile.ref.qwen35.vision import tower_config

    return tower_config(tf.others["vision"]["config"], tf.config["hidden_size"])


def image() -> VisionInput:
    rng = np.random.default_rng(1)
    return VisionInput(rng.normal(0, 1, (16, 24)).astype(np.float32), (1, 4, 4))


def logits(path: Path, images: bool) -> tuple[np.ndarray, dict]:
    s = load_session(path, None, False, images=images)
    rec = TraceRecorder()
    ids = TOKENS if images else [4, 8, 9, 15]
    if images:
        s.model.attach_images([image()])
    return s.model.forward(ids, s.model.new_cache(), trace=rec), rec.arrays()


def test_without_images_the_vision_payload_is_never_read(tmp_path: Path, monkeypatch) -> None:
    clean = vl_file().write(tmp_path / "clean.ninfer")
    poisoned = vl_file(poison=True).write(tmp_path / "poisoned.ninfer")
    want, _ = logits(clean, images=False)
    reads: list[tuple[int, int]] = []
    plain = Artifact.read_range

    def recorded(self, offset: int, length: int):
        reads.append((offset, offset + length))
        return plain(self, offset, length)

    monkeypatch.setattr(Artifact, "read_range", recorded)
    got, trace = logits(poisoned, images=False)
    monkeypatch.undo()
    with open_artifact(poisoned) as nf:
        spans = [
            (o.offset, o.offset + o.bytes)
            for o in nf.directory.objects_by_id.values()
            if o.id.startswith("v.")
        ]
    assert len(spans) == 2 * 12 + 9 and reads  # every vision tensor object, and some reads
    assert not [r for r in reads for v in spans if r[0] < v[1] and v[0] < r[1]]
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert not any(k.startswith("vision.") for k in trace)
    # the poison is live: with an image it reaches the tower and the logits
    good, t = logits(clean, images=True)
    assert np.isfinite(good).all() and t["vision.merger"].shape == (4, 32)
    bad, _ = logits(poisoned, images=True)
    assert np.isnan(bad).any()


def test_an_image_for_a_file_without_vision_names_the_component(tmp_path: Path, capsys) -> None:
    from PIL import Image

    from weightfile.cli import main

    path = text_file(tiny_config(), text_params(), "bf16").write(tmp_path / "t.ninfer")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "i.png")
    argv = ["run", str(path), "--token-ids", "4,8", "--image", str(tmp_path / "i.png")]
    assert main([*argv, "--max-tokens", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ninfer3.binder.component" in err[0] and "'vision'" in err[0]
    with raises_rule(InvalidError, "ninfer3.binder.component"):
        load_session(path, None, False, images=True)


def test_images_take_the_file_processor_values(tmp_path: Path) -> None:
    """spec/models.md §qwen35-vision-prompt: mean and std from the vision component's
    preprocessor_config.json resource, the geometry from its config."""
    from PIL import Image

    from weightfile.frontend.image import ImageSettings, image_prompt_ids, preprocess_hf

    tf = vl_file()
    blob = b'{"image_mean": [0.25, 0.5, 0.75], "image_std": [0.5, 0.25, 0.5]}'
    rid = tf.others["vision"]["resources"]["preprocessor_config.json"]
    tf.data[rid] = blob
    tf.objects[:] = [type(o)(o.id, len(blob)) if o.id == rid else o for o in tf.objects]
    path = tf.write(tmp_path / "m.ninfer")
    picture = np.random.default_rng(2).integers(0, 256, (8, 12, 3), dtype=np.uint8)
    Image.fromarray(picture).save(tmp_path / "i.png")
    s = load_session(path, None, False, images=True)
    image_prompt_ids(s, None, "4,92,9", False, [tmp_path / "i.png"], pixels=(16, 256))
    (got,) = s.model.pending_images
    geometry = dict(
        patch_size=2, merge_size=2, temporal_patch_size=2, min_pixels=16, max_pixels=256
    )
    own = ImageSettings(**geometry, image_mean=(0.25, 0.5, 0.75), image_std=(0.5, 0.25, 0.5))
    want = preprocess_hf(Image.fromarray(picture), own)
    assert got.grid_thw == want.grid_thw
    assert np.array_equal(got.pixel_values.view(np.uint32), want.pixel_values.view(np.uint32))
    default = preprocess_hf(Image.fromarray(picture), ImageSettings(**geometry))
    assert not np.array_equal(default.pixel_values, got.pixel_values)


def test_engine_fast_without_images_ignores_a_poisoned_vision_payload(tmp_path: Path) -> None:
    """The same proof on engine fast, whose text model reads the mapped payload (no read_range
    to record): every vision tensor NaN bytes, the text logits equal the clean file's bit for
    bit; with an image the poison reaches the logits."""
    from weightfile.fast._native import library
    from weightfile.fast.backend import FAST

    if library() is None:
        pytest.skip("no C kernels: engine fast runs the reference")
    clean = vl_file().write(tmp_path / "clean.ninfer")
    poisoned = vl_file(poison=True).write(tmp_path / "poisoned.ninfer")
    got = []
    for path in (clean, poisoned):
        s = load_session(path, None, False, FAST, images=False)
        got.append(s.model.forward([4, 8, 9, 15], s.model.new_cache()))
    assert np.isfinite(got[0]).all()
    assert np.array_equal(got[1].view(np.uint32), got[0].view(np.uint32))
    s = load_session(poisoned, None, False, FAST, images=True)
    s.model.attach_images([image()])
    assert np.isnan(s.model.forward(TOKENS, s.model.new_cache())).any()
