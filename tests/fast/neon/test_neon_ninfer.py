"""The `.ninfer` Qwen3.5 kernels of fast/csrc/ninfer.c built for aarch64 (the NEON dot they call,
NEON auto-vectorised loops) equal the reference bit for bit under qemu-aarch64 (issue 28): the
products straight from q4/q5/q6/q8/t2 row-split, bf16/fp32 and fp8 row-scale payloads against the
reference codec's rows dotted in the spec/numerics.md §dot order, and one token's delta rule
against `ref.numerics.deltanet.delta_rule_step` (spec/numerics.md §gdn-gates).
"""

from __future__ import annotations

import numpy as np
from emulated import QemuDriver
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.layer_ops import bits, hard_vectors
from strategies.qwen35_mixed import t2_payload

from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.fast.qwen35.matrix import _LUT, Segment
from weightfile.ref.numerics.deltanet import delta_rule_step
from weightfile.ref.numerics.reduce import dot

FORMATS = (
    ("bf16", "contiguous_le_v1"),
    ("fp32", "contiguous_le_v1"),
    ("q4_g64_fp16", "row_split_k128_v1"),
    ("q5_g64_fp16", "row_split_k128_v1"),
    ("q6_g64_fp16", "row_split_k128_v1"),
    ("q8_g32_fp16", "row_split_k128_v1"),
    ("t2_g128_fp16", "row_split_k128_v1"),
    ("fp8_e4m3fn_row_bf16", "row_scale_v1"),
)


def params_of(seg: Segment) -> list[int]:
    """The driver's nf_matmat parameters from the struct the Python side builds."""
    s = seg._struct
    return [
        s.kind, s.code_bits, s.group, s.base_bytes, s.high_bytes, s.base_bits, s.gpr,
        s.high_offset, s.scale_offset,
    ]  # fmt: skip


@settings(max_examples=10, deadline=None)
@given(
    fmt=st.sampled_from(FORMATS),
    n=st.integers(1, 6),
    k=st.integers(1, 200),
    tokens=st.integers(1, 2),
    data=st.data(),
)
def test_nf_matmat_under_neon(driver: QemuDriver, fmt, n, k, tokens, data) -> None:
    w = np.random.default_rng(data.draw(st.integers(0, 999))).normal(0, 0.3, (n, k))
    w = w.astype(np.float32)
    codec = get_codec(*fmt)
    payload = t2_payload(w, (n, k)) if fmt[0] == "t2_g128_fp16" else codec.encode(w, (n, k))
    decoded = np.asarray(codec.decode(payload, (n, k)), np.float32)
    seg = Segment(np.frombuffer(payload, np.uint8), *fmt, (n, k), 0, n)
    x = data.draw(hard_vectors(tokens * k, 1.0)).reshape(tokens, k)
    head = [n, k, tokens, *params_of(seg), len(payload), 2]
    got = driver.run("nf_matmat", head, payload, _LUT, x)
    want = np.array([[dot(decoded[r], x[t]) for r in range(n)] for t in range(tokens)])
    assert bits(got) == bits(want.astype(np.float32).reshape(-1))


@settings(max_examples=8, deadline=None)
@given(
    heads=st.sampled_from([(1, 1), (2, 1), (4, 2)]),
    dk=st.sampled_from([3, 8, 16, 20]),
    dv=st.sampled_from([1, 8, 12]),
    data=st.data(),
)
def test_gdn_step_under_neon(driver: QemuDriver, heads, dk, dv, data) -> None:
    hv, hk = heads
    states = data.draw(hard_vectors(hv * dk * dv, 1.0)).reshape(hv, dk, dv)
    q = data.draw(hard_vectors(hk * dk, 1.0)).reshape(hk, dk)
    k = data.draw(hard_vectors(hk * dk, 1.0)).reshape(hk, dk)
    v = data.draw(hard_vectors(hv * dv, 1.0)).reshape(hv, dv)
    unit = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0, width=32))
    decay, beta = np.float32(data.draw(unit)), np.float32(data.draw(unit))
    dec, bet = np.full(hv, decay, np.float32), np.full(hv, beta, np.float32)
    got = driver.run("gdn_step", [hv, hk, dk, dv], states, q, k, v, dec, bet)
    per = hv // hk
    want_out, want_states = [], []
    for h in range(hv):
        s, o = delta_rule_step(states[h], q[h // per], k[h // per], v[h], decay, beta)
        want_out.append(o)
        want_states.append(s)
    want = np.concatenate([np.ravel(want_out), np.ravel(want_states)]).astype(np.float32)
    assert bits(got) == bits(want)
