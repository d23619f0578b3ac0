/* The `.ninfer` Qwen3.5 kernels (fast/qwen35): matrix products straight from the mapped payloads
 * and the Gated DeltaNet recurrence of one token.
 *
 * Products: the reference decodes every weight to float32 (spec/ninfer3.md §grouped-formats,
 * spec/ninfer3.md §contiguous, spec/ninfer3.md §fp8-row) and takes the spec/numerics.md §dot dot of each row with the activation
 * (spec/models.md §qwen35-activations). Here one row at a time is decoded into a row buffer by the
 * same one-rounding rules (w = f32(s32 × q) for the grouped and fp8 formats; bf16 words << 16; fp32
 * words as they are), then dotted with every token by wf_dot_f32: the same values in the same
 * order, so the same bits, and no float32 copy of a matrix. Rows are independent, so any thread
 * split gives the same bits (spec/numerics.md §threads).
 *
 * Recurrence: spec/numerics.md §gdn-gates on every value head's state [dk, dv]: S ← S · decay;
 * m_j = Σ_i S[i,j] k_i; δ_j = (v_j − m_j) · β; S ← S + k_i δ_j; o_j = Σ_i S[i,j] q_i, each sum in
 * the spec/numerics.md §lanes8-tree order (term i into lane i mod 8 from +0.0, then the tree),
 * kept for all j at once in eight lane rows so the inner loops run over j.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

static float f32_of_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Two's complement of a b-bit word u, branch-free: (u XOR 2^(b−1)) − 2^(b−1). */
#define SIGNED(u, b) ((int32_t)((u) ^ (1u << ((b) - 1))) - (1 << ((b) - 1)))

/* Lane j's word: its base field (4 bits, two a byte, low nibble first) and, for q5 / q6, its
 * high field (hb bits, 8 / hb a byte, lowest first) shifted up by 4. */
static inline uint32_t lane_word(const uint8_t *bp, const uint8_t *hp, int64_t j, int32_t hb) {
    const uint32_t lo = (bp[j / 2] >> (4 * (j % 2))) & 15u;
    if (hb == 0) return lo;
    const int32_t per = 8 / hb;
    return lo | (((uint32_t)(hp[j / per] >> (hb * (j % per))) & ((1u << hb) - 1u)) << 4);
}

/* Per byte value: the signed nibble codes of q4's two lanes, and the high parts 16·SIGNED(h)
 * of q5's eight / q6's four lanes (with lo the unsigned base nibble, SIGNED(lo | h << 4) =
 * lo + 16·SIGNED(h): the top bit of the word is the top bit of h). Built once. */
static float q4_pair[256][2];
static int32_t q5_high[256][8], q6_high[256][4];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (uint32_t v = 0; v < 256; v++) {
        q4_pair[v][0] = (float)SIGNED(v & 15u, 4);
        q4_pair[v][1] = (float)SIGNED(v >> 4, 4);
        for (int32_t i = 0; i < 8; i++) q5_high[v][i] = 16 * SIGNED((v >> i) & 1u, 1);
        for (int32_t i = 0; i < 4; i++) q6_high[v][i] = 16 * SIGNED((v >> (2 * i)) & 3u, 2);
    }
}

/* q4/q5/q6 lanes [0, n): whole 8-lane chunks by the tables, then the tail lane by lane. */
static void nibble_group(const uint8_t *bp, const uint8_t *hp, int32_t b, float s, int64_t n,
                         float *out) {
    int64_t j = 0;
    for (; b == 4 && j + 2 <= n; j += 2) {
        const float *pair = q4_pair[bp[j / 2]];
        out[j] = pair[0] * s;
        out[j + 1] = pair[1] * s;
    }
    for (; b == 5 && j + 8 <= n; j += 8) {
        const int32_t *h = q5_high[hp[j / 8]];
        for (int32_t i = 0; i < 8; i++)
            out[j + i] = (float)((int32_t)((bp[(j + i) / 2] >> (4 * (i % 2))) & 15u) + h[i]) * s;
    }
    for (; b == 6 && j + 4 <= n; j += 4) {
        const int32_t *h = q6_high[hp[j / 4]];
        for (int32_t i = 0; i < 4; i++)
            out[j + i] = (float)((int32_t)((bp[(j + i) / 2] >> (4 * (i % 2))) & 15u) + h[i]) * s;
    }
    for (; j < n; j++) out[j] = (float)SIGNED(lane_word(bp, hp, j, b - 4), b) * s;
}

