"""The kestrel-board profile's Q8 MoE FFN reproduces the board engine's own outputs bit for bit
(spec/numerics.md §board-moe).

The oracle is tests/data/kestrel-board-v2/moe-*: the Kestrel engine's `st_moe_ffn_sparse_q8`,
built for aarch64 and run under qemu on the pack's `model.vqf` with the inputs `moe.x_in`
(README.md there). Nothing in those numbers comes from weightfile. Every comparison is of
uint32 bit patterns (int32 for expert ids), never of floats with a tolerance. The tie rule,
the softmax and the refusal also have hand-derived cases.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3_moe.bind_vqf import bind_vqf
from weightfile.ref.qwen3_moe.board import ffn
from weightfile.ref.qwen3_moe.board.model import bind_board_moe
from weightfile.ref.vqf.read import open_vqf
from weightfile.spec.errors import UnsupportedError

DATA = Path(__file__).resolve().parents[2] / "data" / "kestrel-board-v2"
PACKS = ("moe-a-q8_0-x101", "moe-d-q8_0-x102")
F32 = np.float32


def test_the_two_moe_packs_are_in_the_tree_and_intact() -> None:
    """Missing oracle data fails, never skips; each model file is the one the engine ran."""
    for pack in PACKS:
        for f in ("model.vqf", "case.json", "engine.npz"):
            assert (DATA / pack / f).is_file(), f"{pack}/{f} missing"
        case = json.loads((DATA / pack / "case.json").read_text())
        digest = hashlib.sha256((DATA / pack / "model.vqf").read_bytes()).hexdigest()
        assert digest == case["recipe"]["vqf_sha256"], pack


@cache
def bound(pack: str):
    with open_vqf(DATA / pack / "model.vqf") as vqf:
        return bind_vqf(vqf)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32) if a.dtype == np.float32 else a


def experts_of(lw) -> tuple[ffn.MoeExpert, ...]:
    return tuple(ffn.MoeExpert(e.gate, e.up, e.down) for e in lw.experts)


def pack_steps(pack: str, x: np.ndarray, step=None) -> list[list[ffn.MoeStep]]:
    config, weights = bound(pack)
    step = step or (lambda lw, row: ffn.moe_ffn(lw.router.values, experts_of(lw), k, row))
    k = config.num_experts_per_tok
    return [[step(weights.layers[i], row) for row in x[i]] for i in range(x.shape[0])]


def mismatches(got: dict[str, np.ndarray], z) -> list[str]:
    """Each engine array that differs: its name and first differing index."""
    wrong = []
    for name, value in got.items():
        want = z[name]
        if value.shape != want.shape or not np.array_equal(bits(value), bits(want)):
            same_shape = value.shape == want.shape
            where = np.argwhere(bits(value) != bits(want))[:1].tolist() if same_shape else "shape"
            wrong.append(f"{name} {where}")
    return wrong


@pytest.mark.parametrize("pack", PACKS)
def test_the_reference_reproduces_every_array_of_the_pack(pack: str) -> None:
    """Router logits, chosen experts (rank order, exact router ties), weights, each expert's
    gate/up/act, the running sum after each expert and the output: bit for bit."""
    z = np.load(DATA / pack / "engine.npz")
    got = ffn.dump_arrays(pack_steps(pack, z["moe.x_in"]))
    assert set(got) == set(ffn.DUMP_NAMES.values())
    assert mismatches(got, z) == []
    assert z["moe.info_simd_mode8_rejected_ef"][2] == 0  # the engine did not refuse


def test_the_tie_pack_holds_the_ties_its_case_describes() -> None:
    """Guard that the tie rule is really exercised: in moe-d layer 1, experts 0 and 7 have
    bitwise-equal logits; where both are chosen, 0 is ranked just before 7; where the tie falls
    on the k-th slot, 0 is taken and 7 dropped (case.json's router_tie, from the engine)."""
    z = np.load(DATA / PACKS[1] / "engine.npz")
    tie = json.loads((DATA / PACKS[1] / "case.json").read_text())["router_tie"]
    logits, experts = z["moe.router_logits"][1], z["moe.experts"][1]
    assert np.array_equal(bits(logits[:, 0]), bits(logits[:, 7]))
    for t in tie["tokens_with_both_selected"]:
        row = list(experts[t])
        assert row.index(7) == row.index(0) + 1, (t, row)
    for t in tie["tokens_with_only_one_selected_(tie_at_the_k_boundary)"]:
        assert experts[t][-1] == 0 and 7 not in experts[t], (t, experts[t])
        assert ffn.top_k(logits[t], 3) == list(experts[t])


def test_top_k_ranks_by_descending_logit_ties_to_the_smaller_index() -> None:
    """Hand-derived from spec/numerics.md §board-moe-topk."""
    f = np.array
    assert ffn.top_k(f([1.0, 3.0, 3.0, 2.0], F32), 2) == [1, 2]
    assert ffn.top_k(f([5.0, 5.0, 5.0], F32), 2) == [0, 1]
    assert ffn.top_k(f([0.0, 1.0, -1.0, 1.0, 2.0], F32), 3) == [4, 1, 3]
    assert ffn.top_k(f([-0.0, 0.0], F32), 1) == [0]  # -0 == +0: a tie, the smaller index
    assert ffn.top_k(f([2.0, 1.0], F32), 2) == [0, 1]


def test_route_weights_is_a_softmax_over_the_chosen_logits() -> None:
    """Equal logits share the weight exactly; one chosen expert weighs 1; a logit 88 below the
    top contributes expf(-88) (tiny, still counted): hand values."""
    assert ffn.route_weights(np.array([0.3, 0.3], F32)).tolist() == [0.5, 0.5]
    assert ffn.route_weights(np.array([1.5, 1.5, 1.5, 1.5], F32)).tolist() == [0.25] * 4
    assert ffn.route_weights(np.array([7.0], F32)).tolist() == [1.0]
    w = ffn.route_weights(np.array([0.0, -88.0], F32))
    assert w[0] == F32(1.0) and 0 < w[1] < 1e-38


@pytest.mark.parametrize(("hidden", "width"), [(64, 48), (48, 32), (40, 40), (64, 16)])
def test_a_width_or_hidden_not_a_multiple_of_32_gives_zeros(hidden: int, width: int) -> None:
    """spec/numerics.md §board-moe-defect: the engine returns y = 0 and computes nothing."""
    assert ffn.refused(hidden, width)
    rng = np.random.default_rng(hidden * width)
    cols = -(-hidden // 32) * 32  # the weights themselves are never read
    m = QuantMatrix(
        rng.integers(-127, 128, (width, cols), dtype=np.int8),
        np.full((width, cols // 32), 0x3C00, np.uint16),
    )
    x = rng.standard_normal(hidden).astype(F32)
    s = ffn.moe_ffn(
        rng.standard_normal((4, hidden)).astype(F32), (ffn.MoeExpert(m, m, m),) * 4, 2, x
    )
    assert s.refused and s.out.tolist() == [0.0] * hidden and s.experts.size == 0
    assert not ffn.refused(64, 32) and not ffn.refused(96, 64)


def test_silu_exact_is_a_division_not_a_reciprocal() -> None:
    """fl(g / fl(1 + expf(-g))) · u with hand values: g = 0 gives 0; u = 1 and g = large gives
    g; a large negative g gives -0 (expf overflows to inf, g / inf)."""
    g = np.array([0.0, 100.0, -200.0], F32)
    assert ffn.silu_exact(g, np.ones(3, F32)).tolist() == [0.0, 100.0, -0.0]


def test_the_board_moe_model_refuses_q4_experts_naming_the_limit(tmp_path) -> None:
    """A Q4_0 Qwen3-MoE file: vqf.bind.unsupported, the message naming what is needed."""
    from weightfile.bench.synthetic import synthetic_model

    path, _ = synthetic_model("tiny-moe-q4_0", tmp_path)
    with open_vqf(path) as vqf, pytest.raises(UnsupportedError) as exc:
        bind_board_moe(vqf)
    assert exc.value.rule == "vqf.bind.unsupported"
    assert "Q8_0 projections and experts" in str(exc.value) and "q4" in str(exc.value)
