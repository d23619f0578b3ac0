/* The routed experts of one Qwen3.5 MoE layer as one C call (spec/models.md §qwen35-ffn,
 * §qwen3-moe-forward): for each chosen expert, in ascending index, the tokens that chose it
 * (gathered) through its gate / up product set, SwiGLU and its down product, then the combine
 * out[t] ← out[t] ⊕ (w_t ⊗ y_t), element by element: the reference's order, as
 * fast/qwen35/ffn.py's Python loop did it one call at a time (same kernels, same bits;
 * tests/differential/test_qwen35_fast_eq_ref.py). Each expert's matrices are its own bound
 * product sets (an expert's rows of a stacked object are already segments read in place).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "qwen35_layer.h"
#include "wf_kernels.h"

void wf_swiglu(const float *g, const float *u, int64_t n, float *out); /* model_ops.c */

typedef struct {
    const wf_q35_products *const *gate_up, *const *down;
    const float *x;
    int64_t d;
    const int32_t *ids;
    const int64_t *start, *tok;
    float *y;          /* [Σ te, d]: expert list i's outputs from row start[i] */
    int32_t threads;   /* each expert's products: 1 when the experts share the pool */
    int64_t min_work;
    atomic_int failed; /* set by a range whose buffers could not be allocated */
} experts_job;

/* Expert lists [i0, i1): each one's tokens gathered, gate / up, SwiGLU, down into its rows of y. */
static void expert_range(void *arg, int64_t i0, int64_t i1) {
    experts_job *j = arg;
    const int64_t d = j->d;
    int64_t most = 0, f = 0, segs = 0;
    for (int64_t i = i0; i < i1; i++) {
        const wf_q35_products *gu = j->gate_up[j->ids[i]], *dn = j->down[j->ids[i]];
        most = j->start[i + 1] - j->start[i] > most ? j->start[i + 1] - j->start[i] : most;
        f = gu->width / 2 > f ? gu->width / 2 : f;
        segs = gu->count > segs ? gu->count : segs;
        segs = dn->count > segs ? dn->count : segs;
    }
    float *buf = malloc(sizeof(float) * (size_t)(most * (d + 3 * f) + 1));
    float **outs = malloc(sizeof(float *) * (size_t)(segs + 1));
    if (buf == NULL || outs == NULL) {
        free(buf), free(outs);
        atomic_store(&j->failed, 1);
        return;
    }
    float *xe = buf, *gu = xe + most * d, *sw = gu + 2 * most * f;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t te = j->start[i + 1] - j->start[i], *rows = j->tok + j->start[i];
        const int64_t fe = j->gate_up[j->ids[i]]->width / 2;
        for (int64_t t = 0; t < te; t++)
            memcpy(xe + t * d, j->x + rows[t] * d, sizeof(float) * (size_t)d);
        wf_q35_run_products(j->gate_up[j->ids[i]], xe, te, gu, outs, j->threads, j->min_work);
        wf_swiglu(gu, gu + te * fe, te * fe, sw);
        wf_q35_run_products(j->down[j->ids[i]], sw, te, j->y + j->start[i] * d, outs, j->threads,
                            j->min_work);
    }
    free(buf), free(outs);
}

/* out [T, d] (zeroed by the caller) = Σ over chosen experts, ascending, of w ⊗ expert(x).
 * Expert list i: expert ids[i] (its gate_up[ids[i]] set writes [te, f] of gate then of up, its
 * down[ids[i]] [te, d]), its tokens tok[start[i] .. start[i+1]) ascending, with weights wt[...].
 * The experts run on the pool, each on one thread (an expert's outputs are its own), when there
 * are at least as many as threads; else one by one, each product on the pool. The combine then
 * runs in the reference's order. Returns 0, or 1 when a buffer could not be allocated (out is
 * then NaN, so a failure cannot pass for a result). */
int32_t wf_q35_experts(const wf_q35_products *const *gate_up, const wf_q35_products *const *down,
                       const float *x, int64_t T, int64_t d, int32_t count, const int32_t *ids,
                       const int64_t *start, const int64_t *tok, const float *wt, float *out,
                       int32_t threads, int64_t min_work) {
    float *y = malloc(sizeof(float) * (size_t)(start[count] * d + 1));
    experts_job job = {gate_up, down, x, d, ids, start, tok, y, 1, min_work, 0};
    atomic_init(&job.failed, y == NULL);
    if (y != NULL) {
        int64_t work = 0; /* multiply-adds of all the chosen experts' products */
        for (int32_t i = 0; i < count; i++)
            work += (start[i + 1] - start[i]) * d * (gate_up[ids[i]]->width + down[ids[i]]->width);
        const int32_t th = wf_threads_for(threads, work, min_work);
        if (count >= th) {
            wf_parallel_for(count, th, expert_range, &job);
        } else {
            job.threads = th;
            expert_range(&job, 0, count);
        }
    }
    if (atomic_load(&job.failed)) {
        free(y);
        for (int64_t j = 0; j < T * d; j++) out[j] = NAN;
        return 1;
    }
    for (int32_t i = 0; i < count; i++) { /* out[t] ← out[t] ⊕ (w ⊗ y): two roundings */
        for (int64_t r = start[i]; r < start[i + 1]; r++) {
            float *o = out + tok[r] * d;
            const float *yr = y + r * d, w = wt[r];
            for (int64_t c = 0; c < d; c++) o[c] = o[c] + w * yr[c];
        }
    }
    free(y);
    return 0;
}
