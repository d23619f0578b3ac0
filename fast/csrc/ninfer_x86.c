/* One-token products of `.ninfer` matrices with the decode fused into the dot, x86-64 AVX2 and
 * AVX-512 (fast/qwen35, issue 28): q8 `row_split_k128_v1` (spec/ninfer3.md §grouped-formats) and
 * bf16 `contiguous_le_v1` (spec/ninfer3.md §contiguous), chosen at run time
 * (spec/numerics.md §kernel-paths).
 *
 * ninfer.c decodes a row into a buffer and then dots it; here each chunk of eight weights is
 * decoded in registers and used at once, with the same operations in the same order, so the same
 * bits (spec/numerics.md §dot): w = f32(s32 × q) (q8: the code widened to float, one product with
 * its group's scale; bf16: the word << 16, exact), then lane j ← lane j + w_i · x_i for i ≡ j
 * (mod 8), ascending, a product then an add (no FMA), then each row's fixed tree
 * (wf_combine_lanes). A row's eight lanes are one ymm register (AVX2: four rows, four registers)
 * or one half of a zmm register (AVX-512: rows r and r + 1 share one, r + 2 and r + 3 another,
 * and so on), the lanes never mixed, so the width only changes how many rows advance together.
 * Chunks cut short by the row's end take the scalar loop on the stored lanes.
 */
#include <stdint.h>
#include <string.h>

#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,f16c")))
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c")))

enum { ROWS = 4, Q8_GROUP = 32 };
/* -O2 does not unroll: the row loops must, so that the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 4")

static int64_t load64(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The scalar end of four rows: lanes l [ROWS][8] past the whole chunks, weight i of row b by
 * `weight`, then each row's tree into out[b]. */
static float q8_weight(const wf_nf_matrix *m, int64_t row, int64_t i) {
    const uint8_t *s = m->data + m->scale_offset + (row * m->gpr + i / Q8_GROUP) * 2;
    const float scale = wf_f16_table()[s[0] | (s[1] << 8)];
    return (float)(int8_t)m->data[row * m->gpr * Q8_GROUP + i] * scale;
}

static float bf16_weight(const wf_nf_matrix *m, int64_t row, int64_t i) {
    const uint8_t *w = m->data + (row * m->cols + i) * 2;
    const uint32_t bits = (uint32_t)(w[0] | (w[1] << 8)) << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void finish(const wf_nf_matrix *m, int64_t row, float l[ROWS][WF_LANES], int64_t i,
                   const float *x, float *out) {
    const int64_t K = m->cols;
    for (; i < K; i++)
        for (int b = 0; b < ROWS; b++) {
            const float w = m->kind == WF_NF_BF16 ? bf16_weight(m, row + b, i)
                                                  : q8_weight(m, row + b, i);
            l[b][i % WF_LANES] = l[b][i % WF_LANES] + w * x[i];
        }
    for (int b = 0; b < ROWS; b++) out[b] = wf_combine_lanes(l[b]);
}

/* AVX2: rows row..row+3 of a q8 payload, one ymm of lanes each. */
AVX2 static void q8_rows_avx2(const wf_nf_matrix *m, int64_t row, const float *x, float *out) {
    const int64_t K = m->cols, stride = m->gpr * Q8_GROUP;
    const uint8_t *base = m->data + row * stride;
    const uint8_t *scales = m->data + m->scale_offset + row * m->gpr * 2;
    const float *f16 = wf_f16_table();
    __m256 acc[ROWS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                        _mm256_setzero_ps()};
    int64_t i = 0;
    for (int64_t g = 0; i + WF_LANES <= K; g++) {
        __m256 s[ROWS];
        for (int b = 0; b < ROWS; b++) {
            const uint8_t *sw = scales + (b * m->gpr + g) * 2;
            s[b] = _mm256_set1_ps(f16[sw[0] | (sw[1] << 8)]);
        }
        for (int c = 0; c < Q8_GROUP / WF_LANES && i + WF_LANES <= K; c++, i += WF_LANES) {
            const __m256 xv = _mm256_loadu_ps(x + i);
            UNROLL
            for (int b = 0; b < ROWS; b++) {
                const __m128i q = _mm_cvtsi64_si128(load64(base + b * stride + i));
                const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s[b]);
                acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(w, xv));
            }
        }
    }
    float l[ROWS][WF_LANES];
    for (int b = 0; b < ROWS; b++) _mm256_storeu_ps(l[b], acc[b]);
    finish(m, row, l, i, x, out);
}

