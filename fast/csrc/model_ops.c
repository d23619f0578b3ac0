/* The forward pass's vector operations in the canonical order (spec/numerics.md §3, §5-§7, §9).
 *
 * Each function mirrors one function of ref/numerics: RMSNorm (spec/numerics.md §5.1), the binary32
 * exp (spec/numerics.md §6), SiLU (spec/numerics.md §7), softmax (spec/numerics.md §5.2) and one
 * token's causal GQA attention (spec/numerics.md §9). They live in C because the
 * spec/numerics.md §3 lane order of their sums, and the per-position loop of attention, cost a
 * Python call per element or per position in NumPy. Sums go through wf_dot_f32 / lanes_sum
 * (spec/numerics.md §3); every other operation is one IEEE binary32 operation, never fused
 * (-ffp-contract=off).
 */
#include <math.h>
#include <string.h>

#include "wf_kernels.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* SSE2 is baseline x86-64, so its forms are compiled in; a forced portable path
 * (spec/numerics.md §15.1) still runs the plain C loops, which give the same bits. */
static inline int simd(void) { return wf_isa() != WF_ISA_PORTABLE; }

static float f32_of(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* spec/numerics.md §3 the canonical sum of n float32 terms. */
static float lanes_sum(const float *v, int64_t n) {
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + v[i];
    return wf_combine_lanes(l);
}

/* spec/numerics.md §5.1 for nrows vectors of length n: r = 1 / sqrt(ss / n + eps); out_i = (x_i *
 * r) * w_i. ss is the canonical sum of x_i * x_i, which is the spec/numerics.md §3.3 dot of x with
 * itself. */
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out) {
    for (int64_t row = 0; row < nrows; row++) {
        const float *v = x + row * n;
        float ss = wf_dot_f32(v, v, n);
        float r = 1.0f / sqrtf(ss / (float)n + eps);
        for (int64_t i = 0; i < n; i++) out[row * n + i] = (v[i] * r) * w[i];
    }
}

/* spec/numerics.md §5.1 then §8.4 for the q or k heads of T tokens: each head_dim vector is
 * RMS-normed with w (into `normed`) and rotated with its token's cos / sin rows [T, head_dim/2]
 * (into `rotated`): x'_j = x_j c_j - x_{j+h} s_j, x'_{j+h} = x_{j+h} c_j + x_j s_j, each product
 * and sum rounded once, as the element-wise NumPy the reference follows. */
void wf_norm_rope(const float *x, int64_t tokens, int64_t heads, int64_t head_dim, const float *w,
                  float eps, const float *cos, const float *sin, float *normed, float *rotated) {
    const int64_t h = head_dim / 2;
    wf_rmsnorm_rows(x, tokens * heads, head_dim, w, eps, normed);
    for (int64_t t = 0; t < tokens; t++) {
        const float *c = cos + t * h, *s = sin + t * h;
        for (int64_t k = 0; k < heads; k++) {
            const float *v = normed + (t * heads + k) * head_dim;
            float *o = rotated + (t * heads + k) * head_dim;
            for (int64_t j = 0; j < h; j++) {
                o[j] = v[j] * c[j] - v[j + h] * s[j];
                o[j + h] = v[j + h] * c[j] + v[j] * s[j];
            }
        }
    }
}

/* spec/numerics.md §5.1 then §4.1 steps 1-2 on the normed rows: the products that read them (q/k/v,
 * gate/up) get their quantized activations from the same call; `out` keeps the normed rows for the
 * trace. n is a multiple of WF_QK (the caller checks). */
void wf_rmsnorm_quantize(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                         float *out, int8_t *codes, float *scales) {
    wf_rmsnorm_rows(x, nrows, n, w, eps, out);
    wf_quantize_activation(out, nrows * n, codes, scales);
}

/* 2^k for an integer-valued k in [-126, 127], from the exponent bits. */
static float pow2(float k) { return f32_of((uint32_t)((int32_t)k + 127) << 23); }