/* One group of n ≤ G lanes as w_j = f32(s × q_j) (spec/ninfer3.md §grouped-formats): q8 base
 * bytes are the codes; t2 has four 2-bit fields a byte; q4/q5/q6 as `nibble_group`. */
static void group_values(const wf_nf_matrix *m, const uint8_t *bp, const uint8_t *hp, float s,
                         int64_t n, float *out) {
    const int32_t b = m->code_bits;
    if (b == 8) {
        for (int64_t j = 0; j < n; j++) out[j] = (float)(int8_t)bp[j] * s;
    } else if (b == 2) {
        for (int64_t j = 0; j < n; j++)
            out[j] = (float)SIGNED((bp[j / 4] >> (2 * (j % 4))) & 3u, 2) * s;
    } else {
        nibble_group(bp, hp, b, s, n, out);
    }
}

/* One row of a row-split object as float32. */
static void row_split_values(const wf_nf_matrix *m, int64_t r, float *out) {
    const float *f16 = wf_f16_table();
    const int32_t G = m->group;
    const uint8_t *base = m->data + r * m->gpr * m->base_bytes;
    const uint8_t *high = m->data + m->high_offset + r * m->gpr * m->high_bytes;
    const uint8_t *scales = m->data + m->scale_offset + r * m->gpr * 2;
    for (int64_t g = 0; g * G < m->cols; g++) {
        const float s = f16[scales[2 * g] | (scales[2 * g + 1] << 8)];
        const int64_t n = m->cols - g * G < G ? m->cols - g * G : G;
        group_values(m, base + g * m->base_bytes, high + g * m->high_bytes, s, n, out + g * G);
    }
}

/* Row r (of the object) as float32, by the payload's kind. */
static void nf_row_values(const wf_nf_matrix *m, int64_t r, float *out) {
    const int64_t K = m->cols;
    if (m->kind == WF_NF_FP32) {
        memcpy(out, m->data + r * K * 4, (size_t)K * 4);
    } else if (m->kind == WF_NF_BF16) {
        const uint8_t *src = m->data + r * K * 2;
        for (int64_t c = 0; c < K; c++)
            out[c] = f32_of_bits((uint32_t)(src[2 * c] | (src[2 * c + 1] << 8)) << 16);
    } else if (m->kind == WF_NF_FP8_ROW) {
        const uint8_t *codes = m->data + r * K, *sw = m->data + m->scale_offset + 2 * r;
        const float s = f32_of_bits((uint32_t)(sw[0] | (sw[1] << 8)) << 16);
        for (int64_t c = 0; c < K; c++) out[c] = m->lut[codes[c]] * s;
    } else {
        row_split_values(m, r, out);
    }
}

typedef struct {
    const wf_nf_matrix *m;
    const float *x; /* [T, cols] */
    int64_t tokens, ldy;
    float *y;        /* y[t * ldy + r] */
    const float *x2; /* pair_tokens(x), or NULL: the one-token path */
} nf_product;

enum { ROW_BLOCK = 4, GROUPS = 8, SPAN = 16 }; /* SPAN even: token pairs stay (2p, 2p + 1) */

/* Lanes l [ROW_BLOCK][8] of rows w (stride n) past the whole chunks: term i into lane i mod 8,
 * then each row's tree, as wf_dot_f32 ends. */
static void finish_rows(float l[ROW_BLOCK][WF_LANES], const float *w, const float *x, int64_t i,
                        int64_t n, float *out) {
    for (; i < n; i++)
        for (int r = 0; r < ROW_BLOCK; r++)
            l[r][i % WF_LANES] = l[r][i % WF_LANES] + w[r * n + i] * x[i];
    for (int r = 0; r < ROW_BLOCK; r++) out[r] = wf_combine_lanes(l[r]);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* spec/numerics.md §dot of ROW_BLOCK rows with x at once: one 8-float register per row is its
 * eight lanes (lane j += w[i + j] · x[i + j], a product then an add: no FMA), the four rows'
 * add chains overlapping. The same operations in the same order as wf_dot_f32 per row. */
__attribute__((target("avx2"))) static void dot_rows_avx2(const float *w, const float *x,
                                                         int64_t n, float *out) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES) {
        const __m256 xv = _mm256_loadu_ps(x + i);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(w + i), xv));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(w + n + i), xv));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(w + 2 * n + i), xv));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(w + 3 * n + i), xv));
    }
    float l[ROW_BLOCK][WF_LANES];
    _mm256_storeu_ps(l[0], a0), _mm256_storeu_ps(l[1], a1);
    _mm256_storeu_ps(l[2], a2), _mm256_storeu_ps(l[3], a3);
    finish_rows(l, w, x, i, n, out);
}
#endif