/* AVX2: rows row..row+3 of a bf16 payload. */
AVX2 static void bf16_rows_avx2(const wf_nf_matrix *m, int64_t row, const float *x, float *out) {
    const int64_t K = m->cols;
    const uint8_t *base = m->data + row * K * 2;
    __m256 acc[ROWS] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                        _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + WF_LANES <= K; i += WF_LANES) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        UNROLL
        for (int b = 0; b < ROWS; b++) {
            const __m128i h = _mm_loadu_si128((const __m128i *)(base + (b * K + i) * 2));
            const __m256 w = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
            acc[b] = _mm256_add_ps(acc[b], _mm256_mul_ps(w, xv));
        }
    }
    float l[ROWS][WF_LANES];
    for (int b = 0; b < ROWS; b++) _mm256_storeu_ps(l[b], acc[b]);
    finish(m, row, l, i, x, out);
}

/* AVX-512 F only (no DQ): eight floats as either half of a zmm, and the pair (a, b) as halves. */
AVX512 static __m512 both_halves(__m256 v) {
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(v)));
}

AVX512 static __m512 halves(float a, float b) {
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(a)),
                                               _mm256_castps_pd(_mm256_set1_ps(b)), 1));
}

/* Two rows' lanes of a zmm into l[b], l[b + 1]. */
AVX512 static void store_pair(__m512 acc, float l[ROWS][WF_LANES], int b) {
    _mm256_storeu_ps(l[b], _mm512_castps512_ps256(acc));
    _mm256_storeu_pd((double *)l[b + 1], _mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1));
}

/* AVX-512 bodies take `pairs` zmm accumulators, rows (2p, 2p + 1) sharing one: q8 runs two
 * (four rows; eight were slower, fewer registers left for the addresses), bf16 four (eight rows,
 * a few % faster than four when streaming). Measured in benchmarks/, issue 28. */
#define INLINE static inline __attribute__((always_inline))
#define ROWS8 8

/* One 8-column chunk of q8 codes p[row · stride] for 2·pairs rows into acc (scales s per pair). */
AVX512 INLINE void q8_chunk(__m512 acc[4], const uint8_t *p, int64_t stride, const __m512 s[4],
                            const float *x, const int pairs) {
    const __m512 xv = both_halves(_mm256_loadu_ps(x));
    UNROLL
    for (int b = 0; b < pairs; b++) {
        const __m128i q =
            _mm_set_epi64x(load64(p + (2 * b + 1) * stride), load64(p + 2 * b * stride));
        const __m512 w = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), s[b]);
        acc[b] = _mm512_add_ps(acc[b], _mm512_mul_ps(w, xv));
    }
}

/* The group scales of 2·pairs rows, row (2b, 2b + 1) in the halves of s[b]. */
AVX512 INLINE void q8_scales(__m512 s[4], const uint8_t *sc, int64_t gpr, const float *f16,
                             const int pairs) {
    for (int b = 0; b < pairs; b++) {
        const uint8_t *s0 = sc + 2 * b * gpr * 2, *s1 = s0 + gpr * 2;
        s[b] = halves(f16[s0[0] | (s0[1] << 8)], f16[s1[0] | (s1[1] << 8)]);
    }
}

