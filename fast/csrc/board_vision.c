/* The kestrel-board profile's vision tower in portable C (spec/numerics.md §board-vision).
 *
 * Every function computes what ref/qwen3_vl/board computes, operation for operation: the same
 * float32 roundings in the same order, fmaf() where the board fuses (C99 fmaf rounds once),
 * binary64 where the engine accumulates in double, the host C library's expf through a volatile
 * pointer (spec/numerics.md §board-c-library), and aarch64 glibc's tanhf emulated step by step
 * (spec/numerics.md §board-vision-tanhf). Built with -ffp-contract=off like every file in
 * fast/csrc. Work splits over outputs (patches, queries, tokens or rows) only, so results do not
 * depend on the thread count. On the SIMD paths the patch embedding, the attention and the
 * mergers hand whole vectors of outputs to board_vision_simd.c (a lane an output, the same
 * bits) and keep the rest here; the Q8 linears' SIMD forms are below.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "board_vision.h"
#include "cpu.h"
#include "wf_kernels.h"

enum { VQB = 32 };

static float (*volatile vision_expf)(float) = expf;

static float bits_f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t f_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- spec/numerics.md §board-vision-tanhf glibc 2.36's expm1f / tanhf as aarch64 builds them -- */

static float add_exponent(float y, int32_t k) { return bits_f(f_bits(y) + ((uint32_t)k << 23)); }

static float expm1f_tail(float x, float e, float c, float hxs, int32_t k) {
    e = fmaf(e - c, x, -c) - hxs;
    if (k == -1) return fmaf(x - e, 0.5f, -0.5f);
    if (k == 1) {
        if (x < -0.25f) return (e - (x + 0.5f)) * -2.0f;
        return fmaf(x - e, 2.0f, 1.0f);
    }
    if (k <= -2 || k > 56) return add_exponent(1.0f - (e - x), k) - 1.0f;
    if (k > 22) return add_exponent((x - (e + bits_f((uint32_t)(0x7f - k) << 23))) + 1.0f, k);
    return add_exponent(bits_f(0x3f800000u - (0x1000000u >> k)) - (e - x), k);
}

static float board_expm1f(float x) {
    const float ln2_hi = bits_f(0x3f317180u), ln2_lo = bits_f(0x3717f7d1u);
    const uint32_t hx = f_bits(x) & 0x7fffffffu;
    const int negative = (f_bits(x) >> 31) != 0;
    float c = 0.0f, hi, lo;
    int32_t k = 0;
    if (hx > 0x4195b843u && negative) return -1.0f;
    if (hx > 0x3eb17218u) {
        if (hx < 0x3f851592u) {
            hi = negative ? x + ln2_hi : x - ln2_hi;
            lo = negative ? -ln2_lo : ln2_lo;
            k = negative ? -1 : 1;
        } else {
            k = (int32_t)((negative ? -0.5f : 0.5f) + x * bits_f(0x3fb8aa3bu));
            float t = (float)k;
            hi = fmaf(-t, ln2_hi, x);
            lo = t * ln2_lo;
        }
        x = hi - lo;
        c = (hi - x) - lo;
    } else if (hx < 0x33000000u) {
        return x;
    }
    const float hfx = x * 0.5f, hxs = x * hfx;
    float r1 = fmaf(hxs, bits_f(0xb457edbbu), bits_f(0x36867e54u));
    r1 = fmaf(r1, hxs, bits_f(0xb8a670cdu));
    r1 = fmaf(r1, hxs, bits_f(0x3ad00d01u));
    r1 = fmaf(r1, hxs, bits_f(0xbd088889u));
    r1 = fmaf(r1, hxs, 1.0f);
    const float t = fmaf(-hfx, r1, 3.0f);
    const float e = ((r1 - t) / fmaf(-x, t, 6.0f)) * hxs;
    if (k == 0) return x - fmaf(x, e, -hxs);
    return expm1f_tail(x, e, c, hxs, k);
}