/* ROW_BLOCK rows' dots with the SIMD path of the ISA in use, else wf_dot_f32 row by row. */
static void dot_rows(const float *w, const float *x, int64_t n, int32_t isa, float *out) {
#if defined(__x86_64__)
    if (isa == WF_ISA_AVX2 || isa == WF_ISA_AVX512) {
        dot_rows_avx2(w, x, n, out);
        return;
    }
#endif
    (void)isa;
    for (int r = 0; r < ROW_BLOCK; r++) out[r] = wf_dot_f32(w + r * n, x, n);
}

/* A scratch of at least n floats for the calling thread, kept for the thread's life and grown as
 * needed (slot 0: decoded rows, 1: token pairs, 2: the delta rule's lanes). The pool's threads live as long as the
 * process, so a product allocates nothing: a large malloc per chunk of rows is an mmap / munmap
 * pair (page faults, and TLB shootdowns that stall the other threads of the pool). NULL when out
 * of memory. */
static float *scratch(int slot, int64_t n) {
    static _Thread_local float *buf[3];
    static _Thread_local int64_t cap[3];
    if (n > cap[slot]) {
        float *grown = malloc(sizeof(float) * (size_t)n);
        if (grown == NULL) return NULL;
        free(buf[slot]);
        buf[slot] = grown, cap[slot] = n;
    }
    return buf[slot];
}

/* Tokens 2p and 2p + 1 of x [T, K] with their whole 8-chunks interleaved (chunk c of the first,
 * then of the second) at x2 + 2p · (K / 8) · 8, for wf_nf_dot4_pair (the calling thread's scratch
 * slot 1); NULL when out of memory (the one-token path then runs). */
static float *pair_tokens(const float *x, int64_t tokens, int64_t K) {
    const int64_t chunks = K / WF_LANES;
    float *x2 = scratch(1, (tokens / 2) * chunks * 2 * WF_LANES + 1);
    if (x2 == NULL) return NULL;
    for (int64_t t = 0; t + 2 <= tokens; t += 2)
        for (int64_t c = 0; c < chunks; c++)
            for (int h = 0; h < 2; h++)
                memcpy(x2 + (t * chunks + 2 * c + h) * WF_LANES, x + (t + h) * K + c * WF_LANES,
                       sizeof(float) * WF_LANES);
    return x2;
}

/* Rows r .. r + ROW_BLOCK (decoded at w) against tokens s0 .. s1 (s0 even): two tokens a zmm on
 * AVX-512 (ninfer_x86.c), else one token at a time. */
static void block_tokens(const nf_product *p, const float *w, const float *x2, int64_t r,
                         int64_t s0, int64_t s1, int32_t isa) {
    const int64_t K = p->m->cols;
    int64_t t = s0;
    for (; x2 != NULL && t + 4 <= s1; t += 4) { /* two pairs a pass: more add chains in flight */
        float o[4][ROW_BLOCK];
        const float *tok[4] = {p->x + t * K, p->x + (t + 1) * K, p->x + (t + 2) * K,
                               p->x + (t + 3) * K};
        float *const outs[4] = {o[0], o[1], o[2], o[3]};
        wf_nf_dot4_quad(w, x2 + t * (K / WF_LANES) * WF_LANES, tok, K, outs);
        for (int u = 0; u < 4; u++)
            for (int b = 0; b < ROW_BLOCK; b++) p->y[(t + u) * p->ldy + r + b] = o[u][b];
    }
    for (; x2 != NULL && t + 2 <= s1; t += 2) {
        float oa[ROW_BLOCK], ob[ROW_BLOCK];
        wf_nf_dot4_pair(w, x2 + t * (K / WF_LANES) * WF_LANES, p->x + t * K, p->x + (t + 1) * K,
                        K, oa, ob);
        for (int b = 0; b < ROW_BLOCK; b++) {
            p->y[t * p->ldy + r + b] = oa[b];
            p->y[(t + 1) * p->ldy + r + b] = ob[b];
        }
    }
    for (; t < s1; t++) {
        float out[ROW_BLOCK];
        dot_rows(w, p->x + t * K, K, isa, out);
        for (int b = 0; b < ROW_BLOCK; b++) p->y[t * p->ldy + r + b] = out[b];
    }
}