/* spec/numerics.md §6 Cody-Waite reduction, degree-7 Taylor by Horner, exact scaling by two powers
 * of two; the constants are the bit patterns of spec/numerics/constants.py. */
float wf_exp(float x) {
    const float log2e = f32_of(0x3FB8AA3Bu), ln2_hi = f32_of(0x3F317200u),
                ln2_lo = f32_of(0x35BFBE8Eu), x_max = f32_of(0x42B17217u),
                x_min = f32_of(0xC2CFF1B4u);
    static const uint32_t poly[6] = {0x39500D01u, 0x3AB60B61u, 0x3C088889u,
                                     0x3D2AAAABu, 0x3E2AAAABu, 0x3F000000u};
    if (x != x) return x + x; /* NaN in, the same NaN (quieted) out, as NumPy's maximum gives */
    if (x > x_max) return INFINITY;
    if (x < x_min) return 0.0f;
    float k = rintf(x * log2e);
    float hi = x - k * ln2_hi, lo = k * ln2_lo;
    float r = hi - lo;
    float c = (hi - r) - lo;
    float q = f32_of(poly[0]);
    for (int i = 1; i < 6; i++) q = q * r + f32_of(poly[i]);
    float y = 1.0f + (r + (c + (r * r) * q));
    float a = k > 127.0f ? 127.0f : (k < -126.0f ? k + 64.0f : k);
    float b = k > 127.0f ? k - 127.0f : (k < -126.0f ? -64.0f : 0.0f);
    return (y * pow2(a)) * pow2(b);
}

#if defined(__SSE2__)
/* spec/numerics.md §6 on four lanes: wf_exp's binary32 operations in its order, on the
 * spec/numerics.md §6 step 1 clamped input (as ref/numerics/exp.py), the out-of-range and NaN lanes
 * replaced at the end. rintf becomes (t + 1.5·2^23) - 1.5·2^23, which rounds to the nearest
 * integer, ties to even, exactly as rintf for |t| < 2^22 (here |t| <= 151); only the sign of a zero
 * k can differ, and a zero k gives y = 1 + (±0) = 1 and the factors 2^0 either way. SSE2 has no
 * rounding instruction, hence the shift; without this the exps of swiglu run one by one. */
