"""The family-neutral layer library (ref/layers): heads, batches, MoE routing and combine, the
RMSNorm variants, SwiGLU and the table-driven trace emission, on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weightfile.ref.layers import attention, moe, norm, swiglu
from weightfile.ref.layers.batch import gather_requests, split_per_request, text_position_ids
from weightfile.ref.layers.heads import join_heads, split_heads
from weightfile.ref.layers.tokens import each
from weightfile.ref.layers.trace import emit, layer_name, model_names
from weightfile.ref.numerics.f32 import F32
from weightfile.ref.numerics.kernels import kernels_for
from weightfile.ref.numerics.matrix import DenseMatrix
from weightfile.spec.numerics.profile import CANONICAL

K = kernels_for(CANONICAL)


def bits(v) -> list[int]:
    return [int(x) for x in np.asarray(v, dtype=np.float32).view(np.uint32)]


@given(st.integers(1, 4), st.integers(1, 5))
def test_split_then_join_heads_is_the_identity(heads, head_dim):
    v = [F32(i) for i in range(heads * head_dim)]
    parts = split_heads(v, head_dim)
    assert len(parts) == heads and all(len(p) == head_dim for p in parts)
    assert join_heads(parts) == v


def test_each_applies_the_operation_to_every_token_in_order():
    seen = []
    rows = each(lambda a, b: seen.append(a) or [a[0] + b[0]], [[1], [2]], [[10], [20]])
    assert rows == [[11], [22]] and seen == [[1], [2]]
    with pytest.raises(ValueError):  # rows of different token counts
        each(lambda a, b: a, [[1], [2]], [[10]])


class Cache:
    def __init__(self, length):
        self.length = length


def test_a_batch_flattens_in_request_order_and_splits_back():
    a, b = Cache(0), Cache(5)
    tokens, pos, caches = gather_requests([([1, 2], a, None), ([3], b, None)])
    assert tokens == [1, 2, 3] and caches == [a, a, b]
    assert pos == [*text_position_ids(0, 2), (5, 5, 5)]
    out = split_per_request([[F32(1)], [F32(2)], [F32(3)]], [([1, 2], a, None), ([3], b, None)])
    assert [o.shape for o in out] == [(2, 1), (1, 1)]
    with pytest.raises(ValueError, match="own cache"):
        gather_requests([([1], a, None), ([2], a, None)])


def test_top_k_breaks_ties_to_the_lower_expert_and_returns_ascending_indices():
    probs = [F32(0.25), F32(0.1), F32(0.25), F32(0.4)]
    assert moe.top_k(probs, 2) == [0, 3]
    assert moe.top_k(probs, 3) == [0, 2, 3]


def test_route_renormalises_the_chosen_probabilities_by_their_sum():
    logits = [F32(0.5), F32(-1.0), F32(2.0), F32(0.0)]
    routes = moe.route(K, logits, 2)
    probs = K.softmax(logits)
    assert [e for e, _ in routes] == [0, 2]
    total = K.sum([probs[0], probs[2]])
    assert bits([w for _, w in routes]) == bits([probs[0] / total, probs[2] / total])


def test_combine_adds_each_weighted_expert_in_route_order_from_zero():
    outs = {1: [F32(1.5), F32(-2.0)], 3: [F32(0.25), F32(4.0)]}
    routes = [(1, F32(0.75)), (3, F32(0.25))]
    got = moe.combine(routes, outs.__getitem__, 2)
    want = [F32(0) + F32(0.75) * outs[1][i] for i in range(2)]
    want = [want[i] + F32(0.25) * outs[3][i] for i in range(2)]
    assert bits(got) == bits(want)


def test_zero_centred_weight_is_one_plus_w_rounded_once():
    w = np.array([0.0, -1.0, 1e-8, 3.5], dtype=np.float32)
    assert bits(norm.zero_centred(w)) == bits(np.float32(1) + w)


def test_head_rmsnorm_is_the_plain_norm_of_each_head():
    v = [F32(x) for x in (1, 2, 3, 4, -1, 0.5)]
    w = np.array([1.0, 0.5, 2.0], dtype=np.float32)
    eps = F32(1e-6)
    got = norm.head_rmsnorm(K, v, w, 3, eps)
    want = norm.rmsnorm(K, v[:3], w, eps) + norm.rmsnorm(K, v[3:], w, eps)
    assert bits(got) == bits(want)


def test_gated_rmsnorm_multiplies_the_norm_by_silu_of_the_gate():
    x, g = [F32(1), F32(-2)], [F32(0.5), F32(3)]
    w = [F32(1), F32(2)]
    n = K.rmsnorm(x, w, F32(1e-6))
    assert bits(norm.gated_rmsnorm(K, x, w, g, F32(1e-6))) == bits(
        [n[0] * K.silu(g[0]), n[1] * K.silu(g[1])]
    )


class Ffn:
    def __init__(self, rng):
        self.gate = DenseMatrix(rng.standard_normal((4, 2)).astype(np.float32))
        self.up = DenseMatrix(rng.standard_normal((4, 2)).astype(np.float32))
        self.down = DenseMatrix(rng.standard_normal((2, 4)).astype(np.float32))


def test_swiglu_rows_equal_swiglu_ffn_token_by_token():
    w = Ffn(np.random.default_rng(0))
    n = [[F32(0.5), F32(-1)], [F32(2), F32(0.25)]]
    rows = swiglu.swiglu_rows(K, w.gate, w.up, w.down, n)
    for t, v in enumerate(n):
        one = swiglu.swiglu_ffn(K, w, v)
        assert all(bits(rows[j][t]) == bits(one[j]) for j in range(4))


def test_gqa_attend_reads_kv_head_h_over_group():
    """Two query heads, one kv head: both read the same cached head."""
    q = [F32(1), F32(0), F32(0), F32(1)]
    keys = [[[F32(1), F32(0)]], [[F32(0), F32(1)]]]  # [pos][kv_head][head_dim]
    values = [[[F32(2), F32(0)]], [[F32(0), F32(4)]]]
    out = attention.attend(K, q, keys, values, 2, 2)
    h0 = K.attend(q[:2], [k[0] for k in keys], [v[0] for v in values])
    h1 = K.attend(q[2:], [k[0] for k in keys], [v[0] for v in values])
    assert bits(out) == bits(h0 + h1)


def test_emit_records_in_the_tables_order_and_refuses_a_mismatch():
    seen = []
    emit(lambda name, rows: seen.append(name), 2, ("b", "a"), {"a": 1, "b": 2})
    assert seen == [layer_name(2, "b"), layer_name(2, "a")] == ["layers.2.b", "layers.2.a"]
    with pytest.raises(AssertionError):
        emit(lambda *_: None, 0, ("a",), {"a": 1, "extra": 2})
    assert model_names([("x",), ("y",)]) == [
        "embed", "layers.0.x", "layers.1.y", "final_norm", "logits",
    ]  # fmt: skip