/* Prefill: up to GROUPS blocks of ROW_BLOCK rows are decoded once, then the tokens are taken in
 * spans of SPAN, each span against every decoded block, so a span's activations stay in the
 * nearer caches instead of all T tokens being streamed again for every four rows. Which outputs
 * are computed together changes; each output's operations do not
 * (spec/numerics.md §batch-invariance). */
static void nf_rows(void *arg, int64_t r0, int64_t r1) {
    const nf_product *p = arg;
    pthread_once(&tables_once, build_tables);
    const wf_nf_matrix *m = p->m;
    const int64_t K = m->cols;
    const int32_t isa = wf_isa();
    /* one token: q8 / bf16 decoded in registers (ninfer_x86.c), the same bits */
    int64_t r = p->tokens == 1 ? wf_nf_fused_rows(m, r0, r1, p->x, p->y, isa) : r0;
    if (r == r1) return;
    float *rows = scratch(0, GROUPS * ROW_BLOCK * K + 1);
    if (rows == NULL) { /* out of memory: NaN outputs, so that a failure cannot pass unnoticed */
        for (int64_t t = 0; t < p->tokens; t++)
            for (int64_t i = r; i < r1; i++) p->y[t * p->ldy + i] = NAN;
        return;
    }
    const float *x2 = p->x2;
    while (r + ROW_BLOCK <= r1) {
        const int64_t blocks = (r1 - r) / ROW_BLOCK < GROUPS ? (r1 - r) / ROW_BLOCK : GROUPS;
        for (int64_t b = 0; b < blocks * ROW_BLOCK; b++)
            nf_row_values(m, m->row0 + r + b, rows + b * K);
        for (int64_t s0 = 0; s0 < p->tokens; s0 += SPAN) {
            const int64_t s1 = s0 + SPAN < p->tokens ? s0 + SPAN : p->tokens;
            for (int64_t g = 0; g < blocks; g++)
                block_tokens(p, rows + g * ROW_BLOCK * K, x2, r + g * ROW_BLOCK, s0, s1, isa);
        }
        r += blocks * ROW_BLOCK;
    }
    for (; r < r1; r++) {
        nf_row_values(m, m->row0 + r, rows);
        for (int64_t t = 0; t < p->tokens; t++)
            p->y[t * p->ldy + r] = wf_dot_f32(rows, p->x + t * K, K);
    }
}

/* y[t * ldy + r] = Σ_c W[row0 + r, c] x[t, c] for r < rows, in the spec/numerics.md §dot order. */
void wf_nf_matmat(const wf_nf_matrix *m, const float *x, int64_t tokens, float *y, int64_t ldy,
                  int32_t threads) {
    /* the token pairs are laid out once, for every thread (not once per chunk of rows) */
    float *x2 = wf_isa() == WF_ISA_AVX512 && tokens > 1 ? pair_tokens(x, tokens, m->cols) : NULL;
    nf_product p = {m, x, tokens, ldy, y, x2};
    wf_parallel_for(m->rows, threads, nf_rows, &p);
}

/* Several matrices of the same width against the same tokens, their rows as one range on the pool
 * (one hand-off instead of one a matrix: a decode step's q / k / v / z / a / b, gate / up). */
typedef struct {
    const wf_nf_matrix *const *m;
    int64_t count;
    const float *x;
    int64_t tokens;
    float *const *y;
    const int64_t *ldy;
    const float *x2;
} nf_set;

