"""`wf_nf_matmat` (fast/csrc/ninfer.c) equals the reference product bit for bit: the reference
codec's decoded float32 rows, each dotted with the activation in the spec/numerics.md §dot order
(spec/ninfer3.md §row-split, §contiguous, §row-scale; spec/models.md §qwen35-activations).

Shapes reach every tail: K of any length (partial groups, odd lanes, chunks of 8 cut short), row
segments starting inside an object, several tokens, 1 and 2 threads, every kernel path usable here.
Activations mix ordinary values with ties, signed zeros, subnormals and extremes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies.qwen35_mixed import t2_payload
from strategies.weights import threads_on_tiny_matrices  # noqa: F401 (an autouse fixture)

from weightfile.fast._native import each_isa
from weightfile.fast.codecs.ninfer3.codec import get_codec
from weightfile.fast.qwen35.matrix import NfMatrix, Segment, matmat_set
from weightfile.ref.codecs.ninfer3 import row_split_k128_v1 as ref_row_split
from weightfile.ref.codecs.ninfer3.codec import get_codec as ref_get_codec
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
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 2.0**-140, -(2.0**-149), 3.0e38, 0.5], np.float32)


@st.composite
def activations(draw: st.DrawFn, tokens: int, k: int) -> np.ndarray:
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).normal(0, 1, (tokens, k)).astype(np.float32)
    if draw(st.booleans()):  # hard values in random places
        at = np.random.default_rng(seed + 1).integers(0, x.size, max(1, x.size // 4))
        x.reshape(-1)[at] = SPECIAL[at % SPECIAL.size]
    return x


def assert_rows_equal_decoded_dot(seg, decoded, row0: int, rows: int, x, threads=(1, 2)) -> None:
    """The segment's product on every usable kernel path and thread count equals each decoded
    row dotted with each token in spec/numerics.md §dot order, bit for bit."""
    tokens, k = x.shape
    want = np.array(
        [[dot(decoded[row0 + r], x[t]) for r in range(rows)] for t in range(tokens)], np.float32
    ).reshape(tokens, rows)
    for _isa in each_isa():
        for n in threads:
            got = NfMatrix(rows, k, [seg]).matmat(x, n)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (_isa, n)


@settings(max_examples=60)
@given(
    fmt=st.sampled_from(FORMATS),
    n=st.integers(1, 12),
    k=st.integers(1, 300),
    tokens=st.integers(1, 3),
    data=st.data(),
)
def test_nf_matmat_equals_decoded_dot(fmt, n: int, k: int, tokens: int, data) -> None:
    seed = data.draw(st.integers(0, 2**16))
    w = np.random.default_rng(seed).normal(0, 0.3, (n, k)).astype(np.float32)
    codec = get_codec(*fmt)
    payload = t2_payload(w, (n, k)) if fmt[0] == "t2_g128_fp16" else codec.encode(w, (n, k))
    decoded = np.asarray(codec.decode(payload, (n, k)), np.float32)
    row0 = data.draw(st.integers(0, n - 1))
    rows = data.draw(st.integers(1, n - row0))
    seg = Segment(np.frombuffer(payload, np.uint8), *fmt, (n, k), row0, rows)
    x = data.draw(activations(tokens, k))
    assert_rows_equal_decoded_dot(seg, decoded, row0, rows, x)


@settings(max_examples=40)
@given(
    fmt=st.sampled_from([FORMATS[0], FORMATS[5]]),
    n=st.integers(4, 12),
    k=st.integers(1, 300),
    data=st.data(),
)
def test_one_token_fused_rows_equal_decoded_dot(fmt, n: int, k: int, data) -> None:
    """One token on q8 row split / bf16, at least four rows: the AVX2 / AVX-512 kernels that
    decode in registers (fast/csrc/ninfer_x86.c, `wf_nf_fused_rows`) on every path usable here."""
    seed = data.draw(st.integers(0, 2**16))
    w = np.random.default_rng(seed).normal(0, 0.3, (n, k)).astype(np.float32)
    codec = get_codec(*fmt)
    payload = codec.encode(w, (n, k))
    decoded = np.asarray(codec.decode(payload, (n, k)), np.float32)
    row0 = data.draw(st.integers(0, n - 4))
    rows = data.draw(st.integers(4, n - row0))
    seg = Segment(np.frombuffer(payload, np.uint8), *fmt, (n, k), row0, rows)
    x = data.draw(activations(1, k))
    assert_rows_equal_decoded_dot(seg, decoded, row0, rows, x)


#: q8 codes and binary16 scale words at the edges: ±127 (−128 is not a q8 code), 0, ±1;
#: the least and greatest subnormal, least and greatest normal, +0 and 1 as scales (a scale is
#: +0 or positive finite: spec/ninfer3.md §grouped-formats).
HARD_CODES = np.array([127, -127, 0, 1, -1, 126, -126, 64], np.int64)
HARD_SCALES = np.array([0x0001, 0x03FF, 0x0400, 0x7BFF, 0x0000, 0x3C00, 0x3555], np.int64)


@settings(max_examples=30)
@given(
    n=st.integers(8, 30),
    k=st.integers(1, 200),
    hard=st.floats(0, 1),
    bf16=st.booleans(),
    data=st.data(),
)
def test_one_token_hard_words_equal_decoded_dot(n: int, k: int, hard: float, bf16, data):
    """One token on AVX-512's whole-group q8 passes and eight-row bf16 passes
    (fast/csrc/ninfer_x86.c `q8_rows_wide`, `bf16_rows_wide`), a last four-row block and the rows
    past it, on payloads written word by word: q8 codes ±127 / 0 and subnormal, extreme and zero
    scales (hard lanes at rate `hard`), bf16 words of any bits but NaN or infinity; widths cut
    inside a group and inside a chunk.
    Wanted: the reference codec's decoded rows dotted in the spec/numerics.md §dot order."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    if bf16:
        words = rng.integers(0, 1 << 16, (n, k), dtype=np.uint32)
        words[(words & 0x7F80) == 0x7F80] &= 0xBFFF  # no NaN or infinity (the clamp: finite)
        payload = words.astype("<u2").tobytes()
        fmt = FORMATS[0]
    else:
        fmt = FORMATS[5]
        codes = rng.integers(-127, 128, (n, k))
        pick = rng.random((n, k)) < hard
        codes[pick] = HARD_CODES[rng.integers(0, HARD_CODES.size, int(pick.sum()))]
        scales = rng.integers(0x2000, 0x3000, (n, -(-k // 32)))
        pick = rng.random(scales.shape) < hard
        scales[pick] = HARD_SCALES[rng.integers(0, HARD_SCALES.size, int(pick.sum()))]
        codes[np.repeat(scales == 0, 32, axis=1)[:, :k]] = 0  # a +0 scale's group is all 0
        payload = ref_row_split.encode_words(fmt[0], {"codes": codes, "scales": scales}, (n, k))
    decoded = np.asarray(ref_get_codec(*fmt).decode(payload, (n, k)), np.float32)
    row0 = data.draw(st.integers(0, 3))
    rows = data.draw(st.integers(min(8, n - row0), n - row0))
    seg = Segment(np.frombuffer(payload, np.uint8), *fmt, (n, k), row0, rows)
    x = data.draw(activations(1, k))
    assert_rows_equal_decoded_dot(seg, decoded, row0, rows, x, threads=(1,))


@settings(max_examples=12)
@given(
    fmt=st.sampled_from([FORMATS[0], FORMATS[1], FORMATS[5], FORMATS[7]]),
    n=st.integers(33, 70),
    k=st.integers(1, 80),
    tokens=st.sampled_from([15, 16, 17, 33, 34]),
    data=st.data(),
)
def test_prefill_blocks_and_token_spans_equal_decoded_dot(
    fmt, n: int, k: int, tokens: int, data
) -> None:
    """Prefill shapes: more rows than one decoded set of blocks (8 × 4 rows in fast/csrc/ninfer.c)
    and more tokens than one span (16), with rows left over past the last whole block and an odd
    token at the end of the last span (on AVX-512 the spans go four tokens a pass, then a pair,
    then one: `wf_nf_dot4_quad`, `wf_nf_dot4_pair`); every path usable here, 1 and 2 threads."""
    seed = data.draw(st.integers(0, 2**16))
    w = np.random.default_rng(seed).normal(0, 0.3, (n, k)).astype(np.float32)
    codec = get_codec(*fmt)
    payload = codec.encode(w, (n, k))
    decoded = np.asarray(codec.decode(payload, (n, k)), np.float32)
    row0 = data.draw(st.integers(0, 3))
    rows = n - row0
    seg = Segment(np.frombuffer(payload, np.uint8), *fmt, (n, k), row0, rows)
    x = data.draw(activations(tokens, k))
    assert_rows_equal_decoded_dot(seg, decoded, row0, rows, x)


@settings(max_examples=25)
@given(
    fmts=st.lists(st.sampled_from(FORMATS), min_size=1, max_size=5),
    k=st.integers(1, 140),
    tokens=st.sampled_from([1, 2, 3, 17]),
    data=st.data(),
)
def test_matmat_set_equals_decoded_dot(fmts, k: int, tokens: int, data) -> None:
    """`matmat_set` (one `wf_nf_matmat_set` call: every matrix's rows one range on the pool, split
    at any row) against the decoded dot of each matrix: 1 to 5 matrices of mixed formats and
    sizes, some of two segments, rows falling across the pool's chunks; 1, 2 and 3 threads."""
    mats, wants = [], []
    x = data.draw(activations(tokens, k))
    for fmt in fmts:
        n = data.draw(st.integers(1, 40))
        seed = data.draw(st.integers(0, 2**16))
        w = np.random.default_rng(seed).normal(0, 0.3, (n, k)).astype(np.float32)
        codec = get_codec(*fmt)
        payload = t2_payload(w, (n, k)) if fmt[0] == "t2_g128_fp16" else codec.encode(w, (n, k))
        decoded = np.asarray(codec.decode(payload, (n, k)), np.float32)
        cut = data.draw(st.integers(0, n - 1))  # rows [0, cut) and [cut, n) as two segments
        raw = np.frombuffer(payload, np.uint8)
        segs = [
            Segment(raw, *fmt, (n, k), r0, r1 - r0) for r0, r1 in ((0, cut), (cut, n)) if r1 > r0
        ]
        mats.append(NfMatrix(n, k, segs))
        wants.append(
            np.array([[dot(row, x[t]) for row in decoded] for t in range(tokens)], np.float32)
        )
    for _isa in each_isa():
        for threads in (1, 2, 3):
            got = matmat_set(mats, x, threads)
            for g, want in zip(got, wants, strict=True):
                assert np.array_equal(g.view(np.uint32), want.view(np.uint32)), (_isa, threads)