static float board_tanhf(float x) {
    const uint32_t jx = f_bits(x), ix = jx & 0x7fffffffu;
    float z;
    if (ix > 0x7f7fffffu) return (jx >> 31) == 0 ? 1.0f / x + 1.0f : 1.0f / x - 1.0f;
    if (ix == 0) return x;
    if (ix < 0x24000000u) return (x + 1.0f) * x;
    if (ix > 0x41afffffu) {
        z = 1.0f - bits_f(0x0da24260u);
    } else if (ix > 0x3f7fffffu) {
        z = 1.0f - 2.0f / (board_expm1f(fabsf(x) + fabsf(x)) + 2.0f);
    } else {
        float t = board_expm1f(fabsf(x) * -2.0f);
        z = -t / (t + 2.0f);
    }
    return (jx >> 31) ? -z : z;
}

void wfv_tanhf(const float *x, int64_t n, float *y) {
    const wfv_simd *simd = wfv_simd_for(wf_isa());
    int64_t i = simd != NULL ? simd->tanhf(x, n, y) : 0;
    for (; i < n; i++) y[i] = board_tanhf(x[i]);
}

/* spec/numerics.md §board-vision-gelu */
static float board_gelu(float v) {
    const float inner = 0.7978845608f * (v + 0.044715f * ((v * v) * v));
    return (0.5f * v) * (1.0f + board_tanhf(inner));
}

typedef struct {
    const float *x;
    float *y;
    const wfv_simd *simd;
} gelu_ctx;

enum { GELU_CHUNK = 4096 }; /* elements a work item: whole vectors on every path */

static void gelu_range(void *arg, int64_t begin, int64_t end) {
    const gelu_ctx *c = (const gelu_ctx *)arg;
    int64_t i = begin * GELU_CHUNK;
    if (c->simd != NULL) i += c->simd->gelu(c->x + i, (end - begin) * GELU_CHUNK, c->y + i);
    for (; i < end * GELU_CHUNK; i++) c->y[i] = board_gelu(c->x[i]);
}

void wfv_gelu(const float *x, int64_t n, float *y, int32_t threads) {
    gelu_ctx c = {x, y, wfv_simd_for(wf_isa())};
    wf_parallel_for(n / GELU_CHUNK, threads, gelu_range, &c);
    int64_t i = n - n % GELU_CHUNK;
    if (c.simd != NULL) i += c.simd->gelu(x + i, n - i, y + i);
    for (; i < n; i++) y[i] = board_gelu(x[i]);
}

/* ---- spec/numerics.md §board-vision-layernorm ----------------------------------------------- */

void wfv_layernorm(const float *x, int64_t rows, int64_t n, const float *w, const float *b,
                   float eps, float *out) {
    for (int64_t r = 0; r < rows; r++) {
        const float *v = x + r * n;
        double s = 0.0, ss = 0.0;
        for (int64_t i = 0; i < n; i++) {
            s += (double)v[i];
            ss += (double)v[i] * (double)v[i];
        }
        const float mean = (float)(s / (double)n);
        const float var = (float)(ss / (double)n) - mean * mean;
        const float inv = 1.0f / sqrtf(var + eps);
        for (int64_t i = 0; i < n; i++) out[r * n + i] = ((v[i] - mean) * inv) * w[i] + b[i];
    }
}

/* ---- spec/numerics.md §board-vision-patch: per channel a 4-lane FMA chain ------------------- */

typedef struct {
    const float *rows, *w, *b;
    int64_t k, out;
    float *y;
    const wfv_simd *simd;
    const float *wt; /* w in groups of W channels, each transposed [out / W, k, W], or NULL */
} patch_ctx;

static float patch_channel(const float *x, const float *w, int64_t k, float b) {
    const int64_t whole = k - k % 4;
    float l[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < whole; i += 4)
        for (int j = 0; j < 4; j++) l[j] = fmaf(x[i + j], w[i + j], l[j]);
    float acc = (l[0] + l[1]) + (l[2] + l[3]);
    for (int64_t i = whole; i < k; i++) acc = fmaf(x[i], w[i], acc);
    return acc + b;
}