/* Rows [s0, s1) of the matrices laid end to end: each matrix's share by nf_rows. */
static void nf_set_rows(void *arg, int64_t s0, int64_t s1) {
    const nf_set *s = arg;
    int64_t base = 0;
    for (int64_t i = 0; i < s->count && base < s1; base += s->m[i]->rows, i++) {
        const int64_t lo = s0 > base ? s0 : base;
        const int64_t hi = s1 < base + s->m[i]->rows ? s1 : base + s->m[i]->rows;
        if (lo >= hi) continue;
        nf_product p = {s->m[i], s->x, s->tokens, s->ldy[i], s->y[i], s->x2};
        nf_rows(&p, lo - base, hi - base);
    }
}

/* wf_nf_matmat of each m[i] (all of x's width) into y[i] (row stride ldy[i]), one pool run. */
void wf_nf_matmat_set(const wf_nf_matrix *const *m, int64_t count, const float *x,
                      int64_t tokens, float *const *y, const int64_t *ldy, int32_t threads) {
    int64_t rows = 0;
    for (int64_t i = 0; i < count; i++) rows += m[i]->rows;
    if (count == 0) return;
    float *x2 = wf_isa() == WF_ISA_AVX512 && tokens > 1 ? pair_tokens(x, tokens, m[0]->cols) : NULL;
    nf_set s = {m, count, x, tokens, y, ldy, x2};
    wf_parallel_for(rows, threads, nf_set_rows, &s);
}

/* One value head: S [dk, dv] updated in place, o [dv] written (spec/numerics.md §gdn-gates), in
 * two passes over S: (decay, then the lanes of m_j = Σ_i S[i,j] k_i) and (S + k_i δ_j, then the
 * lanes of o_j = Σ_i S[i,j] q_i). Every element still sees the same operations in the same order
 * (each lane row takes i ascending); lanes l [8][dv], δ / m in d [dv]. The loops over j are
 * element-wise, so any vector width the compiler picks gives the same bits. */
#define DELTA_RULE_HEAD(NAME, ATTR)                                                             \
    ATTR static void NAME(float *S, const float *q, const float *k, const float *v, float decay, \
                          float beta, int64_t dk, int64_t dv, float *l, float *d, float *o) {  \
        for (int64_t i = 0; i < WF_LANES * dv; i++) l[i] = 0.0f;                                \
        for (int64_t i = 0; i < dk; i++) {                                                      \
            float *s = S + i * dv, *lane = l + (i % WF_LANES) * dv;                             \
            const float ki = k[i];                                                              \
            for (int64_t j = 0; j < dv; j++) {                                                  \
                s[j] = s[j] * decay;                                                            \
                lane[j] = lane[j] + s[j] * ki;                                                  \
            }                                                                                   \
        }                                                                                       \
        combine(l, dv, d);                                                                      \
        for (int64_t j = 0; j < dv; j++) d[j] = (v[j] - d[j]) * beta; /* δ */                   \
        for (int64_t i = 0; i < WF_LANES * dv; i++) l[i] = 0.0f;                                \
        for (int64_t i = 0; i < dk; i++) {                                                      \
            float *s = S + i * dv, *lane = l + (i % WF_LANES) * dv;                             \
            const float ki = k[i], qi = q[i];                                                   \
            for (int64_t j = 0; j < dv; j++) {                                                  \
                s[j] = s[j] + ki * d[j];                                                        \
                lane[j] = lane[j] + s[j] * qi;                                                  \
            }                                                                                   \
        }                                                                                       \
        combine(l, dv, o);                                                                      \
    }

/* out[j] ← the spec/numerics.md §lanes8-tree of the eight lane rows l[L * dv + j]. */
static void combine(const float *l, int64_t dv, float *out) {
    for (int64_t j = 0; j < dv; j++) {
        float lanes[WF_LANES];
        for (int L = 0; L < WF_LANES; L++) lanes[L] = l[L * dv + j];
        out[j] = wf_combine_lanes(lanes);
    }
}

DELTA_RULE_HEAD(delta_rule_head, )
#if defined(__x86_64__) && defined(__GNUC__)
DELTA_RULE_HEAD(delta_rule_head_avx2, __attribute__((target("avx2"))))
DELTA_RULE_HEAD(delta_rule_head_avx512, __attribute__((target("avx512f"))))
#endif

void wf_exp_array(const float *x, int64_t n, float *out); /* model_ops.c */

