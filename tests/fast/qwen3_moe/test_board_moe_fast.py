"""The fast board MoE (fast/csrc/board_moe.c) == the engine's packs and == the reference, bit for
bit (spec/numerics.md §board-moe, §board-moe-model).

Oracles: tests/data/kestrel-board-v2/moe-* (the engine's own outputs, at 1 and 3 threads) and
ref.qwen3_moe.board (Hypothesis, on geometries that reach the hard cases: identical router rows
and zero inputs, so that logits tie at every rank and at the k-th slot; gate values where expf
overflows or underflows; the refused geometries). The whole board MoE model is compared with the
reference on both prompt paths, and `run --profile kestrel-board` runs a MoE file.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.cli import main
from weightfile.fast._native import each_isa
from weightfile.fast.qwen3_moe.board import ops
from weightfile.fast.qwen3_moe.board.model import bind_board_moe_fast
from weightfile.ref.numerics.matrix import QuantMatrix
from weightfile.ref.qwen3.board.model import generate
from weightfile.ref.qwen3_moe.board import ffn
from weightfile.ref.qwen3_moe.board.model import bind_board_moe
from weightfile.ref.vqf.read import open_vqf

_REF = Path(__file__).resolve().parents[2] / "ref" / "qwen3_moe" / "test_board_moe_packs.py"
_spec = importlib.util.spec_from_file_location("board_moe_pack_helpers", _REF)
packs = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(packs)  # type: ignore[union-attr]

F32 = np.float32


@cache
def stacked(pack: str) -> tuple[ops.StackedLayer, ...]:
    _, weights = packs.bound(pack)
    return tuple(ops.stack(lw.router.values, packs.experts_of(lw)) for lw in weights.layers)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("pack", packs.PACKS)
def test_fast_reproduces_every_array_of_the_pack(pack: str, threads: int) -> None:
    """Every array of the pack, bit for bit, with the products really split over 3 threads."""
    z = np.load(packs.DATA / pack / "engine.npz")
    config, _ = packs.bound(pack)
    k = config.num_experts_per_tok
    layers = stacked(pack)
    with ops.thread_grain(1):
        steps = [
            [ops.moe_ffn(layers[i], k, row, threads) for row in z["moe.x_in"][i]]
            for i in range(z["moe.x_in"].shape[0])
        ]
    assert packs.mismatches(ffn.dump_arrays(steps), z) == []


f16_bits = st.one_of(
    st.sampled_from([0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00, 0x7BFF, 0x2E66]),
    st.integers(0, 0x7BFF),  # finite, non-negative scales
)


@st.composite
def moe_layer(draw):
    """A random layer: d and Ie whole blocks (sometimes not: the refused geometries), E experts,
    top-k; router rows duplicated to force exact ties; some inputs all zero."""
    d = draw(st.sampled_from([32, 64, 96, 160, 40]))
    ie = draw(st.sampled_from([32, 64, 96, 48]))
    ne = draw(st.integers(1, 10))  # k up to 10: two product sets of 8 and the rest
    k = draw(st.integers(1, ne))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    router = (rng.standard_normal((ne, d)) * draw(st.sampled_from([0.3, 30.0]))).astype(F32)
    for e in range(1, ne):
        if draw(st.booleans()):
            router[e] = router[draw(st.integers(0, e - 1))]  # an exact tie with an earlier row
    cols = -(-d // 32) * 32
    down_cols = -(-ie // 32) * 32

    def q8(rows: int, c: int) -> QuantMatrix:
        scales = np.array([draw(f16_bits) for _ in range(4)], np.uint16)
        return QuantMatrix(
            rng.integers(-127, 128, (rows, c), dtype=np.int8),
            rng.choice(scales, size=(rows, c // 32)).astype(np.uint16),
        )

    experts = tuple(
        ffn.MoeExpert(q8(ie, cols), q8(ie, cols), q8(cols, down_cols)) for _ in range(ne)
    )
    scale = draw(st.sampled_from([0.0, 1.0, 50.0]))
    x = (rng.standard_normal(d) * scale).astype(F32)
    return router, experts, k, x


@settings(max_examples=30, deadline=None)
@given(moe_layer(), st.sampled_from([1, 3]))
def test_fast_moe_ffn_equals_the_reference(layer, threads) -> None:
    """Every intermediate of one token, bit for bit (uint32 patterns), refusals included."""
    router, experts, k, x = layer
    want = ffn.moe_ffn(router, experts, k, x)
    if want.refused:  # stacking needs whole blocks; the C refuses before reading any weight
        assert ffn.refused(len(x), experts[0].gate.shape[0])
        return
    layer = ops.stack(router, experts)
    for isa in each_isa():  # rows in 16, 8 or 1 lanes: units of 4 vectors and single groups
        with ops.thread_grain(1):
            got = ops.moe_ffn(layer, k, x, threads)
        for field in ffn.DUMP_NAMES:
            a, b = getattr(got, field), getattr(want, field)
            assert a.shape == b.shape and np.array_equal(packs.bits(a), packs.bits(b)), (isa, field)


@pytest.mark.parametrize("k", [9, 17])
def test_more_than_eight_experts_a_token(k: int) -> None:
    """The C runs gate/up 8 experts a pool call and down 16: k = 9 and 17 need a second (and a
    third) set, every expert's rows in its own place."""
    rng = np.random.default_rng(k)
    d, ie, ne = 64, 32, 20

    def q8(rows: int, cols: int) -> QuantMatrix:
        scales = np.float16(rng.uniform(1e-3, 1e-1, (rows, cols // 32))).view(np.uint16)
        return QuantMatrix(rng.integers(-127, 128, (rows, cols), dtype=np.int8), scales)

    experts = tuple(ffn.MoeExpert(q8(ie, d), q8(ie, d), q8(d, ie)) for _ in range(ne))
    router = (rng.standard_normal((ne, d)) * 0.01).astype(F32)  # weights near 1/k: all count
    x = rng.standard_normal(d).astype(F32)
    want = ffn.moe_ffn(router, experts, k, x)
    got = ops.moe_ffn(ops.stack(router, experts), k, x, 2)
    for field in ffn.DUMP_NAMES:
        assert np.array_equal(packs.bits(getattr(got, field)), packs.bits(getattr(want, field)))


def test_the_c_refuses_a_width_not_a_multiple_of_32_with_zeros() -> None:
    """The C's own guard (spec/numerics.md §board-moe-defect), called past the Python check:
    returns 1, the output zeroed even where it held garbage."""
    lib = ops.lib()
    x, out = np.ones(64, F32), np.full(64, 7.0, F32)
    nothing = np.zeros(1, F32)
    p = [nothing.ctypes.data] * 6
    rc = lib.wfbm_moe_ffn(x.ctypes.data, 64, nothing.ctypes.data, 1, 1, *p, 48, 1,
                          *[nothing.ctypes.data] * 7, out.ctypes.data)  # fmt: skip
    assert rc == 1 and out.tolist() == [0.0] * 64


@pytest.mark.parametrize("path", ["prefill", "tokenwise"])
def test_fast_board_moe_model_equals_the_reference(path: str) -> None:
    """The whole board MoE model (attention of the dense board path, the Q8 MoE FFN in every
    layer): logits, tokens and every recorded intermediate, bit for bit, at 3 threads."""
    with open_vqf(packs.DATA / packs.PACKS[1] / "model.vqf") as vqf:
        ref = bind_board_moe(vqf)
        fast = bind_board_moe_fast(vqf, threads=3)
        prompt = [3, 17, 200, 5, 9]
        want = generate(ref, prompt, 2, path, ops=True)
        with ops.thread_grain(1):
            got = generate(fast, prompt, 2, path, ops=True)
    assert sorted(got) == sorted(want)
    assert any(".moe.router_logits" in n for n in want)
    for n in want:
        assert np.array_equal(packs.bits(got[n]), packs.bits(want[n])), n


def test_run_with_the_board_profile_runs_a_moe_file(capsys) -> None:
    """`run --profile kestrel-board` on a Qwen3-MoE file: both engines, the same tokens."""
    model = str(packs.DATA / packs.PACKS[0] / "model.vqf")
    outs = []
    for engine in ("fast", "ref"):
        argv = ["run", model, "--token-ids", "1,2,3", "--max-tokens", "3"]
        assert main([*argv, "--profile", "kestrel-board", "--engine", engine]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].strip()


@pytest.fixture(scope="module")
def aarch64(tmp_path_factory):
    from tests.emulated import build_driver

    return build_driver(Path(__file__).with_name("moe_driver.c"), tmp_path_factory.mktemp("moe"))


def test_the_c_under_aarch64_gives_the_packs_bits(aarch64) -> None:
    """fast/csrc/board_moe.c built for aarch64 and run under qemu with the aarch64 glibc's
    expf: layer 1 of the tie pack (moe-d), tokens 0 and 3 (a tie at the k-th slot, both tied
    experts chosen), every intermediate bit for bit against the engine's arrays."""
    pack = packs.PACKS[1]
    z = np.load(packs.DATA / pack / "engine.npz")
    layer = stacked(pack)[1]
    d, ne, ie = layer.router.shape[1], layer.router.shape[0], layer.expert_width
    k = z["moe.experts"].shape[2]
    for t in (0, 3):
        raw = aarch64.run(
            "moe", [d, ne, k, ie, 2], z["moe.x_in"][1, t], layer.router, layer.gate.scales,
            layer.up.scales, layer.down.scales, layer.gate.codes.tobytes(),
            layer.up.codes.tobytes(), layer.down.codes.tobytes(),
        )  # fmt: skip
        sizes = [ne, k, k, k * ie, k * ie, k * ie, k * d, d]
        names = ["router_logits", "experts", "weights", "gate", "up", "act", "partial_sum", "out"]
        parts = np.split(raw, np.cumsum(sizes)[:-1])
        for name, got in zip(names, parts, strict=True):
            want = z[f"moe.{name}"][1, t].astype(np.float32).reshape(-1)
            assert np.array_equal(packs.bits(got), packs.bits(want)), (t, name)
