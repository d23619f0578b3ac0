/* Quantized and dense matrix products on weights in their VQF file encoding
 * (spec/numerics.md §dot, §q8-activation, §f32-weights;
 * spec/vqf.md §q8-0, §q4i8, §g256, §q8-tiled, §q4-0, §q4-8x8l).
 *
 * y[t, r] = sum over the columns of W[r, :] and X[t, :], for every row r and token t. The order
 * inside one (t, r) product is the contract's, so rows can be split across threads freely.
 * spec/numerics.md §q8-activation q8_activation: X is quantized per 32-block once
 * (wf_quantize_activation); each block dot is an exact int32; acc = acc + (float)D * (d_w * d_x)
 * over blocks in ascending order. spec/numerics.md §f32-weights f32_weights: the row is rebuilt as
 * code * d_w (exact) and dotted with X in spec/numerics.md §lanes8-tree order. Dense F32 / F16 rows
 * use the spec/numerics.md §dot dot directly.
 *
 * Weights are read from the mapped payload: one row's block at a time is fetched into a small
 * int8[32] (Q4 nibbles n become n - 8; tiled layouts gather row m's bytes from its group block).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

enum { Q8_BLOCK = 34, Q4_BLOCK = 18, STACK_TOKENS = 64, SUMS_MIN_BLOCKS = 1 << 12 };

/* spec/numerics.md §q8-activation steps 1-2: d = amax / 127; codes = clamp(rint(x / d), -127, 127),
 * all 0 unless 0 < d < inf. amax becomes NaN at the first NaN and stays NaN, as in the
 * reference. */
void wf_quantize_activation(const float *x, int64_t n, int8_t *codes, float *scales) {
    for (int64_t start = 0; start < n; start += WF_QK) {
        /* whole blocks up to the first one holding a NaN */
        if (wf_isa() == WF_ISA_AVX512) {
            start = wf_quantize_blocks_avx512(x, start, n, codes, scales);
            if (start >= n) break;
        } else if (wf_isa() == WF_ISA_AVX2) {
            start = wf_quantize_blocks_avx2(x, start, n, codes, scales);
            if (start >= n) break;
        }
        float amax = 0.0f;
        for (int i = 0; i < WF_QK; i++) {
            float a = fabsf(x[start + i]);
            if (a > amax || a != a) amax = a;
        }
        float d = amax / 127.0f;
        scales[start / WF_QK] = d;
        int usable = d > 0.0f && d <= 3.402823466e38f;
        for (int i = 0; i < WF_QK; i++) {
            float q = usable ? rintf(x[start + i] / d) : 0.0f;
            q = q > 127.0f ? 127.0f : (q < -127.0f ? -127.0f : q);
            codes[start + i] = (int8_t)q;
        }
    }
}

/* spec/numerics.md §q8-activation step 3: the exact integer dot of one block; `isa` is wf_isa()
 * (the NEON forms only when that path is in use, so a forced portable run executes the C loop). */
static inline int32_t block_dot(const int8_t *w, const int8_t *x, int32_t isa) {
    (void)isa;
#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
    if (isa == WF_ISA_PORTABLE) goto portable;
    int32x4_t acc = vdotq_s32(vdupq_n_s32(0), vld1q_s8(w), vld1q_s8(x));
    acc = vdotq_s32(acc, vld1q_s8(w + 16), vld1q_s8(x + 16));
    return vaddvq_s32(acc);
#elif defined(__ARM_NEON)
    if (isa == WF_ISA_PORTABLE) goto portable;
    int16x8_t p0 = vmull_s8(vld1_s8(w), vld1_s8(x));
    p0 = vmlal_s8(p0, vld1_s8(w + 8), vld1_s8(x + 8)); /* |2 * 127 * 128| fits int16 */
    int16x8_t p1 = vmull_s8(vld1_s8(w + 16), vld1_s8(x + 16));
    p1 = vmlal_s8(p1, vld1_s8(w + 24), vld1_s8(x + 24));
    return vaddvq_s32(vaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1)));
#endif
#if defined(__ARM_NEON)
portable:;
#endif
    int32_t s = 0;
    for (int i = 0; i < WF_QK; i++) s += (int32_t)w[i] * (int32_t)x[i];
    return s;
}