/* spec/numerics.md §log-f32 for positive finite x, as ref/numerics/log.py `log` computes it: x =
 * m · 2^e exactly (a subnormal first scaled by 2^24), m in [√½, √2); f = m − 1, s = f / (2 + f),
 * z = s², P by Horner from 2/13 down to 2/3 (a product then a sum), log m = 2s + s · (z · P);
 * e · ln2_hi + (log m + e · ln2_lo). The split is done on the bits (no libm). */
static float log_positive(float x) {
    static const uint32_t poly[6] = {0x3F2AAAABu, 0x3ECCCCCDu, 0x3E924925u,
                                     0x3E638E39u, 0x3E3A2E8Cu, 0x3E1D89D9u};
    float e0 = 0.0f;
    if (x < f32_of_bits(0x00800000u)) x = x * 16777216.0f, e0 = -24.0f; /* exact */
    uint32_t b;
    memcpy(&b, &x, 4);
    float e = (float)((int32_t)((b >> 23) & 0xFFu) - 126) + e0;
    float m = f32_of_bits((b & 0x007FFFFFu) | 0x3F000000u); /* [0.5, 1) */
    if (m < f32_of_bits(0x3F3504F3u)) m = m * 2.0f, e = e - 1.0f;
    const float f = m - 1.0f, s = f / (2.0f + f), z = s * s;
    float p = f32_of_bits(poly[5]);
    for (int i = 4; i >= 0; i--) p = p * z + f32_of_bits(poly[i]);
    const float logm = (s + s) + s * (z * p);
    return e * f32_of_bits(0x3F317200u) + (logm + e * f32_of_bits(0x35BFBE8Eu));
}

/* spec/numerics.md §log-f32 with its special values: log(+0) = −inf, log(+inf) = +inf, negative
 * and NaN give NaN. */
static float log_f32(float x) {
    if (x == 0.0f) return -INFINITY;
    if (x == INFINITY) return INFINITY;
    if (!(x > 0.0f)) return NAN;
    return log_positive(x);
}

/* spec/numerics.md §softplus x when x > 20, else log1p(exp(x)) (spec/numerics.md §log1p: u = 1 + y;
 * y when u == 1, log(u) when u is infinite, else log(u) · (y / (u − 1))), the exp by
 * wf_exp_array: ref/numerics/log.py `softplus`, element by element. */
void wf_softplus_array(const float *x, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] > 20.0f ? 20.0f : x[i]; /* NaN stays */
    wf_exp_array(out, n, out);
    for (int64_t i = 0; i < n; i++) {
        const float y = out[i], u = 1.0f + y;
        float r = u == 1.0f ? y : log_f32(u) * (y / (u - 1.0f));
        if (isinf(u)) r = log_f32(u);
        out[i] = x[i] > 20.0f ? x[i] : r;
    }
}

enum { CONV_BLOCK = 64 }; /* channels a pass: the eight lane rows stay in the nearest cache */

/* spec/numerics.md §gdn-conv before the SiLU: out[t, c] = the spec/numerics.md §lanes8-tree sum
 * over j < kernel of w[j, c] · seq[t + j, c] (term j into lane j mod 8 from +0.0, then the tree),
 * seq [T + kernel − 1, C] the cached inputs then the call's, w [kernel, C]. The loops over c are
 * element-wise, so any vector width gives the same bits. */
void wf_gdn_conv(const float *seq, const float *w, int64_t T, int64_t C, int64_t kernel,
                 float *out) {
    float l[WF_LANES][CONV_BLOCK];
    for (int64_t t = 0; t < T; t++)
        for (int64_t c0 = 0; c0 < C; c0 += CONV_BLOCK) {
            const int64_t n = C - c0 < CONV_BLOCK ? C - c0 : CONV_BLOCK;
            for (int L = 0; L < WF_LANES; L++)
                for (int64_t c = 0; c < n; c++) l[L][c] = 0.0f;
            for (int64_t j = 0; j < kernel; j++) {
                const float *wj = w + j * C + c0, *sj = seq + (t + j) * C + c0;
                float *lane = l[j % WF_LANES];
                for (int64_t c = 0; c < n; c++) lane[c] = lane[c] + wj[c] * sj[c];
            }
            float *o = out + t * C + c0;
            for (int64_t c = 0; c < n; c++) { /* wf_combine_lanes, element-wise */
                const float a0 = l[0][c] + l[4][c], a1 = l[1][c] + l[5][c];
                const float a2 = l[2][c] + l[6][c], a3 = l[3][c] + l[7][c];
                o[c] = (a0 + a2) + (a1 + a3);
            }
        }
}

