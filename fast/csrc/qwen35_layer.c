/* The work of a Qwen3.5 layer between its input projections and its output projection, for the
 * T tokens of one sequence in one call: the Gated DeltaNet mixer's (spec/models.md §qwen35;
 * spec/numerics.md §gdn-conv, §silu, §gdn-l2norm, §softplus, §exp, §gdn-gates, §gated-rmsnorm)
 * and the gated full attention's (spec/models.md §qwen35-attention;
 * spec/numerics.md §rmsnorm, §rotation, §attention).
 *
 * fast/qwen35/ did these steps as a dozen NumPy passes and half a dozen small C calls a layer,
 * each with its allocations and ctypes marshalling, which at one token cost more than their
 * arithmetic. Here they run back to back on the same buffers, built from the existing blocks
 * (wf_gdn_conv, wf_exp_array, wf_softplus_array, wf_dot_f32, wf_gdn_steps, wf_rmsnorm_rows,
 * wf_swiglu, wf_attend_tokens), every element through the operations the NumPy steps applied,
 * in their order: the reference's bits
 * (tests/differential/test_qwen35_layer_mix_fast_eq_ref.py). The delta rule's value heads, the
 * attention's units and the per-token parts (convolution, SiLU, norms, rotation, gates) run on
 * the pool; each output is computed by the same operations wherever it runs
 * (spec/numerics.md §threads).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qwen35_layer.h"
#include "wf_kernels.h"

void wf_exp_array(const float *x, int64_t n, float *out);                          /* model_ops.c */
void wf_swiglu(const float *g, const float *u, int64_t n, float *out);            /* model_ops.c */
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out); /* model_ops.c */

/* The calling thread's work area of at least n floats, kept for the thread's life (a decode step
 * calls this 18 times: no malloc each time). NULL when out of memory. */
static float *work_area(int64_t n) {
    static _Thread_local float *buf;
    static _Thread_local int64_t cap;
    if (n > cap) {
        float *grown = malloc(sizeof(float) * (size_t)n);
        if (grown == NULL) return NULL;
        free(buf);
        buf = grown, cap = n;
    }
    return buf;
}

/* spec/numerics.md §silu in place on n floats: x / (1 + exp(−x)), e [n] scratch. */
static void silu_inplace(float *x, int64_t n, float *e) {
    for (int64_t i = 0; i < n; i++) e[i] = -x[i];
    wf_exp_array(e, n, e);
    for (int64_t i = 0; i < n; i++) x[i] = x[i] / (1.0f + e[i]);
}

/* spec/numerics.md §gdn-l2norm of every dk-slice of q|k in conv [T, C]: q [T, hk·dk] takes
 * (x_i · r) / sqrt(dk), k [T, hk·dk] takes x_i · r, r = 1 / sqrt(Σ x² + eps) (the canonical sum
 * of the rounded squares, which is wf_dot_f32 of the slice with itself). */
static void l2_heads(const wf_q35_gdn *L, const float *conv, int64_t T, float *q, float *k) {
    const int64_t C = 2 * L->hk * L->dk + L->hv * L->dv, kg = L->hk * L->dk, dk = L->dk;
    const float scale = sqrtf((float)dk); /* correctly rounded */
    for (int64_t t = 0; t < T; t++)
        for (int64_t part = 0; part < 2; part++)
            for (int64_t h = 0; h < L->hk; h++) {
                const float *x = conv + t * C + part * kg + h * dk;
                float *o = (part == 0 ? q : k) + t * kg + h * dk;
                const float r = 1.0f / sqrtf(wf_dot_f32(x, x, dk) + L->l2_eps);
                for (int64_t i = 0; i < dk; i++)
                    o[i] = part == 0 ? (x[i] * r) / scale : x[i] * r;
            }
}

/* beta = sigmoid(b) = 1 / (1 + exp(−b)); g = −(exp(A_log) · softplus(a + dt_bias)); decay =
 * exp(g) (spec/models.md §qwen35, spec/numerics.md §softplus), a and b rows of proj (stride ld);
 * e [T · hv] scratch. */
static void gates(const wf_q35_gdn *L, const float *a, const float *b, int64_t ld, int64_t T,
                  float *beta, float *g, float *decay, float *e) {
    const int64_t hv = L->hv, n = T * hv;
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < hv; h++) {
            decay[t * hv + h] = a[t * ld + h] + L->dt_bias[h];
            beta[t * hv + h] = -b[t * ld + h];
        }
    wf_softplus_array(decay, n, e); /* not in place: it reads its input again */
    for (int64_t i = 0; i < n; i++) g[i] = -(L->a_exp[i % hv] * e[i]);
    wf_exp_array(beta, n, beta);
    for (int64_t i = 0; i < n; i++) beta[i] = 1.0f / (1.0f + beta[i]);
    wf_exp_array(g, n, decay);
}