#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
/* spec/numerics.md §q8-activation for rows r..r+3 with the dotprod instructions: lane i of every
 * vector is row r+i, so each lane performs acc = acc + (float)D * (d_w * d_x) over ascending
 * blocks, like the C loop. */
static void rows4_neon(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                       int64_t tokens, float *y) {
    const int64_t nb = m->cols / WF_QK;
    const float *f16 = wf_f16_table();
    float32x4_t stack_acc[16], *acc = tokens <= 16 ? stack_acc : malloc(sizeof(float32x4_t) *
    tokens); if (acc == NULL) return;
    for (int64_t t = 0; t < tokens; t++) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        int8_t tmp[4][WF_QK];
        int8x16_t lo[4], hi[4];
        float dw[4];
        for (int i = 0; i < 4; i++) {
            uint16_t d;
            if (m->group_rows <= 1) /* the same block of the next four rows, as on x86 */
                __builtin_prefetch(wf_group(m, r + 4 + i) + b * (2 +
                wf_payload_bytes(m->kind)));
            const int8_t *w = wf_fetch_block(m, r + i, b, tmp[i], &d);
            dw[i] = f16[d];
            lo[i] = vld1q_s8(w);
            hi[i] = vld1q_s8(w + 16);
        }
        const float32x4_t scales = vld1q_f32(dw);
        for (int64_t t = 0; t < tokens; t++) {
            const int8_t *x = xq + t * m->cols + b * WF_QK;
            const int8x16_t xl = vld1q_s8(x), xh = vld1q_s8(x + 16);
            int32x4_t part[4];
            for (int i = 0; i < 4; i++)
                part[i] = vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo[i], xl), hi[i], xh);
            const int32x4_t dots =
                vpaddq_s32(vpaddq_s32(part[0], part[1]), vpaddq_s32(part[2], part[3]));
            const float32x4_t s = vmulq_f32(scales, vdupq_n_f32(xd[t * nb + b]));
            acc[t] = vaddq_f32(acc[t], vmulq_f32(vcvtq_f32_s32(dots), s));
        }
    }
    for (int64_t t = 0; t < tokens; t++) vst1q_f32(y + t * m->rows + r, acc[t]);
    if (acc != stack_acc) free(acc);
}
#endif

#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
/* spec/numerics.md §q8-activation on a Q4_0 4x4 payload (spec/vqf.md §q4-0), rows r..r+3 = one row
 * group, every token: group block b is 4 f16 scales then 4 chunks of 16 bytes, chunk c holding
 * payload bytes 4c..4c+3 of rows 0..3 (XOR 0x88), byte 4c+k carrying element 4c+k in its low nibble
 * and 16+4c+k in its high one. So 32-bit lane i of a chunk's nibbles is row i's piece, and one sdot
 * against the activation piece broadcast to every lane adds row i's partial dot to lane i: no
 * gather, no transpose. The nibbles n become codes n - 8 once per block (all tokens reuse them);
 * every integer step is exact, so D is the scalar loop's, and lane i of token t's accumulator
 * performs acc = acc + (float)D * (d_w * d_x) over ascending blocks, as rows4_neon does. */