static inline __m128 exp4(__m128 x) {
    const __m128 log2e = _mm_castsi128_ps(_mm_set1_epi32(0x3FB8AA3B)),
                 ln2_hi = _mm_castsi128_ps(_mm_set1_epi32(0x3F317200)),
                 ln2_lo = _mm_castsi128_ps(_mm_set1_epi32(0x35BFBE8E)),
                 x_max = _mm_castsi128_ps(_mm_set1_epi32(0x42B17217)),
                 x_min = _mm_castsi128_ps(_mm_set1_epi32((int32_t)0xC2CFF1B4u)),
                 shift = _mm_set1_ps(12582912.0f), one = _mm_set1_ps(1.0f);
    static const uint32_t poly[6] = {0x39500D01u, 0x3AB60B61u, 0x3C088889u,
                                     0x3D2AAAABu, 0x3E2AAAABu, 0x3F000000u};
    __m128 xc = _mm_min_ps(x_max, _mm_max_ps(x_min, x)); /* a NaN x passes through */
    __m128 k = _mm_sub_ps(_mm_add_ps(_mm_mul_ps(xc, log2e), shift), shift);
    __m128 hi = _mm_sub_ps(xc, _mm_mul_ps(k, ln2_hi)), lo = _mm_mul_ps(k, ln2_lo);
    __m128 r = _mm_sub_ps(hi, lo);
    __m128 c = _mm_sub_ps(_mm_sub_ps(hi, r), lo);
    __m128 q = _mm_castsi128_ps(_mm_set1_epi32((int32_t)poly[0]));
    for (int i = 1; i < 6; i++)
        q = _mm_add_ps(_mm_mul_ps(q, r), _mm_castsi128_ps(_mm_set1_epi32((int32_t)poly[i])));
    __m128 y = _mm_add_ps(one, _mm_add_ps(r, _mm_add_ps(c, _mm_mul_ps(_mm_mul_ps(r, r), q))));
    /* a = k > 127 ? 127 : (k < -126 ? k + 64 : k); b = k > 127 ? k - 127 : (k < -126 ? -64 : 0) */
    const __m128 c127 = _mm_set1_ps(127.0f), cm126 = _mm_set1_ps(-126.0f);
    __m128 big = _mm_cmpgt_ps(k, c127), small = _mm_cmplt_ps(k, cm126);
    __m128 a = _mm_or_ps(_mm_and_ps(small, _mm_add_ps(k, _mm_set1_ps(64.0f))),
                         _mm_andnot_ps(small, k));
    a = _mm_or_ps(_mm_and_ps(big, c127), _mm_andnot_ps(big, a));
    __m128 b = _mm_and_ps(small, _mm_set1_ps(-64.0f));
    b = _mm_or_ps(_mm_and_ps(big, _mm_sub_ps(k, c127)), _mm_andnot_ps(big, b));
    const __m128i bias = _mm_set1_epi32(127);
    __m128 pa = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(a), bias), 23));
    __m128 pb = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(_mm_cvttps_epi32(b), bias), 23));
    y = _mm_mul_ps(_mm_mul_ps(y, pa), pb);
    __m128 over = _mm_cmpgt_ps(x, x_max), under = _mm_cmplt_ps(x, x_min);
    y = _mm_or_ps(_mm_and_ps(over, _mm_set1_ps(INFINITY)), _mm_andnot_ps(over, y));
    y = _mm_andnot_ps(under, y);
    __m128 nan = _mm_cmpunord_ps(x, x);
    return _mm_or_ps(_mm_and_ps(nan, _mm_add_ps(x, x)), _mm_andnot_ps(nan, y));
}
#endif

/* spec/numerics.md §6 element-wise over n floats, four lanes at a time where SSE2 is: the lanes
 * swiglu uses, open to a direct test against the reference's exp (swiglu's 1 + exp hides exp's low
 * bits). */
void wf_exp_array(const float *x, int64_t n, float *out) {
    int64_t i = 0;
#if defined(__SSE2__)
    if (simd())
        for (; i + 4 <= n; i += 4) _mm_storeu_ps(out + i, exp4(_mm_loadu_ps(x + i)));
#endif
    for (; i < n; i++) out[i] = wf_exp(x[i]);
}

/* spec/numerics.md §7 swiglu: out_i = (g_i / (1 + exp(-g_i))) * u_i. */
void wf_swiglu(const float *g, const float *u, int64_t n, float *out) {
    int64_t i = 0;
#if defined(__SSE2__)
    const __m128 sign = _mm_set1_ps(-0.0f), one = _mm_set1_ps(1.0f);
    const int64_t vec_end = simd() ? n : 0;
    for (; i + 8 <= vec_end; i += 8) { /* two independent chains: exp4 is latency-bound */
        __m128 g0 = _mm_loadu_ps(g + i), g1 = _mm_loadu_ps(g + i + 4);
        __m128 e0 = exp4(_mm_xor_ps(g0, sign)), e1 = exp4(_mm_xor_ps(g1, sign));
        _mm_storeu_ps(out + i, _mm_mul_ps(_mm_div_ps(g0, _mm_add_ps(one, e0)), _mm_loadu_ps(u + i)));
        _mm_storeu_ps(out + i + 4,
                      _mm_mul_ps(_mm_div_ps(g1, _mm_add_ps(one, e1)), _mm_loadu_ps(u + i + 4)));
    }
    for (; i + 4 <= vec_end; i += 4) {
        __m128 gi = _mm_loadu_ps(g + i);
        __m128 e = exp4(_mm_xor_ps(gi, sign)); /* -g: a sign flip, as C's unary minus */
        _mm_storeu_ps(out + i, _mm_mul_ps(_mm_div_ps(gi, _mm_add_ps(one, e)), _mm_loadu_ps(u + i)));
    }
#endif
    for (; i < n; i++) out[i] = (g[i] / (1.0f + wf_exp(-g[i]))) * u[i];
}