/* The per-token parts of wf_q35_gdn_mix, for tokens [t0, t1) (on the pool: every token's
 * outputs are computed by the same operations wherever it runs, spec/numerics.md §threads). */
typedef struct {
    const wf_q35_gdn *L;
    const float *seq, *proj;
    int64_t ld, C;
    float *conv, *q, *k, *tmp, *core, *normed;
} gdn_tokens_job;

/* spec/numerics.md §gdn-conv tap sums, SiLU, then spec/numerics.md §gdn-l2norm of q and k. */
static void conv_tokens(void *arg, int64_t t0, int64_t t1) {
    const gdn_tokens_job *j = arg;
    const int64_t C = j->C, kg = j->L->hk * j->L->dk;
    wf_gdn_conv(j->seq + t0 * C, j->L->conv_w, t1 - t0, C, j->L->kernel, j->conv + t0 * C);
    silu_inplace(j->conv + t0 * C, (t1 - t0) * C, j->tmp + t0 * C);
    l2_heads(j->L, j->conv + t0 * C, t1 - t0, j->q + t0 * kg, j->k + t0 * kg);
}

/* spec/numerics.md §gated-rmsnorm per value head: RMSNorm(core) · w, then · silu(z). */
static void norm_tokens(void *arg, int64_t t0, int64_t t1) {
    const gdn_tokens_job *j = arg;
    const int64_t hv = j->L->hv, dv = j->L->dv, vd = hv * dv;
    wf_rmsnorm_rows(j->core + t0 * vd, (t1 - t0) * hv, dv, j->L->norm_w, j->L->eps,
                    j->tmp + t0 * vd);
    for (int64_t t = t0; t < t1; t++)
        wf_swiglu(j->proj + t * j->ld + j->C, j->tmp + t * vd, vd, j->normed + t * vd);
}

/* T tokens of one sequence, from the rows of proj [T, ld] (q|k|v [C], z [hv · dv], a [hv],
 * b [hv], end to end) to the gated norm. out receives, end to end: conv [T, C] (after SiLU),
 * q and k [T, hk · dk], beta and g [T, hv], core [T, hv · dv], normed [T, hv · dv]. window
 * [kernel − 1, C] (the last inputs before the call) and states [hv, dk, dv] are advanced.
 * `threads` run the delta rule's value heads, `token_threads` the per-token parts (the caller's
 * wf_threads_for of each one's work). Returns 0, or 1 when out of memory (then nothing was
 * changed). */
int32_t wf_q35_gdn_mix(const wf_q35_gdn *L, const float *proj, int64_t ld, int64_t T,
                       float *window, float *states, float *out, int32_t threads,
                       int32_t token_threads) {
    const int64_t hv = L->hv, dv = L->dv, kg = L->hk * L->dk, vd = hv * dv;
    const int64_t C = 2 * kg + vd, keep = L->kernel - 1;
    float *seq = work_area((keep + T) * C + T * C + T * vd + T * hv + 1);
    if (seq == NULL) return 1;
    float *tmp = seq + (keep + T) * C, *v = tmp + T * C, *decay = v + T * vd;
    float *conv = out, *q = conv + T * C, *k = q + T * kg, *beta = k + T * kg, *g = beta + T * hv;
    float *core = g + T * hv, *normed = core + T * vd;
    gdn_tokens_job job = {L, seq, proj, ld, C, conv, q, k, tmp, core, normed};
    /* spec/numerics.md §gdn-conv: the window then the call's inputs, oldest first */
    memcpy(seq, window, sizeof(float) * (size_t)(keep * C));
    for (int64_t t = 0; t < T; t++)
        memcpy(seq + (keep + t) * C, proj + t * ld, sizeof(float) * (size_t)C);
    wf_parallel_for(T, token_threads, conv_tokens, &job);
    gates(L, proj + C + vd, proj + C + vd + hv, ld, T, beta, g, decay, tmp);
    for (int64_t t = 0; t < T; t++)
        memcpy(v + t * vd, conv + t * C + 2 * kg, sizeof(float) * (size_t)vd);
    if (wf_gdn_steps(states, q, k, v, decay, beta, T, hv, L->hk, L->dk, dv, core, threads))
        return 1;
    memcpy(window, seq + T * C, sizeof(float) * (size_t)(keep * C)); /* the last keep inputs */
    wf_parallel_for(T, token_threads, norm_tokens, &job);
    return 0;
}

/* spec/numerics.md §rmsnorm per head then spec/numerics.md §rotation on the first 2 · rh dims
 * of every head (the rest passed through): x'_j = x_j c_j − x_{j+rh} s_j,
 * x'_{j+rh} = x_{j+rh} c_j + x_j s_j, as fast/qwen35/ops.py rope_half (each product and sum
 * rounded once). */
