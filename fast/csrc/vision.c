/* The Qwen3-VL vision tower's element-wise and per-image kernels (spec/numerics.md §vision).
 *
 * LayerNorm with a bias (spec/numerics.md §vision-layernorm), the two GELUs
 * (spec/numerics.md §vision-gelu) and bidirectional attention inside each image
 * (spec/numerics.md §vision-attention). They mirror ref/qwen3_vl/numerics.py and
 * ref/qwen3_vl/vision.py operation for operation; sums are the canonical 8-lane sums of
 * spec/numerics.md §lanes8-tree, every other step one IEEE binary32 operation (-ffp-contract=off).
 * Rows are independent, so any thread split gives the same bits.
 */
#include <math.h>
#include <stdlib.h>

#include "wf_kernels.h"

/* math.pi of ref/qwen3_vl/numerics.py: the binary64 nearest to π. */
#define WF_PI 3.14159265358979323846

/* spec/numerics.md §lanes8-tree: the canonical sum of x (lane i mod 8, ascending, then the fixed
 * tree). */
static float lanes_sum(const float *x, int64_t n) {
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES)
        for (int j = 0; j < WF_LANES; j++) l[j] = l[j] + x[i + j];
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + x[i];
    return wf_combine_lanes(l);
}

typedef struct {
    const float *x, *w, *b;
    float *out;
    int64_t n;
    float eps;
} layernorm_job;

/* spec/numerics.md §vision-layernorm mean = Σx ⊘ n; d = x ⊖ mean; var = Σ d⊗d ⊘ n;
 * r = 1 ⊘ sqrt(var ⊕ eps); out = ((d ⊗ r) ⊗ w) ⊕ b. `out` holds d while var is summed. */
static void layernorm_rows(void *ctx, int64_t begin, int64_t end) {
    const layernorm_job *j = ctx;
    const int64_t n = j->n;
    const float fn = (float)n;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        float *o = j->out + r * n;
        const float mean = lanes_sum(x, n) / fn;
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - mean;
        const float var = wf_dot_f32(o, o, n) / fn;
        const float rs = 1.0f / sqrtf(var + j->eps);
        for (int64_t i = 0; i < n; i++) o[i] = ((o[i] * rs) * j->w[i]) + j->b[i];
    }
}

void wf_layernorm_rows(const float *x, int64_t rows, int64_t n, const float *w, const float *b,
                       float eps, float *out, int32_t threads) {
    layernorm_job job = {x, w, b, out, n, eps};
    wf_parallel_for(rows, threads, layernorm_rows, &job);
}

/* spec/numerics.md §vision-gelu: the binary32 nearest to the binary64 estimate `c` when no binary32
 * rounding midpoint lies within guard·|c| of it (then the estimate's error, far below the guard,
 * cannot move the rounding); else *flag = 1 and the caller evaluates the real function exactly. */
static float round_guarded(double c, double guard, uint8_t *flag) {
    if (c == 0.0) return (float)c;
    const float f = (float)c;
    if (!isfinite(f)) {
        *flag = 1;
        return f;
    }
    const double down = (double)nextafterf(f, -INFINITY), up = (double)nextafterf(f, INFINITY);
    const double near_down = fabs(c - ((double)f + down) / 2.0);
    const double near_up = fabs(c - ((double)f + up) / 2.0);
    const double near = near_down < near_up ? near_down : near_up;
    if (!(near > guard * fabs(c))) *flag = 1;
    return f;
}

/* 0: gelu_tanh = x / (1 + e^(−2u)), u = √(2/π)(x + 0.044715x³) (no cancellation for x < 0);
 * 1: gelu_erf = ½x·erfc(−x/√2). Both in binary64, as ref/qwen3_vl/numerics.py estimates them
 * (x³ as two products rather than pow: a few binary64 ulps, far inside the guard, and pow was
 * the costliest step; the result is the correctly rounded value either way). */
static double gelu_estimate(double v, int32_t kind) {
    if (kind == 0) {
        const double u = sqrt(2.0 / WF_PI) * (v + 0.044715 * (v * v * v));
        const double e = -2.0 * u;
        return v / (1.0 + exp(e < 709.0 ? e : 709.0));
    }
    return 0.5 * v * erfc(-v / sqrt(2.0));
}

typedef struct {
    const float *x;
    float *out;
    uint8_t *flags;
    int32_t kind;
    double guard;
} gelu_job;

static void gelu_range(void *ctx, int64_t begin, int64_t end) {
    const gelu_job *j = ctx;
    for (int64_t i = begin; i < end; i++) {
        const float x = j->x[i];
        j->flags[i] = 0;
        if (x != x) {
            j->out[i] = x;
            continue;
        }
        j->out[i] = round_guarded(gelu_estimate((double)x, j->kind), j->guard, &j->flags[i]);
    }
}

/* GELU of n floats (kind 0 tanh, 1 erf); flags[i] = 1 where out[i] is only the binary64
 * estimate's rounding and must be replaced by the exact evaluation. Returns the flagged count. */
int64_t wf_gelu(const float *x, int64_t n, int32_t kind, double guard, float *out, uint8_t *flags,
                int32_t threads) {
    gelu_job job = {x, out, flags, kind, guard};
    wf_parallel_for(n, threads, gelu_range, &job);
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += flags[i];
    return count;
}

typedef struct {
    const float *q, *k, *v;
    float *out;
    const int64_t *seg_of; /* per token: the first row of its image */
    const int64_t *seg_len;
    int64_t width, heads, head_dim;
} attend_job;

static void attend_tokens(void *ctx, int64_t begin, int64_t end) {
    const attend_job *j = ctx;
    int64_t most = 0;
    for (int64_t t = begin; t < end; t++)
        if (j->seg_len[t] > most) most = j->seg_len[t];
    float *scores = malloc((size_t)(most > 0 ? most : 1) * sizeof(float));
    if (scores == NULL) abort(); /* a few kB; nothing sensible to return from a worker */
    /* head-major: one head's keys and values of an image (seg_len x head_dim floats each) stay in
     * cache over the range's tokens, instead of every head's being read again for each token;
     * each (token, head) output is the same call either way */
    const int64_t w = j->width;
    for (int64_t h = 0; h < j->heads; h++)
        for (int64_t t = begin; t < end; t++) {
            const int64_t s = j->seg_of[t];
            wf_attend_head(j->q + t * w, j->k + s * w, j->v + s * w, j->seg_len[t], w, j->heads,
                           j->heads, j->head_dim, h, scores, j->out + t * w);
        }
    free(scores);
}

/* spec/numerics.md §vision-attention: token t's heads attend to the seg_len[t] rows from seg_of[t]
 * of k and v (its image), all [tokens, width] with width = heads·head_dim;
 * spec/numerics.md §attention per head. */
void wf_attend_segments(const float *q, const float *k, const float *v, int64_t tokens,
                        int64_t heads, int64_t head_dim, const int64_t *seg_of,
                        const int64_t *seg_len, float *out, int32_t threads) {
    attend_job job = {q, k, v, out, seg_of, seg_len, heads * head_dim, heads, head_dim};
    wf_parallel_for(tokens, threads, attend_tokens, &job);
}