static void patch_range(void *arg, int64_t begin, int64_t end) {
    const patch_ctx *c = (const patch_ctx *)arg;
    for (int64_t p = begin; p < end; p++) {
        const float *x = c->rows + p * c->k;
        float *y = c->y + p * c->out;
        int64_t o = 0;
        if (c->wt != NULL)
            for (; o + c->simd->lanes <= c->out; o += c->simd->lanes)
                c->simd->patch(x, c->wt + o * c->k, c->simd->lanes, c->k, c->b + o, y + o);
        for (; o < c->out; o++) y[o] = patch_channel(x, c->w + o * c->k, c->k, c->b[o]);
    }
}

void wfv_patch_embed(const float *rows, int64_t patches, int64_t k, const float *w,
                     const float *b, int64_t out, float *y, int32_t threads) {
    const wfv_simd *simd = wfv_simd_for(wf_isa());
    const int64_t lanes = simd != NULL ? simd->lanes : 1, whole = out - out % lanes;
    float *wt = simd != NULL && whole > 0 ? malloc(sizeof(float) * (size_t)(k * whole))
                                          : NULL; /* NULL: every channel in patch_channel */
    for (int64_t o = 0; wt != NULL && o < whole; o++) /* group o / W: k vectors of W lanes */
        for (int64_t i = 0; i < k; i++)
            wt[(o - o % lanes) * k + i * lanes + o % lanes] = w[o * k + i];
    patch_ctx c = {rows, w, b, k, out, y, simd, wt};
    wf_parallel_for(patches, threads, patch_range, &c);
    free(wt);
}

/* ---- spec/numerics.md §board-vision-linear: the Q8_0 SDOT linears --------------------------- */

typedef struct {
    const int8_t *xc;    /* activation codes [P, K] */
    const float *d16;    /* activation scales rounded to f16 [P, K/32] */
    const int8_t *wc;    /* weight codes [R, K] */
    const float *dw;     /* weight scales [R, K/32] */
    const float *bias;   /* [R] */
    int64_t k, rows;
    float *y;            /* [P, R] */
    int64_t first;       /* rows before it were done by a SIMD path */
} q8_ctx;

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define VNNI512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* The first 16·tiles rows of patch p with AVX-512 + VNNI: lane i of every vector is row 16t+i.
 * The engine's four partial dots of a block (spec/numerics.md §board-vision-linear: d_j over
 * codes 4j..4j+3 and 16+4j..16+4j+3) are integers, exact in any order: here piece j and piece
 * 4+j of the packed weights (w + 128, unsigned for vpdpbusd) against the activation's pieces
 * broadcast, less 128·(the pieces' code sum), `corr`. Then the scalar loop's float steps per
 * lane: prod = (float)d_j · s, l_j = l_j + prod, y = ((l0 + l2) + (l1 + l3)) + bias. `pw`: per
 * tile and block, 8 pieces × 16 rows (int32 each); `pd`: per tile and block, the 16 rows' weight
 * scales; `corr`: per patch, block and j (pack_tiles). */
VNNI512 static void q8_tiles_avx512(const q8_ctx *c, const int32_t *pw, const float *pd,
                                    const int32_t *corr, int64_t t0, int64_t t1, int64_t p) {
    const int64_t nb = c->k / VQB;
    const int8_t *xc = c->xc + p * c->k;
    for (int64_t t = t0; t < t1; t++) {
        __m512 l[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
        for (int64_t b = 0; b < nb; b++) {
            const int32_t *u = pw + (t * nb + b) * 8 * 16;
            const int8_t *xb = xc + b * VQB;
            const __m512 s = _mm512_mul_ps(_mm512_loadu_ps(pd + (t * nb + b) * 16),
                                           _mm512_set1_ps(c->d16[p * nb + b]));
            #pragma GCC unroll 4 /* l[] in registers, not a store and reload a block */
            for (int j = 0; j < 4; j++) {
                int32_t lo, hi;
                memcpy(&lo, xb + 4 * j, 4);
                memcpy(&hi, xb + 16 + 4 * j, 4);
                __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(),
                                                _mm512_loadu_si512(u + 16 * j),
                                                _mm512_set1_epi32(lo));
                d = _mm512_dpbusd_epi32(d, _mm512_loadu_si512(u + 16 * (4 + j)),
                                        _mm512_set1_epi32(hi));
                d = _mm512_sub_epi32(d, _mm512_set1_epi32(corr[(p * nb + b) * 4 + j]));
                l[j] = _mm512_add_ps(l[j], _mm512_mul_ps(_mm512_cvtepi32_ps(d), s));
            }
        }
        const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(l[0], l[2]),
                                                     _mm512_add_ps(l[1], l[3])),
                                       _mm512_loadu_ps(c->bias + 16 * t));
        _mm512_storeu_ps(c->y + p * c->rows + 16 * t, y);
    }
}

