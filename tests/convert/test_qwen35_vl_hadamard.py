"""`convert … --hadamard` on vision matrices (spec/ninfer3.md §qwen35-hadamard-import,
§qwen35-vision-names; spec/numerics.md §hadamard).

A tiny random `Qwen3_5ForConditionalGeneration` whose tower MLP is 1024 wide
(tests/strategies/qwen35_vl_checkpoint.py) is converted to bf16 twice: plain, and with every
block's fc2 (K = 1024) stored rotated. The rotated file binds (the vision binder accepts the
signs), its signs are the seed rule's, each rotated fc2 output is the stored matrix times
H(signs ∘ x) recomputed here with a Kronecker-built Sylvester matrix, and the rotated file's
merger rows and logits match the plain file's within the bf16 rounding of the rotated weights.
The sessions are engine fast (the fast tower gives the reference tower's bits:
tests/differential/test_qwen35_vision_fast_eq_ref.py).
"""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np
import pytest
from strategies.qwen35_vl_checkpoint import PROCESSOR, ids, image_array, write_checkpoint

from weightfile.backends import backend_named
from weightfile.cli import main
from weightfile.frontend.dispatch import load_session
from weightfile.frontend.image import image_prompt_ids
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.numerics.matrix import DenseMatrix, HadamardMatrix
from weightfile.ref.qwen35.bind import ObjectDecoder, bind_ninfer
from weightfile.ref.qwen35.vision import check_vision, vision_weights

pytest.importorskip("PIL", reason="images need Pillow")

GLOB = "vision/layers/*/mlp/fc2"
PIXELS = (PROCESSOR["min_pixels"], PROCESSOR["max_pixels"])


@cache
def sylvester() -> np.ndarray:
    """The normalised Sylvester matrix of order 1024, binary64, by Kronecker products."""
    h = np.ones((1, 1))
    for _ in range(10):
        h = np.kron(h, np.array([[1.0, 1.0], [1.0, -1.0]]))
    return h / 32.0


def seed_rule_signs(seed: int, input_name: str, k: int) -> np.ndarray:
    """spec/ninfer3.md §qwen35-hadamard-import, restated: SHA-256 blocks, bit i mod 8 of byte
    i // 8 (least significant first) set -> −1."""
    stream = b"".join(
        hashlib.sha256(f"weightfile-hadamard/{seed}/{input_name}/{j}".encode()).digest()
        for j in range((k + 255) // 256)
    )
    return np.array([-1 if stream[i // 8] >> (i % 8) & 1 else 1 for i in range(k)], np.int8)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from PIL import Image

    folder = tmp_path_factory.mktemp("hf35vlh")
    write_checkpoint(folder, seed=13, vision={"intermediate_size": 1024})
    Image.fromarray(image_array(shape=(16, 24))).save(folder / "img.png")
    paths = {"img": folder / "img.png"}
    paths["folder"] = folder
    for name, extra in {"plain": [], "rotated": ["--hadamard", GLOB]}.items():
        paths[name] = folder / f"{name}.ninfer"
        args = ["convert", str(folder), str(paths[name]), "--format", "bf16", "--quiet", *extra]
        assert main(args) == 0
    return paths


def session_run(path, img):
    """(session, logits, trace) of `run --image --engine fast` on a prompt around the image."""
    s = load_session(path, None, False, backend_named("fast"), images=True)
    t = ids()
    prompt = f"5,{t['<|vision_start|>']},{t['<|image_pad|>']},{t['<|vision_end|>']},40,9"
    tokens = image_prompt_ids(s, None, prompt, False, [img], pixels=PIXELS)
    rec = TraceRecorder()
    logits = s.model.forward(tokens, s.model.new_cache(), trace=rec)
    return s, logits, rec.arrays()


@cache
def ref_weights(path):
    """The reference binder's tower weights of the file."""
    with open_artifact(path) as nf:
        config, _ = bind_ninfer(nf)
        return vision_weights(check_vision(nf, config), ObjectDecoder(nf))


@pytest.fixture(scope="module")
def runs(files):
    return {name: session_run(files[name], files["img"]) for name in ("plain", "rotated")}


def test_rotated_fc2_binds_with_the_seed_rule_signs(files) -> None:
    for name in ("plain", "rotated"):
        blocks = ref_weights(files[name]).blocks
        for i, block in enumerate(blocks):
            if name == "plain":
                assert isinstance(block.fc2, DenseMatrix)
                continue
            assert isinstance(block.fc2, HadamardMatrix) and isinstance(block.fc1, DenseMatrix)
            want = seed_rule_signs(0, f"vision/layers/{i}/mlp_activation", 1024)
            assert np.array_equal(block.fc2.signs, want)


def test_rotated_fc2_is_the_stored_matrix_times_h_of_signed_input(files, runs) -> None:
    """Each block's fc2 rows = W_stored · H(signs ∘ gelu) ⊕ b in binary64, within 1e-5 of the
    largest."""
    trace = runs["rotated"][2]
    for i, block in enumerate(ref_weights(files["rotated"]).blocks):
        g = trace[f"vision.blocks.{i}.gelu"].astype(np.float64) * block.fc2.signs
        stored = block.fc2.matrix.values.astype(np.float64)
        want = g @ sylvester().T @ stored.T + block.fc2_b
        got = trace[f"vision.blocks.{i}.fc2"]
        assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_rotated_file_computes_the_plain_function(runs) -> None:
    """The merger rows and logits of the rotated file against the plain file's: the rotated
    weights are rounded to bf16 once more, so they differ by that rounding only (figures in
    spec/ninfer3.md §qwen35-hadamard-import), the argmax equal everywhere."""
    (_, lp, tp), (_, lr, tr) = runs["plain"], runs["rotated"]
    merger_p, merger_r = tp["vision.merger"], tr["vision.merger"]
    assert not np.array_equal(merger_p, merger_r)  # the rotation really changed the weights
    peak = np.abs(merger_p).max()
    assert np.abs(merger_r - merger_p).max() <= 0.01 * peak
    assert np.abs(lr - lp).max() <= 0.01 * np.abs(lp).max()
    assert np.array_equal(lr.argmax(-1), lp.argmax(-1))
    print("merger", np.abs(merger_r - merger_p).max(), peak, "logits",
          np.abs(lr - lp).max(), np.abs(lp).max())  # fmt: skip


def test_a_vision_matrix_whose_k_is_not_a_multiple_of_1024_is_refused(files, tmp_path, capsys):
    """fc1 reads the tower's 32-wide rows: qwen35.import.hadamard, nothing written."""
    out = tmp_path / "x.ninfer"
    args = ["convert", str(files["folder"]), str(out), "--quiet", "--hadamard", "vision/*/fc1"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "qwen35.import.hadamard" in err and "not a multiple of 1024" in err
    assert not out.exists()
