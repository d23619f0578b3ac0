"""wf_attend (fast/csrc/model_ops.c) against the reference's spec/numerics.md §attention attention,
bit for bit.

Here head_dim is a multiple of 8, the vector path (fast/csrc/ops_body.h, AVX2 or NEON): Qwen3's
128 and the multiples of 32, and those that end in 8-column pieces (the Qwen3.5 vision tower's
72, and 8, 24, 40): several positions' dots at once, each output in its own lanes. Position
counts cover the four-at-a-time loop and its tail; every kernel path usable here runs
(spec/numerics.md §kernel-paths: portable takes the plain C loop).
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from weightfile.fast._native import address, each_isa
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.spec.numerics.profile import CANONICAL


def canonical_bits(a: np.ndarray) -> list[int]:
    """uint32 views, NaNs as one pattern (spec/numerics.md §special-values)."""
    a = np.asarray(a, dtype=np.float32)
    return np.where(np.isnan(a), np.uint32(0x7FC00000), a.view(np.uint32)).tolist()


@settings(max_examples=25, deadline=None)
@given(
    head_dim=st.sampled_from([8, 24, 32, 40, 64, 72, 128]),
    groups=st.sampled_from([(2, 1), (4, 2), (2, 2)]),
    npos=st.integers(1, 11),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 30.0]),
)
def test_attend_equals_ref(
    head_dim: int, groups: tuple[int, int], npos: int, seed: int, scale: float
) -> None:
    heads, kv_heads = groups
    rng = np.random.default_rng(seed)
    stride = kv_heads * head_dim
    q = (rng.standard_normal(heads * head_dim) * scale).astype(np.float32)
    keys = (rng.standard_normal((npos, stride)) * scale).astype(np.float32)
    values = rng.standard_normal((npos, stride)).astype(np.float32)
    scores = np.empty(npos, np.float32)
    outs = {}
    for isa in each_isa():
        outs[isa] = np.empty(heads * head_dim, np.float32)
        kernels().wf_attend(
            address(q), address(keys), address(values), npos, stride, heads, kv_heads, head_dim,
            address(scores), address(outs[isa]),
        )  # fmt: skip
    ref = kernels_for(CANONICAL)
    want: list[np.float32] = []
    for h in range(heads):
        kv = h // (heads // kv_heads) * head_dim
        qh = list(q[h * head_dim : (h + 1) * head_dim])
        ks = [list(keys[j, kv : kv + head_dim]) for j in range(npos)]
        vs = [list(values[j, kv : kv + head_dim]) for j in range(npos)]
        want += ref.attend(qh, ks, vs)
    assert len(outs) >= 1
    for out in outs.values():
        assert canonical_bits(out) == canonical_bits(np.array(want, dtype=np.float32))