/* The same tiles with AVX2, eight rows a vector: a piece's w is the packed byte XOR 0x80, and
 * maddubs(|w|, x·sign(w)) then madd with ones gives each lane its four products' sum exactly
 * (every int16 pair at most 2·128·127). The float steps are the AVX-512 form's, eight lanes. */
__attribute__((target("avx2"))) static void q8_tiles_avx2(const q8_ctx *c, const int32_t *pw,
                                                          const float *pd, int64_t t0,
                                                          int64_t t1, int64_t p) {
    const int64_t nb = c->k / VQB;
    const int8_t *xc = c->xc + p * c->k;
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    for (int64_t t = 2 * t0; t < 2 * t1; t++) { /* half tiles of 8 rows */
        __m256 l[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                       _mm256_setzero_ps()};
        const int64_t tile = t / 2, half = 8 * (t % 2);
        for (int64_t b = 0; b < nb; b++) {
            const int32_t *u = pw + (tile * nb + b) * 8 * 16 + half;
            const int8_t *xb = xc + b * VQB;
            const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(pd + (tile * nb + b) * 16 + half),
                                           _mm256_set1_ps(c->d16[p * nb + b]));
            #pragma GCC unroll 4 /* l[] in registers, not a store and reload a block */
            for (int j = 0; j < 4; j++) {
                int32_t lo, hi;
                memcpy(&lo, xb + 4 * j, 4);
                memcpy(&hi, xb + 16 + 4 * j, 4);
                const __m256i w0 =
                    _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(u + 16 * j)), flip);
                const __m256i w1 = _mm256_xor_si256(
                    _mm256_loadu_si256((const __m256i *)(u + 16 * (4 + j))), flip);
                const __m256i x0 = _mm256_set1_epi32(lo), x1 = _mm256_set1_epi32(hi);
                const __m256i d = _mm256_add_epi32(
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w0),
                                                           _mm256_sign_epi8(x0, w0)),
                                      ones),
                    _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w1),
                                                           _mm256_sign_epi8(x1, w1)),
                                      ones));
                l[j] = _mm256_add_ps(l[j], _mm256_mul_ps(_mm256_cvtepi32_ps(d), s));
            }
        }
        const __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(l[0], l[2]),
                                                     _mm256_add_ps(l[1], l[3])),
                                       _mm256_loadu_ps(c->bias + 16 * tile + half));
        _mm256_storeu_ps(c->y + p * c->rows + 16 * tile + half, y);
    }
}

typedef struct {
    const q8_ctx *c;
    const int32_t *pw, *corr; /* corr: NULL on the avx2 path */
    const float *pd;
    int64_t tiles;
} q8_tiled;

/* The tiles' inputs, once per call: pw, pd as q8_tiles_avx512 reads them (the first 16·tiles
 * rows of wc / dw), and with corr != NULL the patches' 128·(code sum) of each (block, j) pair of
 * pieces. */