/* AVX-512: rows row..row+2·pairs−1 of a q8 payload: whole groups with their four chunks
 * unrolled (the accumulators stay in registers across groups; the old chunk loop with its
 * end test spilled them once a group), then the chunks of a last part group. The rows
 * (and their scales) are contiguous; while they are read, rows pf.. of the same count are
 * prefetched at the same pace (one line a group per pair of rows), so the next blocks are on
 * their way across 4 KiB pages the hardware prefetcher does not cross. */
AVX512 INLINE void q8_rows_wide(const wf_nf_matrix *m, int64_t row, int64_t pf, const float *x,
                                float *out, const int pairs) {
    const int64_t K = m->cols, stride = m->gpr * Q8_GROUP;
    const uint8_t *base = m->data + row * stride;
    const uint8_t *scales = m->data + m->scale_offset + row * m->gpr * 2;
    const char *pb = (const char *)m->data + pf * stride;
    const char *ps = (const char *)m->data + m->scale_offset + pf * m->gpr * 2;
    const float *f16 = wf_f16_table();
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()}, s[4];
    int64_t g = 0, i = 0;
    for (; i + Q8_GROUP <= K; g++, i += Q8_GROUP) {
        for (int l = 0; l < pairs; l++) _mm_prefetch(pb + (g * pairs + l) * 64, _MM_HINT_T0);
        if (g % (16 / pairs) == 0) _mm_prefetch(ps + g * 4 * pairs, _MM_HINT_T0);
        q8_scales(s, scales + g * 2, m->gpr, f16, pairs);
        UNROLL
        for (int c = 0; c < Q8_GROUP; c += WF_LANES)
            q8_chunk(acc, base + i + c, stride, s, x + i + c, pairs);
    }
    if (i + WF_LANES <= K) q8_scales(s, scales + g * 2, m->gpr, f16, pairs);
    for (; i + WF_LANES <= K; i += WF_LANES) q8_chunk(acc, base + i, stride, s, x + i, pairs);
    float l[ROWS8][WF_LANES];
    for (int b = 0; b < pairs; b++) store_pair(acc[b], l, 2 * b);
    for (int h = 0; h < pairs / 2; h++)
        finish(m, row + ROWS * h, l + ROWS * h, i, x, out + ROWS * h);
}

/* AVX-512: rows row..row+2·pairs−1 of a bf16 payload, paired as q8_rows_wide (rows pf.. prefetched
 * the same way, pairs / 2 lines an 8-column step). */
AVX512 INLINE void bf16_rows_wide(const wf_nf_matrix *m, int64_t row, int64_t pf, const float *x,
                                  float *out, const int pairs) {
    const int64_t K = m->cols;
    const uint8_t *base = m->data + row * K * 2;
    const char *pb = (const char *)m->data + pf * K * 2;
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + WF_LANES <= K; i += WF_LANES) {
        for (int l = 0; l < pairs / 2; l++) _mm_prefetch(pb + i * 4 * pairs + l * 64, _MM_HINT_T0);
        const __m512 xv = both_halves(_mm256_loadu_ps(x + i));
        const uint8_t *p = base + i * 2;
        UNROLL
        for (int b = 0; b < pairs; b++) {
            const uint8_t *p0 = p + 4 * b * K;
            __m256i h = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)p0));
            h = _mm256_inserti128_si256(h, _mm_loadu_si128((const __m128i *)(p0 + 2 * K)), 1);
            const __m512 w = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
            acc[b] = _mm512_add_ps(acc[b], _mm512_mul_ps(w, xv));
        }
    }
    float l[ROWS8][WF_LANES];
    for (int b = 0; b < pairs; b++) store_pair(acc[b], l, 2 * b);
    for (int h = 0; h < pairs / 2; h++)
        finish(m, row + ROWS * h, l + ROWS * h, i, x, out + ROWS * h);
}