static void rows4_neon_q4_4x4(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                              int64_t tokens, float *y) {
    const int64_t nb = m->cols / WF_QK;
    const float *f16 = wf_f16_table();
    const uint8_t *g = wf_group(m, r / 4);
    float32x4_t stack_acc[16], *acc = tokens <= 16 ? stack_acc : malloc(sizeof(float32x4_t) *
    tokens); if (acc == NULL) return;
    for (int64_t t = 0; t < tokens; t++) acc[t] = vdupq_n_f32(0.0f);
    const uint8x16_t mask = vdupq_n_u8(0x88), low = vdupq_n_u8(0x0F);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int64_t b = 0; b < nb; b++, g += 72) {
        int8x16_t lo[4], hi[4];
        for (int c = 0; c < 4; c++) {
            const uint8x16_t w = veorq_u8(vld1q_u8(g + 8 + 16 * c), mask);
            lo[c] = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(w, low)), eight);
            hi[c] = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(w, 4)), eight);
        }
        const float dw[4] = {f16[g[0] | (g[1] << 8)], f16[g[2] | (g[3] << 8)],
                             f16[g[4] | (g[5] << 8)], f16[g[6] | (g[7] << 8)]};
        const float32x4_t scales = vld1q_f32(dw);
        for (int64_t t = 0; t < tokens; t++) {
            const int8_t *x = xq + t * m->cols + b * WF_QK;
            const int32x4_t xl = vreinterpretq_s32_s8(vld1q_s8(x));
            const int32x4_t xh = vreinterpretq_s32_s8(vld1q_s8(x + 16));
            int32x4_t dots = vdupq_n_s32(0);
            dots = vdotq_s32(dots, lo[0], vreinterpretq_s8_s32(vdupq_laneq_s32(xl, 0)));
            dots = vdotq_s32(dots, lo[1], vreinterpretq_s8_s32(vdupq_laneq_s32(xl, 1)));
            dots = vdotq_s32(dots, lo[2], vreinterpretq_s8_s32(vdupq_laneq_s32(xl, 2)));
            dots = vdotq_s32(dots, lo[3], vreinterpretq_s8_s32(vdupq_laneq_s32(xl, 3)));
            dots = vdotq_s32(dots, hi[0], vreinterpretq_s8_s32(vdupq_laneq_s32(xh, 0)));
            dots = vdotq_s32(dots, hi[1], vreinterpretq_s8_s32(vdupq_laneq_s32(xh, 1)));
            dots = vdotq_s32(dots, hi[2], vreinterpretq_s8_s32(vdupq_laneq_s32(xh, 2)));
            dots = vdotq_s32(dots, hi[3], vreinterpretq_s8_s32(vdupq_laneq_s32(xh, 3)));
            const float32x4_t s = vmulq_f32(scales, vdupq_n_f32(xd[t * nb + b]));
            acc[t] = vaddq_f32(acc[t], vmulq_f32(vcvtq_f32_s32(dots), s));
        }
    }
    for (int64_t t = 0; t < tokens; t++) vst1q_f32(y + t * m->rows + r, acc[t]);
    if (acc != stack_acc) free(acc);
}

/* spec/numerics.md §q8-activation on a Q8_0 8x8 payload (spec/vqf.md §q8-tiled), rows r..r+7 = one
 * row group, every token: group block b is 8 f16 scales then 8 chunks of 32 bytes, chunk c holding
 * payload bytes 4c..4c+3 of rows 0..7 (no XOR); its first 16 bytes are rows 0-3, the next rows 4-7,
 * so sdot against the broadcast activation piece c adds each row's partial dot to its own lane. */
static void rows8_neon_q8_8x8(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                              int64_t tokens, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK);
    const float *f16 = wf_f16_table();
    const uint8_t *g = wf_group(m, r / 8);
    float32x4_t stack_acc[32],
        *acc = tokens <= 16 ? stack_acc : malloc(sizeof(float32x4_t) * 2 * tokens);
    if (acc == NULL) return;
    for (int64_t t = 0; t < 2 * tokens; t++) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++, g += step) {
        int8x16_t w[8][2];
        for (int c = 0; c < 8; c++) {
            w[c][0] = vld1q_s8((const int8_t *)(g + 16 + 32 * c));
            w[c][1] = vld1q_s8((const int8_t *)(g + 32 + 32 * c));
        }
        float dw[8];
        for (int i = 0; i < 8; i++) dw[i] = f16[g[2 * i] | (g[2 * i + 1] << 8)];
        const float32x4_t s_lo = vld1q_f32(dw), s_hi = vld1q_f32(dw + 4);
        for (int64_t t = 0; t < tokens; t++) {
            const int8_t *x = xq + t * m->cols + b * WF_QK;
            const int32x4_t xv[2] = {vreinterpretq_s32_s8(vld1q_s8(x)),
                                     vreinterpretq_s32_s8(vld1q_s8(x + 16))};
            int32x4_t d_lo = vdupq_n_s32(0), d_hi = vdupq_n_s32(0);
            for (int c = 0; c < 8; c++) {
                int32x4_t piece;
                switch (c & 3) { /* the lane index of vdupq_laneq must be a constant */
                case 0: piece = vdupq_laneq_s32(xv[c >> 2], 0); break;
                case 1: piece = vdupq_laneq_s32(xv[c >> 2], 1); break;
                case 2: piece = vdupq_laneq_s32(xv[c >> 2], 2); break;
                default: piece = vdupq_laneq_s32(xv[c >> 2], 3); break;
                }
                d_lo = vdotq_s32(d_lo, w[c][0], vreinterpretq_s8_s32(piece));
                d_hi = vdotq_s32(d_hi, w[c][1], vreinterpretq_s8_s32(piece));
            }
            const float32x4_t xs = vdupq_n_f32(xd[t * nb + b]);
            acc[2 * t] = vaddq_f32(acc[2 * t], vmulq_f32(vcvtq_f32_s32(d_lo), vmulq_f32(s_lo, xs)));
            acc[2 * t + 1] =
                vaddq_f32(acc[2 * t + 1], vmulq_f32(vcvtq_f32_s32(d_hi), vmulq_f32(s_hi, xs)));
        }
    }
    for (int64_t t = 0; t < tokens; t++) {
        vst1q_f32(y + t * m->rows + r, acc[2 * t]);
        vst1q_f32(y + t * m->rows + r + 4, acc[2 * t + 1]);
    }
    if (acc != stack_acc) free(acc);
}

