"""`convert … --hadamard PARAM_GLOB` end to end (spec/ninfer3.md §qwen35-hadamard-import, §use;
spec/numerics.md §hadamard), on a tiny Qwen3.5 checkpoint 1024 wide (one Gated DeltaNet and one
attention layer, vocab 300), the issue's Hadamard target:

* the rotated file's logits equal the stored (rotated) head times H(signs ∘ final hidden),
  recomputed here in binary64 from the Sylvester matrix built by Kronecker products, within 1e-5
  relative;
* against the unrotated file they differ only by the bf16 rounding of the rotated weights,
  bounded row by row by 2^-9 · ‖w_r‖ · ‖h‖ (half a bf16 ulp, relative, through an orthogonal H),
  well under 1 % of the largest logit, with the same argmax everywhere;
* `dump` gives the stored matrix (the checkpoint's W · (HD)ᵀ rounded to bf16) and, with
  `--hadamard-signs`, the signs of the documented seed rule.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from strategies.qwen35_checkpoint import canonical, write_checkpoint

from weightfile.cli import main
from weightfile.fast.backend import FAST
from weightfile.ref.ninfer3.read import open_artifact
from weightfile.ref.numerics.matrix import HadamardMatrix
from weightfile.ref.qwen35.bind import bind_ninfer
from weightfile.ref.qwen35.model import Qwen35Model

TOKENS = [5, 77, 3, 250]
K = 1024
SIZES = dict(
    hidden_size=K,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    linear_num_key_heads=1,
    linear_key_head_dim=16,
    linear_num_value_heads=2,
    linear_value_head_dim=16,
    linear_conv_kernel_dim=4,
    layer_types=["linear_attention", "full_attention"],
)
HEAD = "text/output_head"


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
    return np.array([-1.0 if stream[i // 8] >> (i % 8) & 1 else 1.0 for i in range(k)])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hf35wide")
    model = write_checkpoint(folder, tied=False, seed=11, sizes=SIZES)
    out = tmp_path_factory.mktemp("out")
    paths = {}
    for name, extra in {
        "plain": [],
        "head": ["--hadamard", HEAD],
        "many": ["--hadamard", "text/layers/*/mlp/gate", "--hadamard",
                 "text/layers/1/attention/[qkgv]*", "--hadamard", HEAD, "--hadamard-seed", "7"],
    }.items():  # fmt: skip
        paths[name] = out / f"{name}.ninfer"
        assert main(["convert", str(folder), str(paths[name]), "--quiet", *extra]) == 0
    paths["checkpoint"] = folder
    return canonical(model), paths


@cache
def run(path: Path, codecs=None) -> tuple[np.ndarray, np.ndarray, Qwen35Model]:
    """(logits, final hidden, model) of the reference model bound to the file (once a file)."""
    with open_artifact(path) as nf:
        config, weights = bind_ninfer(nf) if codecs is None else bind_ninfer(nf, codecs)
    model = Qwen35Model(config, weights)
    seen: dict[str, np.ndarray] = {}
    logits = model.forward(TOKENS, model.new_cache(), trace=seen.__setitem__)
    return logits, np.asarray(seen["final_norm"]), model


def dump(path: Path, tmp: Path, *args: str) -> np.ndarray:
    out = tmp / f"d{len(list(tmp.iterdir()))}.npy"
    assert main(["dump", str(path), *args, "--out", str(out)]) == 0
    return np.load(out)


def test_dump_gives_the_rotated_head_and_the_seeded_signs(files, tmp_path):
    params, paths = files
    signs = dump(paths["head"], tmp_path, HEAD, "--hadamard-signs")
    assert signs.dtype == np.float32 and signs.shape == (K,)
    assert (signs == seed_rule_signs(0, "text/final_hidden", K)).all()
    assert (dump(paths["head"], tmp_path, "h.final_hidden") == signs).all()  # the object
    stored = dump(paths["head"], tmp_path, HEAD)
    want = (params[HEAD].astype(np.float64) * signs) @ sylvester()  # W·(HD)ᵀ = W·D·H
    want_bf16 = want.astype(ml_dtypes.bfloat16).astype(np.float32)
    # binary64 butterflies vs a binary64 matrix product: a bf16 rounding may flip at a tie only
    assert np.mean(stored == want_bf16) > 0.999
    assert np.abs(stored - want).max() <= 2.0**-8 * np.abs(want).max()
    assert not np.allclose(stored, params[HEAD], atol=1e-3)  # really rotated
    # the seeded signs differ with the seed and with the input
    many = dump(paths["many"], tmp_path, HEAD, "--hadamard-signs")
    assert (many == seed_rule_signs(7, "text/final_hidden", K)).all() and (many != signs).any()


def test_rotated_logits_are_the_stored_head_times_h_of_the_final_hidden(files, tmp_path):
    _, paths = files
    logits, hidden, model = run(paths["head"])
    assert isinstance(model.weights.output_head, HadamardMatrix)
    stored = dump(paths["head"], tmp_path, HEAD).astype(np.float64)
    signs = dump(paths["head"], tmp_path, HEAD, "--hadamard-signs").astype(np.float64)
    z = (hidden.astype(np.float64) * signs) @ sylvester()  # H symmetric: row · H = (H · col)ᵀ
    want = z @ stored.T
    rel = np.abs(logits - want).max() / np.abs(want).max()
    assert rel <= 1e-5, rel
    # and without the transform the same stored head gives something else entirely
    plain = hidden.astype(np.float64) @ stored.T
    assert np.abs(logits - plain).max() / np.abs(want).max() > 1e-2


@pytest.mark.parametrize("name", ["head", "many"])
def test_rotated_file_computes_the_unrotated_function(files, name, capsys):
    params, paths = files
    got, hidden, _ = run(paths[name])
    want, plain_hidden, _ = run(paths["plain"])
    if name == "head":  # only the head differs: the final hidden is the same bits
        assert hidden.view(np.uint32).tolist() == plain_hidden.view(np.uint32).tolist()
    diff = np.abs(got.astype(np.float64) - want)
    # per logit: half a bf16 ulp of each rotated weight, through the orthogonal H
    head = params[HEAD].astype(np.float64)
    bound = (
        2.0**-9 * np.linalg.norm(head, axis=1)[None, :] * np.linalg.norm(hidden, axis=1)[:, None]
    )
    if name == "head":
        assert (diff <= bound + 1e-5 * np.abs(want).max()).all()
    top = np.abs(want).max()
    assert diff.max() <= 0.01 * top
    assert (got.argmax(axis=1) == want.argmax(axis=1)).all()
    assert diff.max() > 0  # the rounding of the rotated weights shows
    with capsys.disabled():
        print(f"\n[{name}] max |Δlogit| {diff.max():.3g} = {diff.max() / top:.2e} of max |logit| "
              f"{top:.3g}")  # fmt: skip


def test_fast_codecs_bind_the_same_bits(files):
    _, paths = files
    ref, _, _ = run(paths["many"])
    fast, _, _ = run(paths["many"], FAST.ninfer_codecs.get_codec)
    assert ref.view(np.uint32).tolist() == fast.view(np.uint32).tolist()


@pytest.mark.parametrize(
    "args,rule",
    [
        (["--hadamard", "text/layers/*/nothing"], "matches no matrix"),
        (["--hadamard", "text/layers/0/mlp/down"], "not a multiple of 1024"),  # K = 32
    ],
)
def test_bad_globs_are_refused(files, tmp_path, capsys, args, rule):
    """Beside the legal conversions of the fixture (same checkpoint)."""
    src = files[1]["checkpoint"]
    assert main(["convert", str(src), str(tmp_path / "x.ninfer"), "--quiet", *args]) == 1
    err = capsys.readouterr().err
    assert "qwen35.import.hadamard" in err and rule in err
    assert not (tmp_path / "x.ninfer").exists()


def test_a_tied_head_is_refused_and_vqf_targets_take_no_hadamard(tmp_path, capsys):
    src = tmp_path / "hf"
    write_checkpoint(src, tied=True, seed=11, sizes=SIZES)
    assert (
        main(["convert", str(src), str(tmp_path / "x.ninfer"), "--quiet", "--hadamard", HEAD]) == 1
    )
    assert "qwen35.import.hadamard" in capsys.readouterr().err
    assert main(["convert", str(src), str(tmp_path / "x.vqf"), "--hadamard", HEAD]) == 2
    assert "--hadamard is for .ninfer files" in capsys.readouterr().err


def test_dump_hadamard_signs_of_an_unrotated_parameter_is_a_usage_error(files, tmp_path, capsys):
    _, paths = files
    out = tmp_path / "s.npy"
    argv = ["dump", str(paths["head"]), "text/layers/0/mlp/gate", "--hadamard-signs", "--out"]
    assert main([*argv, str(out)]) == 2
    assert "carries hadamard_signs" in capsys.readouterr().err and not out.exists()
