/* The forward pass's vector operations in the canonical order
 * (spec/numerics.md §lanes8-tree, §norms, §exp, §silu, §attention).
 *
 * Each function mirrors one function of ref/numerics: RMSNorm (spec/numerics.md §rmsnorm), the
 * binary32 exp over arrays (spec/numerics.md §exp; the scalar exp is scalar_ops.c's), SiLU
 * (spec/numerics.md §silu), softmax (spec/numerics.md §softmax) and one token's causal GQA
 * attention (spec/numerics.md §attention). They live in C because the spec/numerics.md §lanes8-tree
 * lane order of their sums, and the per-position loop of attention, cost a Python call per element
 * or per position in NumPy. Sums go through wf_dot_f32 / lanes_sum (spec/numerics.md §lanes8-tree);
 * every other operation is one IEEE binary32 operation, never fused (-ffp-contract=off).
 *
 * The plain C here is the portable path; the AVX2 (and AVX-512) and NEON paths take the SIMD forms
 * of ops_vec.c (spec/numerics.md §kernel-paths), which compute the same operations on the same
 * outputs.
 */
#include <math.h>
#include <string.h>

#include "ops_vec.h"
#include "wf_kernels.h"

/* The SIMD table of the path in use, NULL on the portable path. */
static inline const wf_vec_ops *vec(void) { return wf_vec_ops_for(wf_isa()); }

/* spec/numerics.md §lanes8-tree the canonical sum of n float32 terms. */
static float lanes_sum(const float *v, int64_t n) {
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + v[i];
    return wf_combine_lanes(l);
}

/* spec/numerics.md §rmsnorm for nrows vectors of length n: r = 1 / sqrt(ss / n + eps); out_i = (x_i
 * * r) * w_i. ss is the canonical sum of x_i * x_i, which is the spec/numerics.md §dot dot of x
 * with itself. */
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out) {
    const wf_vec_ops *ops = vec();
    if (ops != NULL) {
        ops->rmsnorm_rows(x, nrows, n, w, eps, out);
        return;
    }
    for (int64_t row = 0; row < nrows; row++) {
        const float *v = x + row * n;
        float ss = wf_dot_f32(v, v, n);
        float r = 1.0f / sqrtf(ss / (float)n + eps);
        for (int64_t i = 0; i < n; i++) out[row * n + i] = (v[i] * r) * w[i];
    }
}

/* spec/numerics.md §rmsnorm then §rotation for the q or k heads of T tokens: each head_dim vector
 * is RMS-normed with w (into `normed`) and rotated with its token's cos / sin rows [T, head_dim/2]
 * (into `rotated`): x'_j = x_j c_j - x_{j+h} s_j, x'_{j+h} = x_{j+h} c_j + x_j s_j, each product
 * and sum rounded once, as the element-wise NumPy the reference follows. */
void wf_norm_rope(const float *x, int64_t tokens, int64_t heads, int64_t head_dim, const float *w,
                  float eps, const float *cos, const float *sin, float *normed, float *rotated) {
    const int64_t h = head_dim / 2;
    const wf_vec_ops *ops = vec();
    wf_rmsnorm_rows(x, tokens * heads, head_dim, w, eps, normed);
    for (int64_t t = 0; t < tokens; t++) {
        const float *c = cos + t * h, *s = sin + t * h;
        for (int64_t k = 0; k < heads; k++) {
            const float *v = normed + (t * heads + k) * head_dim;
            float *o = rotated + (t * heads + k) * head_dim;
            if (ops != NULL) {
                ops->rotate(v, c, s, h, o);
                continue;
            }
            for (int64_t j = 0; j < h; j++) {
                o[j] = v[j] * c[j] - v[j + h] * s[j];
                o[j + h] = v[j + h] * c[j] + v[j] * s[j];
            }
        }
    }
}

/* spec/numerics.md §rmsnorm then §q8-activation steps 1-2 on the normed rows: the products that
 * read them (q/k/v, gate/up) get their quantized activations from the same call; `out` keeps the
 * normed rows for the trace. n is a multiple of WF_QK (the caller checks). */
void wf_rmsnorm_quantize(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                         float *out, int8_t *codes, float *scales) {
    wf_rmsnorm_rows(x, nrows, n, w, eps, out);
    wf_quantize_activation(out, nrows * n, codes, scales);
}

/* spec/numerics.md §exp element-wise over n floats, a vector at a time on a SIMD path: the lanes
 * swiglu and softmax use, open to a direct test against the reference's exp (swiglu's 1 + exp
 * hides exp's low bits). */
void wf_exp_array(const float *x, int64_t n, float *out) {
    const wf_vec_ops *ops = vec();
    int64_t i = ops != NULL ? ops->exp_array(x, n, out) : 0;
    for (; i < n; i++) out[i] = wf_exp(x[i]);
}

/* spec/numerics.md §silu swiglu: out_i = (g_i / (1 + exp(-g_i))) * u_i. */
void wf_swiglu(const float *g, const float *u, int64_t n, float *out) {
    const wf_vec_ops *ops = vec();
    int64_t i = ops != NULL ? ops->swiglu(g, u, n, out) : 0;
    for (; i < n; i++) out[i] = (g[i] / (1.0f + wf_exp(-g[i]))) * u[i];
}