static void pack_tiles(const q8_ctx *c, int64_t tiles, int64_t patches, int32_t *pw, float *pd,
                       int32_t *corr) {
    const int64_t nb = c->k / VQB;
    for (int64_t t = 0; t < tiles; t++)
        for (int64_t b = 0; b < nb; b++)
            for (int64_t i = 0; i < 16; i++) {
                const int8_t *w = c->wc + (16 * t + i) * c->k + b * VQB;
                for (int j = 0; j < 8; j++) {
                    uint32_t v = 0;
                    for (int e = 0; e < 4; e++)
                        v |= (uint32_t)(uint8_t)(w[4 * j + e] + 128) << (8 * e);
                    pw[((t * nb + b) * 8 + j) * 16 + i] = (int32_t)v;
                }
                pd[(t * nb + b) * 16 + i] = c->dw[(16 * t + i) * nb + b];
            }
    for (int64_t p = 0; corr != NULL && p < patches; p++)
        for (int64_t b = 0; b < nb; b++) {
            const int8_t *x = c->xc + p * c->k + b * VQB;
            for (int j = 0; j < 4; j++) {
                int32_t sum = 0;
                for (int e = 0; e < 4; e++) sum += x[4 * j + e] + x[16 + 4 * j + e];
                corr[(p * nb + b) * 4 + j] = 128 * sum;
            }
        }
}

static void q8_tiled_range(void *arg, int64_t begin, int64_t end);

#elif defined(__ARM_NEON)
#include <arm_neon.h>

/* Lane j: the integer dot of codes 4j..4j+3 of w and x, added to acc — one sdot, or without
 * dotprod the int16 products (|p| <= 2^14) paired twice. Integers: exact either way. */
static inline int32x4_t q8_dot4(int32x4_t acc, int8x16_t w, int8x16_t x, int dotprod) {
#if defined(__ARM_FEATURE_DOTPROD)
    if (dotprod) return vdotq_s32(acc, w, x);
#endif
    (void)dotprod;
    const int16x8_t lo = vmull_s8(vget_low_s8(w), vget_low_s8(x));
    const int16x8_t hi = vmull_s8(vget_high_s8(w), vget_high_s8(x));
    return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
}

/* Every row of patch p with NEON, as the engine's SDOT linear: the four partial dots of a block
 * (spec/numerics.md §board-vision-linear) are the four lanes of two dot steps — codes 0..15, then
 * 16..31 into the same lanes — and the scalar loop's float steps run on those lanes: prod =
 * (float)d_j · s, l_j = l_j + prod, then ((l0 + l2) + (l1 + l3)) + bias. Four rows at a time. */
static void q8_rows_neon(const q8_ctx *c, int64_t p, int dotprod) {
    const int64_t nb = c->k / VQB;
    const int8_t *xc = c->xc + p * c->k;
    int64_t r = 0;
    for (; r < c->rows; r += 4) {
        const int64_t nr = c->rows - r < 4 ? c->rows - r : 4;
        float32x4_t l[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f),
                            vdupq_n_f32(0.0f)};
        for (int64_t b = 0; b < nb; b++) {
            const int8x16_t x0 = vld1q_s8(xc + b * VQB), x1 = vld1q_s8(xc + b * VQB + 16);
            const float dx = c->d16[p * nb + b];
            for (int64_t i = 0; i < nr; i++) {
                const int8_t *wb = c->wc + (r + i) * c->k + b * VQB;
                const int32x4_t d = q8_dot4(q8_dot4(vdupq_n_s32(0), vld1q_s8(wb), x0, dotprod),
                                            vld1q_s8(wb + 16), x1, dotprod);
                const float s = c->dw[(r + i) * nb + b] * dx;
                l[i] = vaddq_f32(l[i], vmulq_f32(vcvtq_f32_s32(d), vdupq_n_f32(s)));
            }
        }
        for (int64_t i = 0; i < nr; i++)
            c->y[p * c->rows + r + i] =
                ((vgetq_lane_f32(l[i], 0) + vgetq_lane_f32(l[i], 2)) +
                 (vgetq_lane_f32(l[i], 1) + vgetq_lane_f32(l[i], 3))) + c->bias[r + i];
    }
}