static int is_q4_4x4(const wf_matrix *m) {
    return m->kind == WF_W_Q4 && m->group_rows == 4 && m->chunk_bytes == 4 &&
           m->xor_mask == 0x88;
}

static int is_q8_8x8(const wf_matrix *m) {
    return m->kind == WF_W_Q8 && m->group_rows == 8 && m->chunk_bytes == 4 && m->xor_mask == 0;
}
#endif

typedef struct {
    const wf_matrix *m;
    const int8_t *xq;  /* [T, cols] activation codes (spec/numerics.md §q8-activation) */
    const float *xd;   /* [T, cols / 32] activation scales */
    const float *x;    /* [T, cols] float activations (spec/numerics.md §f32-weights and dense) */
    const int32_t *xsum8; /* [T, cols / 32] 8·sum of each block's codes (x86 kernels), or NULL */
    int64_t tokens;
    float *y;          /* [T, rows] */
} product;

static void q8_activation_rows(void *arg, int64_t r0, int64_t r1) {
    const product *p = arg;
    const wf_matrix *m = p->m;
    const int64_t nb = m->cols / WF_QK, T = p->tokens;
    const float *f16 = wf_f16_table();
    const int32_t isa = wf_isa();
    float stack_acc[STACK_TOKENS], *acc = T <= STACK_TOKENS ? stack_acc : malloc(sizeof(float) * T);
    int8_t tmp[WF_QK];
    if (acc == NULL) return; /* the caller pre-fills y with NaN, so a failure cannot pass */
    if (p->xsum8 != NULL) { /* SIMD bands and row groups; the remaining rows take the C loop */
        if (isa == WF_ISA_AVX512) /* bands of 16 (8) rows; the AVX2 kernels take what is left */
            r0 = wf_q8_activation_rows_avx512(m, r0, r1, p->xq, p->xd, p->xsum8, T, p->y);
        r0 = wf_q8_activation_rows_avx2(m, r0, r1, p->xq, p->xd, p->xsum8, T, p->y);
    }
#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
    if (isa == WF_ISA_DOTPROD) {
        const int q4_4x4 = is_q4_4x4(m), q8_8x8 = is_q8_8x8(m);
        while (r0 + 4 <= r1) {
            if (q8_8x8 && r0 % 8 == 0 && r0 + 8 <= r1) {
                rows8_neon_q8_8x8(m, r0, p->xq, p->xd, T, p->y);
                r0 += 8;
            } else if (q4_4x4 && r0 % 4 == 0) {
                rows4_neon_q4_4x4(m, r0, p->xq, p->xd, T, p->y);
                r0 += 4;
            } else {
                rows4_neon(m, r0, p->xq, p->xd, T, p->y);
                r0 += 4;
            }
        }
    }
#endif
    for (int64_t r = r0; r < r1; r++) {
        for (int64_t t = 0; t < T; t++) acc[t] = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            uint16_t dbits;
            const int8_t *w = wf_fetch_block(m, r, b, tmp, &dbits);
            const float dw = f16[dbits];
            for (int64_t t = 0; t < T; t++) {
                const int32_t dot = block_dot(w, p->xq + t * m->cols + b * WF_QK, isa);
                acc[t] = acc[t] + (float)dot * (dw * p->xd[t * nb + b]);
            }
        }
        for (int64_t t = 0; t < T; t++) p->y[t * m->rows + r] = acc[t];
    }
    if (acc != stack_acc) free(acc);
}