/* The instances (the pair count a constant, so the loops unroll). */
AVX512 static void q8_rows_avx512(const wf_nf_matrix *m, int64_t row, int64_t pf, const float *x,
                                  float *out) {
    q8_rows_wide(m, row, pf, x, out, 2);
}

AVX512 static void bf16_rows_avx512(const wf_nf_matrix *m, int64_t row, int64_t pf,
                                    const float *x, float *out) {
    bf16_rows_wide(m, row, pf, x, out, 2);
}

AVX512 static void bf16_rows8_avx512(const wf_nf_matrix *m, int64_t row, int64_t pf,
                                     const float *x, float *out) {
    bf16_rows_wide(m, row, pf, x, out, 4);
}

/* Prefill, AVX-512: four decoded rows w [4][n] dotted with two tokens a and b at once, the
 * tokens in the two halves of a zmm (x2: their whole chunks interleaved, chunk c of a then of b,
 * as wf_nf_pair_tokens lays them out), each row's chunk broadcast to both halves: lanes never mix,
 * so every (row, token) sees the spec/numerics.md §dot operations in order; the chunk tails and
 * the trees as ninfer.c's finish_rows. */
AVX512 void wf_nf_dot4_pair(const float *w, const float *x2, const float *a, const float *b,
                            int64_t n, float *out_a, float *out_b) {
    __m512 acc[ROWS] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                        _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES) {
        const __m512 xv = _mm512_loadu_ps(x2 + 2 * i);
        UNROLL
        for (int r = 0; r < ROWS; r++)
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(both_halves(_mm256_loadu_ps(w + r * n + i)),
                                                         xv));
    }
    float la[ROWS][WF_LANES], lb[ROWS][WF_LANES];
    for (int r = 0; r < ROWS; r++) {
        _mm256_storeu_ps(la[r], _mm512_castps512_ps256(acc[r]));
        _mm256_storeu_pd((double *)lb[r], _mm512_extractf64x4_pd(_mm512_castps_pd(acc[r]), 1));
    }
    for (int64_t j = i; j < n; j++)
        for (int r = 0; r < ROWS; r++) {
            la[r][j % WF_LANES] = la[r][j % WF_LANES] + w[r * n + j] * a[j];
            lb[r][j % WF_LANES] = lb[r][j % WF_LANES] + w[r * n + j] * b[j];
        }
    for (int r = 0; r < ROWS; r++) {
        out_a[r] = wf_combine_lanes(la[r]);
        out_b[r] = wf_combine_lanes(lb[r]);
    }
}

/* Prefill, AVX-512: the same as wf_nf_dot4_pair for two pairs of tokens at once, (a, b) at x2
 * and (c, d) at x2 + 2 · (n / 8) · 8: each row's chunk broadcast once feeds both pairs, eight
 * independent add chains instead of four. Every (row, token) sees its own lanes' operations in
 * the spec/numerics.md §dot order, so the same bits as two wf_nf_dot4_pair calls. */
AVX512 void wf_nf_dot4_quad(const float *w, const float *x2, const float *const *tok, int64_t n,
                            float *const *out) {
    const float *x2b = x2 + 2 * (n / WF_LANES) * WF_LANES;
    __m512 p0[ROWS], p1[ROWS];
    for (int r = 0; r < ROWS; r++) p0[r] = p1[r] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES) {
        const __m512 xa = _mm512_loadu_ps(x2 + 2 * i), xb = _mm512_loadu_ps(x2b + 2 * i);
        UNROLL
        for (int r = 0; r < ROWS; r++) {
            const __m512 wv = both_halves(_mm256_loadu_ps(w + r * n + i));
            p0[r] = _mm512_add_ps(p0[r], _mm512_mul_ps(wv, xa));
            p1[r] = _mm512_add_ps(p1[r], _mm512_mul_ps(wv, xb));
        }
    }
    float l[4][ROWS][WF_LANES]; /* token u = 0..3 (a, b, c, d), row r */
    for (int r = 0; r < ROWS; r++) {
        _mm256_storeu_ps(l[0][r], _mm512_castps512_ps256(p0[r]));
        _mm256_storeu_pd((double *)l[1][r], _mm512_extractf64x4_pd(_mm512_castps_pd(p0[r]), 1));
        _mm256_storeu_ps(l[2][r], _mm512_castps512_ps256(p1[r]));
        _mm256_storeu_pd((double *)l[3][r], _mm512_extractf64x4_pd(_mm512_castps_pd(p1[r]), 1));
    }
    for (int64_t j = i; j < n; j++)
        for (int u = 0; u < 4; u++)
            for (int r = 0; r < ROWS; r++)
                l[u][r][j % WF_LANES] = l[u][r][j % WF_LANES] + w[r * n + j] * tok[u][j];
    for (int u = 0; u < 4; u++)
        for (int r = 0; r < ROWS; r++) out[u][r] = wf_combine_lanes(l[u][r]);
}