static void q8_neon_range(void *arg, int64_t begin, int64_t end) {
    const q8_ctx *c = (const q8_ctx *)arg;
    for (int64_t p = begin; p < end; p++) q8_rows_neon(c, p, wf_isa() == WF_ISA_DOTPROD);
}
#endif

static void q8_range(void *arg, int64_t begin, int64_t end) {
    const q8_ctx *c = (const q8_ctx *)arg;
    const int64_t nb = c->k / VQB;
    for (int64_t p = begin; p < end; p++) {
        const int8_t *xc = c->xc + p * c->k;
        for (int64_t r = c->first; r < c->rows; r++) {
            const int8_t *wc = c->wc + r * c->k;
            float l[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int64_t b = 0; b < nb; b++) {
                const float s = c->dw[r * nb + b] * c->d16[p * nb + b];
                const int8_t *xb = xc + b * VQB, *wb = wc + b * VQB;
                for (int j = 0; j < 4; j++) {
                    int32_t d = 0;
                    for (int e = 0; e < 4; e++)
                        d += (int32_t)xb[4 * j + e] * wb[4 * j + e] +
                             (int32_t)xb[16 + 4 * j + e] * wb[16 + 4 * j + e];
                    const float prod = (float)d * s;
                    l[j] = l[j] + prod;
                }
            }
            c->y[p * c->rows + r] = ((l[0] + l[2]) + (l[1] + l[3])) + c->bias[r];
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* Patches in blocks of 32, and for each block the tiles two at a time: a tile's packed weights
 * (16 rows × k bytes as int32 pieces) stay in the cache while the block's patches go by, instead
 * of the whole packed matrix streaming through once a patch. */
static void q8_tiled_range(void *arg, int64_t begin, int64_t end) {
    const q8_tiled *q = (const q8_tiled *)arg;
    for (int64_t p0 = begin; p0 < end; p0 += 32)
        for (int64_t t0 = 0; t0 < q->tiles; t0 += 2) {
            const int64_t t1 = t0 + 2 < q->tiles ? t0 + 2 : q->tiles;
            for (int64_t p = p0; p < end && p < p0 + 32; p++)
                if (q->corr != NULL)
                    q8_tiles_avx512(q->c, q->pw, q->pd, q->corr, t0, t1, p);
                else
                    q8_tiles_avx2(q->c, q->pw, q->pd, t0, t1, p);
        }
}
#endif

void wfv_q8_linear(const int8_t *xc, const float *d16, int64_t patches, int64_t k,
                   const int8_t *wc, const float *dw, int64_t rows, const float *bias, float *y,
                   int32_t threads) {
    q8_ctx c = {xc, d16, wc, dw, bias, k, rows, y, 0};
#if defined(__x86_64__) && defined(__GNUC__)
    /* On the avx512 and avx2 paths the whole tiles of 16 rows take the SIMD form, on weights
     * packed once per call (pieces of 16 rows side by side, w + 128); a failed allocation leaves
     * every row to the scalar loop. */
    const int32_t isa = wf_isa();
    const int64_t nb = k / VQB;
    const int64_t tiles = isa == WF_ISA_AVX512 || isa == WF_ISA_AVX2 ? rows / 16 : 0;
    const int avx512 = isa == WF_ISA_AVX512;
    int32_t *pw = tiles ? malloc(sizeof(int32_t) * (size_t)(tiles * nb * 8 * 16)) : NULL;
    float *pd = tiles ? malloc(sizeof(float) * (size_t)(tiles * nb * 16)) : NULL;
    int32_t *corr = tiles && avx512 ? malloc(sizeof(int32_t) * (size_t)(patches * nb * 4)) : NULL;
    if (pw != NULL && pd != NULL && (corr != NULL || !avx512)) {
        pack_tiles(&c, tiles, patches, pw, pd, corr);
        q8_tiled q = {&c, pw, corr, pd, tiles};
        wf_parallel_for(patches, threads, q8_tiled_range, &q);
        c.first = 16 * tiles;
    }
    free(pw), free(pd), free(corr);
#elif defined(__ARM_NEON)
    if (wf_isa() == WF_ISA_NEON || wf_isa() == WF_ISA_DOTPROD) {
        wf_parallel_for(patches, threads, q8_neon_range, &c);
        c.first = rows;
    }
#endif
    if (c.first < rows) wf_parallel_for(patches, threads, q8_range, &c);
}

/* ---- spec/numerics.md §board-vision-attention: one head ------------------------------------ */

typedef struct {
    const float *q, *k, *v;
    int64_t n, hd;
    float scale;
    float *out, *scores; /* scores [n, n] */
    const wfv_simd *simd;
    const float *kt; /* the keys in blocks of W, each transposed [n / W, hd, W], or NULL */
} attn_ctx;

static float board_score(const float *q, const float *k, int64_t hd, float scale) {
    float acc[64][4]; /* hd / 4 product vectors; hd <= 256 (checked by the caller) */
    const int64_t nv = hd / 4;
    for (int64_t i = 0; i < nv; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = q[4 * i + j] * k[4 * i + j];
    for (int64_t w = nv >> 1; w >= 1; w >>= 1)
        for (int64_t i = 0; i < w; i++)
            for (int j = 0; j < 4; j++) acc[i][j] = acc[i][j] + acc[i + w][j];
    return (((acc[0][0] + acc[0][1]) + acc[0][2]) + acc[0][3]) * scale;
}

static void attn_range(void *arg, int64_t begin, int64_t end) {
    const attn_ctx *c = (const attn_ctx *)arg;
    float *e = (float *)malloc((size_t)c->n * sizeof(float));
    if (e == NULL) return; /* the caller checked the allocation first (wfv_attention) */
    for (int64_t t = begin; t < end; t++) {
        const float *q = c->q + t * c->hd;
        float *s = c->scores + t * c->n, *o = c->out + t * c->hd;
        int64_t j = 0;
        if (c->kt != NULL)
            for (; j + c->simd->lanes <= c->n; j += c->simd->lanes)
                c->simd->scores(q, c->kt + j * c->hd, c->simd->lanes, c->hd, c->scale, s + j);
        for (; j < c->n; j++) s[j] = board_score(q, c->k + j * c->hd, c->hd, c->scale);
        float m = -INFINITY;
        for (j = 0; j < c->n; j++)
            if (s[j] > m) m = s[j];
        double total = 0.0;
        for (j = 0; j < c->n; j++) {
            e[j] = vision_expf(s[j] - m);
            total += (double)e[j];
        }
        const float inv = (float)(1.0 / total);
        /* every output element's chain runs over the keys ascending: whole vectors of elements
         * in the SIMD body, the rest here */
        const int64_t d0 =
            c->simd != NULL ? c->simd->weighted_sum(e, inv, c->v, c->n, c->hd, o) : 0;
        for (int64_t d = d0; d < c->hd; d++) o[d] = 0.0f;
        for (j = 0; d0 < c->hd && j < c->n; j++) {
            const float w = e[j] * inv;
            for (int64_t d = d0; d < c->hd; d++) o[d] = fmaf(w, c->v[j * c->hd + d], o[d]);
        }
    }
    free(e);
}

/* q, k, v [n, hd] of one head; out [n, hd]; scores [n, n] (scaled, before the softmax). */
int32_t wfv_attention(const float *q, const float *k, const float *v, int64_t n, int64_t hd,
                      float scale, float *out, float *scores, int32_t threads) {
    if (hd % 4 || hd > 256 || n < 1) return 1;
    float *probe = (float *)malloc((size_t)n * sizeof(float)); /* fail here, not in a worker */
    if (probe == NULL) return 2;
    free(probe);
    const wfv_simd *simd = wfv_simd_for(wf_isa());
    const int64_t lanes = simd != NULL ? simd->lanes : 1, whole = n - n % lanes;
    float *kt = simd != NULL && whole > 0 ? malloc(sizeof(float) * (size_t)(whole * hd))
                                          : NULL; /* NULL: every score in board_score */
    for (int64_t j = 0; kt != NULL && j < whole; j++) /* block j / W: hd vectors of W keys */
        for (int64_t d = 0; d < hd; d++)
            kt[(j - j % lanes) * hd + d * lanes + j % lanes] = k[j * hd + d];
    attn_ctx c = {q, k, v, n, hd, scale, out, scores, simd, kt};
    wf_parallel_for(n, threads, attn_range, &c);
    free(kt);
    return 0;
}

/* ---- spec/numerics.md §board-vision-mergers: F32 weights, a binary64 accumulator ------------ */

typedef struct {
    const float *x, *w, *b;
    int64_t k, rows;
    float *y;
    int64_t first;   /* rows before it were done in bv_dense8 */
    const wfv_simd *simd;
    const float *xg; /* the tokens' inputs in groups of WD, interleaved [groups, k, WD] */
    int64_t tokens;
} dense_ctx;

static void dense_range(void *arg, int64_t begin, int64_t end) {
    const dense_ctx *c = (const dense_ctx *)arg;
    for (int64_t t = begin; t < end; t++)
        for (int64_t r = c->first; r < c->rows; r++) {
            const float *x = c->x + t * c->k, *w = c->w + r * c->k;
            double acc = 0.0;
            for (int64_t i = 0; i < c->k; i++) acc += (double)x[i] * (double)w[i];
            c->y[t * c->rows + r] = (float)acc + c->b[r];
        }
}

/* Blocks of eight rows for every token group; a work item is a block of rows, whose weights
 * stay in the cache while the groups go by. */
static void dense_blocks(void *arg, int64_t begin, int64_t end) {
    const dense_ctx *c = (const dense_ctx *)arg;
    const int64_t wd = c->simd->dlanes, groups = (c->tokens + wd - 1) / wd;
    double acc[8 * 8]; /* WD <= 8 */
    for (int64_t blk = begin; blk < end; blk++)
        for (int64_t g = 0; g < groups; g++) {
            c->simd->dense8(c->xg + g * c->k * wd, c->w + 8 * blk * c->k, c->k, acc);
            for (int64_t r = 0; r < 8; r++)
                for (int64_t l = 0; l < wd && g * wd + l < c->tokens; l++)
                    c->y[(g * wd + l) * c->rows + 8 * blk + r] =
                        (float)acc[r * wd + l] + c->b[8 * blk + r];
        }
}

void wfv_dense_linear(const float *x, int64_t tokens, int64_t k, const float *w, int64_t rows,
                      const float *b, float *y, int32_t threads) {
    dense_ctx c = {x, w, b, k, rows, y, 0, wfv_simd_for(wf_isa()), NULL, tokens};
    if (c.simd != NULL && rows >= 8) {
        const int64_t wd = c.simd->dlanes, groups = (tokens + wd - 1) / wd;
        float *xg = calloc((size_t)(groups * k * wd), sizeof(float)); /* pad tokens: zeros */
        for (int64_t t = 0; xg != NULL && t < tokens; t++)
            for (int64_t i = 0; i < k; i++) xg[((t / wd) * k + i) * wd + t % wd] = x[t * k + i];
        if (xg != NULL) { /* NULL: every row below */
            c.xg = xg;
            wf_parallel_for(rows / 8, threads, dense_blocks, &c);
            c.first = rows - rows % 8;
        }
        free(xg);
    }
    if (c.first < rows) wf_parallel_for(tokens, threads, dense_range, &c);
}