/* spec/numerics.md §7 then §4.1 steps 1-2: down_proj's quantized activations from the same call as
 * swiglu; `out` keeps the swiglu rows for the trace. n is a multiple of WF_QK (the caller checks).
 */
void wf_swiglu_quantize(const float *g, const float *u, int64_t n, float *out, int8_t *codes,
                        float *scales) {
    wf_swiglu(g, u, n, out);
    wf_quantize_activation(out, n, codes, scales);
}

/* spec/numerics.md §5.2 maximum: the first NaN if any, else the first largest value. */
static float max_f32(const float *v, int64_t n) {
    float best = v[0];
    if (best != best) return best;
    for (int64_t i = 1; i < n; i++) {
        if (v[i] != v[i]) return v[i];
        if (v[i] > best) best = v[i];
    }
    return best;
}

/* spec/numerics.md §5.2 in place: p_i = exp(s_i - m) / S, S the canonical sum of the exps. */
static void softmax(float *s, int64_t n) {
    float m = max_f32(s, n);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] - m;
    wf_exp_array(s, n, s);
    float total = lanes_sum(s, n);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] / total;
}

#if defined(__SSE2__)
/* spec/numerics.md §3.3 dot for n % 8 == 0: lanes 0-3 and 4-7 of the canonical eight in two
 * registers (element i to lane i mod 8, ascending i, from +0.0), combined by the
 * spec/numerics.md §3.2 tree as wf_dot_f32 does. */