/* One row as float32: spec/numerics.md §f32-weights code * d (exact), or the dense F32 / widened
 * F16 words.
 */
static void row_values(const wf_matrix *m, int64_t r, float *out) {
    const float *f16 = wf_f16_table();
    if (m->kind == WF_W_F32) {
        memcpy(out, wf_group(m, r), (size_t)m->cols * 4);
        return;
    }
    if (m->kind == WF_W_F16) {
        const uint8_t *src = wf_group(m, r);
        for (int64_t c = 0; c < m->cols; c++) out[c] = f16[src[2 * c] | (src[2 * c + 1] << 8)];
        return;
    }
    int8_t tmp[WF_QK];
    for (int64_t b = 0; b < m->cols / WF_QK; b++) {
        uint16_t dbits;
        const int8_t *w = wf_fetch_block(m, r, b, tmp, &dbits);
        for (int j = 0; j < WF_QK; j++) out[b * WF_QK + j] = (float)w[j] * f16[dbits];
    }
}

static void float_rows(void *arg, int64_t r0, int64_t r1) {
    const product *p = arg;
    const wf_matrix *m = p->m;
    float *row = malloc(sizeof(float) * (size_t)(m->cols ? m->cols : 1));
    if (row == NULL) return;
    if (m->kind == WF_W_F32) /* register tiles of 4 rows on x86; the rows left take the loop */
        r0 = wf_f32_rows_x86((const float *)m->data, wf_stride(m) / 4, m->cols, m->rows, r0, r1,
                             p->x, p->tokens, p->y, wf_isa());
    for (int64_t r = r0; r < r1; r++) {
        row_values(m, r, row);
        for (int64_t t = 0; t < p->tokens; t++)
            p->y[t * m->rows + r] = wf_dot_f32(row, p->x + t * m->cols, m->cols);
    }
    free(row);
}

static void fill_nan(float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = NAN;
}

/* y[T, rows] = X W^T with float32 weights: spec/numerics.md §f32-weights for quantized,
 * spec/numerics.md §dot for F32 / F16. */
void wf_matmat_f32(const wf_matrix *m, const float *x, int64_t tokens, float *y, int32_t threads) {
    product p = {.m = m, .x = x, .tokens = tokens, .y = y};
    fill_nan(y, tokens * m->rows);
    wf_parallel_for(m->rows, threads, float_rows, &p);
}

/* 8·sum(x) of activation blocks [b0, b1): the x86 kernels' correction for unsigned weight codes
 * (gemm_x86.c), exact in int32. One pass per product call (each pool chunk used to redo the whole
 * prompt's sums), split on the pool from SUMS_MIN_BLOCKS blocks (a prompt of 128 tokens at 1024
 * columns; a decode step's few blocks are not worth a hand-off). */
typedef struct {
    const int8_t *xq;
    int32_t *xsum8;
} block_sums_job;

static void block_sums(void *arg, int64_t b0, int64_t b1) {
    const block_sums_job *j = arg;
    for (int64_t i = b0; i < b1; i++) {
        int32_t s = 0;
        for (int k = 0; k < WF_QK; k++) s += j->xq[i * WF_QK + k];
        j->xsum8[i] = 8 * s;
    }
}

