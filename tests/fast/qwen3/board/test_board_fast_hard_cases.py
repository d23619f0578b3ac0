"""fast/csrc/board.c on the board's hardest inputs, against an exact oracle (issue 36 item 1).

The same inputs and oracle as tests/ref/qwen3/board/test_board_hard_cases.py, through the C
kernels: activation codes on and beside (k + 1/2)·d at arbitrary scales d ≠ 1
(spec/numerics.md §board-activations: a true division, not a reciprocal multiply), and Q8 prefill
chains of close terms (spec/numerics.md §board-q8-prefill: separate multiply and add, not an FMA;
spec/numerics.md §board-q4-prefill: fused), with 1 and 3 threads.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.board import (
    QBLOCK,
    act_codes_exact,
    act_scale_exact,
    chain_exact,
    close_chains,
    midpoint_blocks,
)

from weightfile.fast.qwen3.board import ops
from weightfile.ref.numerics.matrix import QuantMatrix

F32 = np.float32
EXAMPLES = settings(max_examples=40, deadline=None)


def bits(values) -> list[int]:
    return np.asarray(values, dtype=F32).view(np.uint32).tolist()


@EXAMPLES
@given(midpoint_blocks())
def test_activation_codes_near_midpoints_at_any_scale(x: np.ndarray) -> None:
    codes, scales = ops.quantize_act(x)
    for b, block in enumerate(x.reshape(-1, QBLOCK)):
        d = act_scale_exact(block)
        assert bits([scales[b]]) == bits([d])
        assert codes[b].tolist() == act_codes_exact(block, d)


@EXAMPLES
@given(close_chains(), st.sampled_from([1, 3]))
def test_q8_prefill_chain_is_unfused_and_q4_prefill_fused(case, threads: int) -> None:
    w, scale_bits, x = case
    m = QuantMatrix(w, scale_bits)
    codes, d = ops.quantize_act(x)
    separate = chain_exact(w, scale_bits, codes, d, fused=False)
    fused = chain_exact(w, scale_bits, codes, d, fused=True)
    assert bits(separate) != bits(fused), "the case does not tell fused from separate"
    assert bits(ops.q8_prefill_gemm(m, codes, d, threads)) == bits(separate)
    assert bits(ops.q4_prefill_gemm(m, codes, d, threads)) == bits(fused)