/* spec/numerics.md §lanes8-tree of eight lane registers, element-wise (wf_combine_lanes). */
AVX512 static __m512 lanes_tree(const __m512 l[WF_LANES]) {
    const __m512 a0 = _mm512_add_ps(l[0], l[4]), a1 = _mm512_add_ps(l[1], l[5]);
    const __m512 a2 = _mm512_add_ps(l[2], l[6]), a3 = _mm512_add_ps(l[3], l[7]);
    return _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
}

/* One pass of the delta rule over rows 0..dk of the 16 columns at S + j (row stride dv):
 * s ← s · decay (`first`) or s ← s + k_i · δ (δ = d), stored; lane i mod 8 ← lane + s · w_i;
 * returns the lanes' tree. The lanes are eight registers. */
AVX512 static __m512 delta_pass(float *S, int64_t dv, int64_t dk, int first, __m512 decay,
                                __m512 d, const float *k, const float *w) {
    __m512 l[WF_LANES];
    for (int L = 0; L < WF_LANES; L++) l[L] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + WF_LANES <= dk; i += WF_LANES) {
        _Pragma("GCC unroll 8") for (int L = 0; L < WF_LANES; L++) {
            float *row = S + (i + L) * dv;
            const __m512 old = _mm512_loadu_ps(row);
            const __m512 s = first ? _mm512_mul_ps(old, decay)
                                   : _mm512_add_ps(old, _mm512_mul_ps(_mm512_set1_ps(k[i + L]), d));
            _mm512_storeu_ps(row, s);
            l[L] = _mm512_add_ps(l[L], _mm512_mul_ps(s, _mm512_set1_ps(w[i + L])));
        }
    }
    for (int L = 0; i < dk; i++, L++) {
        float *row = S + i * dv;
        const __m512 old = _mm512_loadu_ps(row);
        const __m512 s = first ? _mm512_mul_ps(old, decay)
                               : _mm512_add_ps(old, _mm512_mul_ps(_mm512_set1_ps(k[i]), d));
        _mm512_storeu_ps(row, s);
        l[L] = _mm512_add_ps(l[L], _mm512_mul_ps(s, _mm512_set1_ps(w[i])));
    }
    return lanes_tree(l);
}

/* One value head's delta rule (ninfer.c DELTA_RULE_HEAD, spec/numerics.md §gdn-gates) 16 value
 * columns at a time (dv a multiple of 16): a column's m_j, δ_j and o_j need only that column of
 * S, so both passes run on one 16-column strip while it sits in L1, and the eight lanes of each
 * sum stay in registers. Every element sees the operations of DELTA_RULE_HEAD in its order (rows
 * ascending into lane i mod 8, then the tree), so the same bits. */