/* Several matrices with the same columns applied to the same activation codes (q, k, v; gate,
 * up), or each to its own (the chosen experts' down bands), as one pool call: their rows are
 * numbered one after another, so the pool splits the union and a decode step wakes the workers
 * once per group instead of once per matrix. Input k (of `inputs`: 1, or one per matrix) is
 * codes xq + k·T·cols, scales xd + k·T·cols/32 (block sums likewise). */
typedef struct {
    const wf_matrix *const *ms;
    int32_t count, inputs;
    const int8_t *xq;
    const float *xd;
    const int32_t *xsum8;
    int64_t tokens;
    float *const *ys;
} product_set;

static void q8_activation_set_rows(void *arg, int64_t r0, int64_t r1) {
    const product_set *s = arg;
    const int64_t nb = s->count > 0 ? s->ms[0]->cols / WF_QK : 0, T = s->tokens;
    int64_t first = 0; /* row number of matrix i's row 0 in the union */
    for (int32_t i = 0; i < s->count && first < r1; first += s->ms[i]->rows, i++) {
        const int64_t lo = r0 > first ? r0 : first;
        const int64_t hi = r1 < first + s->ms[i]->rows ? r1 : first + s->ms[i]->rows;
        if (lo >= hi) continue;
        const int64_t k = s->inputs == 1 ? 0 : i;
        product p = {.m = s->ms[i], .xq = s->xq + k * T * nb * WF_QK, .xd = s->xd + k * T * nb,
                     .xsum8 = s->xsum8 != NULL ? s->xsum8 + k * T * nb : NULL, .tokens = T,
                     .y = s->ys[i]};
        q8_activation_rows(&p, lo - first, hi - first);
    }
}

static void matmat_set(const wf_matrix *const *ms, int32_t count, int32_t inputs,
                       const int8_t *xq, const float *xd, int64_t tokens, float *const *ys,
                       int32_t threads) {
    int64_t rows = 0;
    for (int32_t i = 0; i < count; i++) {
        fill_nan(ys[i], tokens * ms[i]->rows);
        rows += ms[i]->rows;
    }
    const int32_t isa = wf_isa();
    int32_t *xsum8 = NULL; /* the x86 kernels' block sums, once per call (not once per chunk) */
    if (count > 0 && (isa == WF_ISA_AVX2 || isa == WF_ISA_AVX512)) {
        const int64_t blocks = inputs * tokens * (ms[0]->cols / WF_QK);
        xsum8 = malloc(sizeof(int32_t) * (size_t)(blocks + 1));
        if (xsum8 != NULL) { /* else every row takes the C loop: slower, the same bits */
            block_sums_job job = {xq, xsum8};
            wf_parallel_for(blocks, blocks >= SUMS_MIN_BLOCKS ? threads : 1, block_sums, &job);
        }
    }
    product_set s = {ms, count, inputs, xq, xd, xsum8, tokens, ys};
    wf_parallel_for(rows, threads, q8_activation_set_rows, &s);
    free(xsum8);
}

/* ys[i][T, rows_i] = X W_i^T with spec/numerics.md §q8-activation activation codes, for quantized
 * matrices of equal cols. */
void wf_matmat_q8_activation_set(const wf_matrix *const *ms, int32_t count, const int8_t *xq,
                                 const float *xd, int64_t tokens, float *const *ys,
                                 int32_t threads) {
    matmat_set(ms, count, 1, xq, xd, tokens, ys, threads);
}

/* ys[i][T, rows_i] = X_i W_i^T, matrix i (all of equal cols) taking its own codes xq + i·T·cols
 * and scales xd + i·T·cols/32 (spec/numerics.md §q8-activation). */
void wf_matmat_q8_activation_each(const wf_matrix *const *ms, int32_t count, const int8_t *xq,
                                  const float *xd, int64_t tokens, float *const *ys,
                                  int32_t threads) {
    matmat_set(ms, count, count, xq, xd, tokens, ys, threads);
}

/* y[T, rows] = X W^T with spec/numerics.md §q8-activation activation codes (quantized weights
 * only): a set of one. */
void wf_matmat_q8_activation(const wf_matrix *m, const int8_t *xq, const float *xd, int64_t tokens,
                             float *y, int32_t threads) {
    wf_matmat_q8_activation_set(&m, 1, xq, xd, tokens, &y, threads);
}