/* spec/numerics.md §silu then §q8-activation steps 1-2: down_proj's quantized activations from the
 * same call as swiglu; `out` keeps the swiglu rows for the trace. n is a multiple of WF_QK (the
 * caller checks).
 */
void wf_swiglu_quantize(const float *g, const float *u, int64_t n, float *out, int8_t *codes,
                        float *scales) {
    wf_swiglu(g, u, n, out);
    wf_quantize_activation(out, n, codes, scales);
}

/* spec/numerics.md §softmax in place: p_i = exp(s_i - m) / S, S the canonical sum of the exps. */
static void softmax(float *s, int64_t n) {
    float m = wf_max_f32(s, n);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] - m;
    wf_exp_array(s, n, s);
    float total = lanes_sum(s, n);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] / total;
}

/* spec/numerics.md §attention for query head h of one token, plain C: scores = dot(q_h, k_j) * (1 /
 * sqrt(head_dim)) over cached positions j = 0..npos-1 of kv head h / (heads / kv_heads) (rows of
 * `stride` floats), softmax, then o = o + p_j * v_j over positions in order. `scores` holds npos
 * floats. */
static void attend_head_c(const float *q, const float *keys, const float *values, int64_t npos,
                          int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim,
                          int64_t h, float *scores, float *out) {
    const float scale = 1.0f / sqrtf((float)head_dim);
    const int64_t group = heads / kv_heads;
    const float *qh = q + h * head_dim;
    const int64_t kv = (h / group) * head_dim;
    float *o = out + h * head_dim;
    for (int64_t j = 0; j < npos; j++)
        scores[j] = wf_dot_f32(qh, keys + j * stride + kv, head_dim) * scale;
    softmax(scores, npos);
    for (int64_t i = 0; i < head_dim; i++) o[i] = 0.0f;
    for (int64_t j = 0; j < npos; j++) {
        const float *v = values + j * stride + kv;
        for (int64_t i = 0; i < head_dim; i++) o[i] = o[i] + scores[j] * v[i];
    }
}

/* spec/numerics.md §attention for the heads / kv_heads query heads of one token that read kv head
 * g: `scores` holds (heads / kv_heads) * npos floats. A SIMD path takes the group's queries
 * together against the cache (each query's scores, softmax and sums in their own order, so the
 * same bits as one head at a time); head_dim must then be a multiple of 8 (Qwen3's 128, the
 * Qwen3.5 vision tower's 72). */
void wf_attend_group(const float *q, const float *keys, const float *values, int64_t npos,
                     int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t g,
                     float *scores, float *out) {
    const wf_vec_ops *ops = vec();
    const int64_t group = heads / kv_heads;
    if (ops != NULL && head_dim % 8 == 0) {
        ops->attend_group(q, keys, values, npos, stride, heads, kv_heads, head_dim, g, scores,
                          out);
        return;
    }
    for (int64_t h = g * group; h < (g + 1) * group; h++)
        attend_head_c(q, keys, values, npos, stride, heads, kv_heads, head_dim, h, scores, out);
}

/* spec/numerics.md §attention for query head h of one token alone (the group form on a one-head
 * group would take its neighbours too): the plain C, or on a SIMD path the group kernel's one-query
 * form through a one-head view. */
void wf_attend_head(const float *q, const float *keys, const float *values, int64_t npos,
                    int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t h,
                    float *scores, float *out) {
    const wf_vec_ops *ops = vec();
    const int64_t group = heads / kv_heads;
    if (ops != NULL && head_dim % 8 == 0) { /* head h as the only query of kv head h / group */
        const int64_t g = h / group;
        ops->attend_group(q + (h - g) * head_dim, keys, values, npos, stride, kv_heads, kv_heads,
                          head_dim, g, scores, out + (h - g) * head_dim);
        return;
    }
    attend_head_c(q, keys, values, npos, stride, heads, kv_heads, head_dim, h, scores, out);
}

/* spec/numerics.md §attention one token, every query head (wf_attend_head for h = 0..heads-1):
 * `scores` holds npos floats, as it always has (the one-call forward, layers.c, takes whole
 * groups). */
void wf_attend(const float *q, const float *keys, const float *values, int64_t npos,
               int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, float *scores,
               float *out) {
    for (int64_t h = 0; h < heads; h++)
        wf_attend_head(q, keys, values, npos, stride, heads, kv_heads, head_dim, h, scores, out);
}

/* wf_attend on a cache that keeps each kv head's rows together: keys / values [kv_heads,
 * capacity, head_dim] (fast/qwen3/decoder.py FastKVCache, one layer). Each kv head's group of
 * query heads on its own rows, the same operations as wf_attend on interleaved rows. */
void wf_attend_planes(const float *q, const float *keys, const float *values, int64_t npos,
                      int64_t capacity, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      float *scores, float *out) {
    const int64_t group = heads / kv_heads, plane = capacity * head_dim;
    for (int64_t g = 0; g < kv_heads; g++)
        wf_attend(q + g * group * head_dim, keys + g * plane, values + g * plane, npos, head_dim,
                  group, 1, head_dim, scores, out + g * group * head_dim);
}