AVX512 void wf_delta_rule_cols_avx512(float *S, const float *q, const float *k, const float *v,
                                      float decay, float beta, int64_t dk, int64_t dv, float *o) {
    const __m512 dec = _mm512_set1_ps(decay), bet = _mm512_set1_ps(beta);
    for (int64_t j = 0; j < dv; j += 16) {
        const __m512 m = delta_pass(S + j, dv, dk, 1, dec, dec, k, k);
        const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(v + j), m), bet); /* δ */
        _mm512_storeu_ps(o + j, delta_pass(S + j, dv, dk, 0, dec, d, k, q));
    }
}

/* 1 when the matrix is one this file fuses: q8 row split (group 32) or bf16. */
static int fused_kind(const wf_nf_matrix *m) {
    if (m->kind == WF_NF_BF16) return 1;
    return m->kind == WF_NF_ROW_SPLIT && m->code_bits == 8 && m->group == Q8_GROUP &&
           m->base_bytes == Q8_GROUP && m->high_bytes == 0;
}

#ifndef WF_NF_PREFETCH_BYTES
#define WF_NF_PREFETCH_BYTES 8192
#endif
/* How far ahead (in rows, whole blocks of `step` rows, at least one block) the prefetches run:
 * about WF_NF_PREFETCH_BYTES of weights. */
static int64_t prefetch_rows(const wf_nf_matrix *m, int64_t step) {
    const int64_t row_bytes = m->kind == WF_NF_BF16 ? 2 * m->cols : m->gpr * Q8_GROUP;
    const int64_t blocks = WF_NF_PREFETCH_BYTES / (step * row_bytes);
    return step * (blocks < 1 ? 1 : blocks);
}

int64_t wf_nf_fused_rows(const wf_nf_matrix *m, int64_t r0, int64_t r1, const float *x, float *y,
                         int32_t isa) {
    if (!fused_kind(m) || (isa != WF_ISA_AVX2 && isa != WF_ISA_AVX512)) return r0;
    const int bf16 = m->kind == WF_NF_BF16;
    int64_t r = r0;
    if (isa == WF_ISA_AVX512) { /* q8: four rows a pass; bf16: eight, then at most one four */
        const int64_t step = bf16 ? ROWS8 : ROWS, ahead = prefetch_rows(m, step);
        const int64_t last = m->row0 + (r1 - step > r0 ? r1 - step : r0);
        for (; r + step <= r1; r += step) {
            const int64_t row = m->row0 + r;
            const int64_t pf = row + ahead < last ? row + ahead : last;
            (bf16 ? bf16_rows8_avx512 : q8_rows_avx512)(m, row, pf, x, y + r);
        }
        if (r + ROWS <= r1) { /* bf16 only: its last four rows, nothing left to prefetch */
            bf16_rows_avx512(m, m->row0 + r, m->row0 + r, x, y + r);
            r += ROWS;
        }
        return r;
    }
    for (; r + ROWS <= r1; r += ROWS)
        (bf16 ? bf16_rows_avx2 : q8_rows_avx2)(m, m->row0 + r, x, y + r);
    return r;
}

#else

void wf_delta_rule_cols_avx512(float *S, const float *q, const float *k, const float *v,
                               float decay, float beta, int64_t dk, int64_t dv, float *o) {
    (void)S, (void)q, (void)k, (void)v, (void)decay, (void)beta, (void)dk, (void)dv, (void)o;
}

void wf_nf_dot4_quad(const float *w, const float *x2, const float *const *tok, int64_t n,
                     float *const *out) {
    (void)w, (void)x2, (void)tok, (void)n, (void)out;
}

void wf_nf_dot4_pair(const float *w, const float *x2, const float *a, const float *b, int64_t n,
                     float *out_a, float *out_b) {
    (void)w, (void)x2, (void)a, (void)b, (void)n, (void)out_a, (void)out_b;
}

int64_t wf_nf_fused_rows(const wf_nf_matrix *m, int64_t r0, int64_t r1, const float *x, float *y,
                         int32_t isa) {
    (void)m, (void)r1, (void)x, (void)y, (void)isa;
    return r0;
}

#endif