/* spec/numerics.md §lanes8-tree sum of each of `rows` rows of n floats (row stride n). */
void wf_lanes8_rows(const float *x, int64_t rows, int64_t n, float *out) {
    for (int64_t r = 0; r < rows; r++) {
        float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        const float *row = x + r * n;
        for (int64_t i = 0; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + row[i];
        out[r] = wf_combine_lanes(l);
    }
}

typedef void (*delta_head_fn)(float *, const float *, const float *, const float *, float, float,
                              int64_t, int64_t, float *, float *, float *);

#if defined(__x86_64__) && defined(__GNUC__)
/* AVX-512: ninfer_x86.c's column strips when dv is a multiple of 16, else the macro's body. */
static void delta_rule_head_strips(float *S, const float *q, const float *k, const float *v,
                                   float decay, float beta, int64_t dk, int64_t dv, float *l,
                                   float *d, float *o) {
    if (dv % 16 == 0)
        wf_delta_rule_cols_avx512(S, q, k, v, decay, beta, dk, dv, o);
    else
        delta_rule_head_avx512(S, q, k, v, decay, beta, dk, dv, l, d, o);
}
#endif

static delta_head_fn delta_head(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (wf_isa() == WF_ISA_AVX512) return delta_rule_head_strips;
    if (wf_isa() == WF_ISA_AVX2) return delta_rule_head_avx2;
#endif
    return delta_rule_head;
}

/* T consecutive tokens of one sequence: q and k [T, hk, dk] (value head h reads key head
 * h / (hv / hk)), v and out [T, hv, dv], decay and beta [T, hv]; acc holds (WF_LANES + 1) · dv
 * floats for each value head. */
typedef struct {
    float *states;
    const float *q, *k, *v, *decay, *beta;
    int64_t T, hv, hk, dk, dv;
    float *out, *acc;
} gdn_job;

/* Value heads [h0, h1), each through its T tokens in order. A head's state is read and written
 * by that head alone, so any split of the heads gives the same bits
 * (spec/numerics.md §threads), and the head's [dk, dv] state stays in the nearer caches across
 * the tokens. */
static void gdn_heads(void *arg, int64_t h0, int64_t h1) {
    const gdn_job *j = arg;
    const delta_head_fn head = delta_head();
    const int64_t per_key = j->hv / j->hk, dk = j->dk, dv = j->dv;
    for (int64_t h = h0; h < h1; h++) {
        float *acc = j->acc + h * (WF_LANES + 1) * dv;
        for (int64_t t = 0; t < j->T; t++) {
            const int64_t g = t * j->hk + h / per_key, at = t * j->hv + h;
            head(j->states + h * dk * dv, j->q + g * dk, j->k + g * dk, j->v + at * dv,
                 j->decay[at], j->beta[at], dk, dv, acc, acc + WF_LANES * dv, j->out + at * dv);
        }
    }
}

/* The delta rule of T tokens of one sequence (spec/numerics.md §gdn-gates), value heads on the
 * pool. Returns 0, or 1 when out of memory (then nothing was changed). */
int32_t wf_gdn_steps(float *states, const float *q, const float *k, const float *v,
                     const float *decay, const float *beta, int64_t T, int64_t hv, int64_t hk,
                     int64_t dk, int64_t dv, float *out, int32_t threads) {
    float *acc = scratch(2, hv * (WF_LANES + 1) * dv + 1);
    if (acc == NULL) return 1;
    gdn_job job = {states, q, k, v, decay, beta, T, hv, hk, dk, dv, out, acc};
    wf_parallel_for(hv, threads, gdn_heads, &job);
    return 0;
}

/* One token through every value head: states [hv, dk, dv], q and k [hk, dk], v and out [hv, dv],
 * decay and beta [hv] (wf_gdn_steps of one token on one thread). Returns 0, or 1 when out of
 * memory (then nothing was changed). */
int32_t wf_gdn_step(float *states, const float *q, const float *k, const float *v,
                    const float *decay, const float *beta, int64_t hv, int64_t hk, int64_t dk,
                    int64_t dv, float *out) {
    return wf_gdn_steps(states, q, k, v, decay, beta, 1, hv, hk, dk, dv, out, 1);
}