static void norm_rotate(const wf_q35_attention *L, const float *x, int64_t heads, const float *w,
                        const float *c, const float *s, float *normed, float *rotated) {
    const int64_t hd = L->head_dim, rh = L->rot_half;
    wf_rmsnorm_rows(x, heads, hd, w, L->eps, normed);
    memcpy(rotated, normed, sizeof(float) * (size_t)(heads * hd));
    for (int64_t k = 0; k < heads; k++) {
        const float *v = normed + k * hd;
        float *o = rotated + k * hd;
        for (int64_t j = 0; j < rh; j++) {
            o[j] = v[j] * c[j] - v[j + rh] * s[j];
            o[j + rh] = v[j + rh] * c[j] + v[j] * s[j];
        }
    }
}

/* The per-token parts of wf_q35_attention_mix, for tokens [t0, t1) (on the pool). */
typedef struct {
    const wf_q35_attention *L;
    const float *proj, *cos, *sin;
    int64_t ld;
    float *keys, *values;
    const int64_t *slots;
    float *out;
    int64_t T;
} attention_tokens_job;

/* q_norm / k_norm and the rotation; K (rotated) and V into rows slots[t] of the cache. */
static void rotate_tokens(void *arg, int64_t t0, int64_t t1) {
    const attention_tokens_job *j = arg;
    const wf_q35_attention *L = j->L;
    const int64_t hd = L->head_dim, qd = L->heads * hd, kvd = L->kv_heads * hd, T = j->T;
    float *qn = j->out, *kn = qn + T * qd, *qr = kn + T * kvd, *kr = qr + T * qd;
    for (int64_t t = t0; t < t1; t++) {
        const float *row = j->proj + t * j->ld;
        const float *c = j->cos + t * L->rot_half, *s = j->sin + t * L->rot_half;
        norm_rotate(L, row, L->heads, L->q_norm, c, s, qn + t * qd, qr + t * qd);
        norm_rotate(L, row + 2 * qd, L->kv_heads, L->k_norm, c, s, kn + t * kvd, kr + t * kvd);
        memcpy(j->keys + j->slots[t] * kvd, kr + t * kvd, sizeof(float) * (size_t)kvd);
        memcpy(j->values + j->slots[t] * kvd, row + 2 * qd + kvd, sizeof(float) * (size_t)kvd);
    }
}

/* att · sigmoid(gate), sigmoid(g) = 1 / (1 + exp(−g)) (spec/numerics.md §silu). */
static void gate_tokens(void *arg, int64_t t0, int64_t t1) {
    const attention_tokens_job *j = arg;
    const int64_t qd = j->L->heads * j->L->head_dim, kvd = j->L->kv_heads * j->L->head_dim;
    const float *att = j->out + j->T * (2 * qd + 2 * kvd);
    float *gated = j->out + j->T * (3 * qd + 2 * kvd);
    for (int64_t t = t0; t < t1; t++) {
        const float *g = j->proj + t * j->ld + qd;
        float *o = gated + t * qd;
        for (int64_t i = 0; i < qd; i++) o[i] = -g[i];
        wf_exp_array(o, qd, o);
        for (int64_t i = 0; i < qd; i++) o[i] = att[t * qd + i] * (1.0f / (1.0f + o[i]));
    }
}

/* T tokens of one sequence, from the rows of proj [T, ld] (q [qd], gate [qd], k [kvd], v [kvd],
 * end to end) to the gated attention: q_norm / k_norm and the partial rotation with each
 * token's cos / sin rows [T, rot_half]; K (rotated) and V into rows slots[t] of keys / values
 * [capacity, kvd]; token t attending rows 0 .. slots[t] (wf_attend_tokens on `threads`); then
 * att · sigmoid(gate). out receives, end to end: qn [T, qd], kn [T, kvd], qr [T, qd],
 * kr [T, kvd], att [T, qd], gated [T, qd]. `token_threads` run the per-token parts. */
void wf_q35_attention_mix(const wf_q35_attention *L, const float *proj, int64_t ld, int64_t T,
                          const float *cos, const float *sin, float *keys, float *values,
                          const int64_t *slots, float *out, int32_t threads,
                          int32_t token_threads) {
    const int64_t hd = L->head_dim, qd = L->heads * hd, kvd = L->kv_heads * hd;
    attention_tokens_job job = {L, proj, cos, sin, ld, keys, values, slots, out, T};
    wf_parallel_for(T, token_threads, rotate_tokens, &job);
    float *qr = out + T * (qd + kvd), *att = out + T * (2 * qd + 2 * kvd);
    wf_attend_tokens(qr, qd, keys, values, kvd, slots, T, L->heads, L->kv_heads, hd, att, threads);
    wf_parallel_for(T, token_threads, gate_tokens, &job);
}