static inline float dot8(const float *a, const float *b, int64_t n) {
    __m128 lo = _mm_setzero_ps(), hi = _mm_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
        lo = _mm_add_ps(lo, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
        hi = _mm_add_ps(hi, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
    }
    float l[WF_LANES];
    _mm_storeu_ps(l, lo);
    _mm_storeu_ps(l + 4, hi);
    return wf_combine_lanes(l);
}

/* Four spec/numerics.md §3.3 dots of q with the rows k0..k3 at once (independent chains hide the
 * add latency); each is exactly dot8(q, k_r, n). */
static void dot8x4(const float *q, const float *k0, const float *k1, const float *k2,
                   const float *k3, int64_t n, float *out) {
    __m128 lo0 = _mm_setzero_ps(), hi0 = lo0, lo1 = lo0, hi1 = lo0, lo2 = lo0, hi2 = lo0,
           lo3 = lo0, hi3 = lo0;
    for (int64_t i = 0; i < n; i += 8) {
        const __m128 a = _mm_loadu_ps(q + i), b = _mm_loadu_ps(q + i + 4);
        lo0 = _mm_add_ps(lo0, _mm_mul_ps(a, _mm_loadu_ps(k0 + i)));
        hi0 = _mm_add_ps(hi0, _mm_mul_ps(b, _mm_loadu_ps(k0 + i + 4)));
        lo1 = _mm_add_ps(lo1, _mm_mul_ps(a, _mm_loadu_ps(k1 + i)));
        hi1 = _mm_add_ps(hi1, _mm_mul_ps(b, _mm_loadu_ps(k1 + i + 4)));
        lo2 = _mm_add_ps(lo2, _mm_mul_ps(a, _mm_loadu_ps(k2 + i)));
        hi2 = _mm_add_ps(hi2, _mm_mul_ps(b, _mm_loadu_ps(k2 + i + 4)));
        lo3 = _mm_add_ps(lo3, _mm_mul_ps(a, _mm_loadu_ps(k3 + i)));
        hi3 = _mm_add_ps(hi3, _mm_mul_ps(b, _mm_loadu_ps(k3 + i + 4)));
    }
    float l[4][WF_LANES];
    _mm_storeu_ps(l[0], lo0), _mm_storeu_ps(l[0] + 4, hi0);
    _mm_storeu_ps(l[1], lo1), _mm_storeu_ps(l[1] + 4, hi1);
    _mm_storeu_ps(l[2], lo2), _mm_storeu_ps(l[2] + 4, hi2);
    _mm_storeu_ps(l[3], lo3), _mm_storeu_ps(l[3] + 4, hi3);
    for (int r = 0; r < 4; r++) out[r] = wf_combine_lanes(l[r]);
}

/* o_i = o_i + p_j * v_j,i over j = 0..npos-1 in order, from o = +0, for head_dim % 32 == 0: 32
 * outputs stay in registers across the positions (each element's additions keep their order). */
static void weigh_values(const float *p, const float *values, int64_t npos, int64_t stride,
                         int64_t head_dim, float *o) {
    for (int64_t i = 0; i < head_dim; i += 32) {
        __m128 acc[8];
        for (int r = 0; r < 8; r++) acc[r] = _mm_setzero_ps();
        for (int64_t j = 0; j < npos; j++) {
            const float *v = values + j * stride + i;
            const __m128 pj = _mm_set1_ps(p[j]);
            for (int r = 0; r < 8; r++)
                acc[r] = _mm_add_ps(acc[r], _mm_mul_ps(pj, _mm_loadu_ps(v + 4 * r)));
        }
        for (int r = 0; r < 8; r++) _mm_storeu_ps(o + i + 4 * r, acc[r]);
    }
}
#endif

/* spec/numerics.md §9 for query head h of one token: scores = dot(q_h, k_j) * (1 / sqrt(head_dim))
 * over cached positions j = 0..npos-1 of kv head h / (heads / kv_heads) (rows of `stride`
 * floats), softmax, then o = o + p_j * v_j over positions in order. `scores` holds npos floats. */
void wf_attend_head(const float *q, const float *keys, const float *values, int64_t npos,
                    int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t h,
                    float *scores, float *out) {
    const float scale = 1.0f / sqrtf((float)head_dim);
    const int64_t group = heads / kv_heads;
    const float *qh = q + h * head_dim;
    const int64_t kv = (h / group) * head_dim;
    float *o = out + h * head_dim;
#if defined(__SSE2__)
    if (head_dim % 32 == 0 && simd()) { /* Qwen3's 128 */
        const float *k = keys + kv;
        int64_t j = 0;
        for (; j + 4 <= npos; j += 4) {
            dot8x4(qh, k + j * stride, k + (j + 1) * stride, k + (j + 2) * stride,
                   k + (j + 3) * stride, head_dim, scores + j);
            for (int r = 0; r < 4; r++) scores[j + r] = scores[j + r] * scale;
        }
        for (; j < npos; j++) scores[j] = dot8(qh, k + j * stride, head_dim) * scale;
        softmax(scores, npos);
        weigh_values(scores, values + kv, npos, stride, head_dim, o);
        return;
    }
#endif
    for (int64_t j = 0; j < npos; j++)
        scores[j] = wf_dot_f32(qh, keys + j * stride + kv, head_dim) * scale;
    softmax(scores, npos);
    for (int64_t i = 0; i < head_dim; i++) o[i] = 0.0f;
    for (int64_t j = 0; j < npos; j++) {
        const float *v = values + j * stride + kv;
        for (int64_t i = 0; i < head_dim; i++) o[i] = o[i] + scores[j] * v[i];
    }
}

/* spec/numerics.md §9 one token, every query head (wf_attend_head for h = 0..heads-1). */
void wf_attend(const float *q, const float *keys, const float *values, int64_t npos,
               int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, float *scores,
               float *out) {
    for (int64_t h = 0; h < heads; h++)
        wf_attend_head(q, keys, values, npos, stride, heads, kv_heads, head_dim, h, scores, out);
}
