/* The routed experts of one Qwen3.5 MoE layer as one C call (spec/models.md §qwen35-ffn;
 * spec/models.md §qwen3-moe-forward): for each chosen expert, in ascending index, the tokens that
 * chose it (gathered) through its gate / up product set, SwiGLU and its down product, then the
 * combine out[t] ← out[t] ⊕ (w_t ⊗ y_t), element by element: the reference's order, as
 * fast/qwen35/ffn.py's Python loop does it one call at a time (same kernels, same bits;
 * tests/differential/test_qwen35_fast_eq_ref.py). Each expert's matrices are its own bound
 * product sets (an expert's rows of a stacked object are already segments read in place).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qwen35_layer.h"
#include "wf_kernels.h"

void wf_swiglu(const float *g, const float *u, int64_t n, float *out); /* model_ops.c */

/* out [T, d] (zeroed by the caller) = Σ over chosen experts, ascending, of w ⊗ expert(x).
 * Expert list i: expert ids[i] (its gate_up[ids[i]] set writes [te, f] of gate then of up, its
 * down[ids[i]] [te, d]), its tokens tok[start[i] .. start[i+1]) ascending, with weights wt[...].
 * Returns 0, or 1 when a buffer could not be allocated (out is then NaN, so a failure cannot
 * pass for a result). */
int32_t wf_q35_experts(const wf_q35_products *const *gate_up, const wf_q35_products *const *down,
                       const float *x, int64_t T, int64_t d, int32_t count, const int32_t *ids,
                       const int64_t *start, const int64_t *tok, const float *wt, float *out,
                       int32_t threads, int64_t min_work) {
    int64_t most = 0, f = 0, segs = 0;
    for (int32_t i = 0; i < count; i++) {
        const wf_q35_products *gu = gate_up[ids[i]], *dn = down[ids[i]];
        most = start[i + 1] - start[i] > most ? start[i + 1] - start[i] : most;
        f = gu->width / 2 > f ? gu->width / 2 : f;
        segs = gu->count > segs ? gu->count : segs;
        segs = dn->count > segs ? dn->count : segs;
    }
    float *buf = malloc(sizeof(float) * (size_t)(most * (3 * f + 2 * d) + 1));
    float **outs = malloc(sizeof(float *) * (size_t)(segs + 1));
    if (buf == NULL || outs == NULL) {
        free(buf), free(outs);
        for (int64_t j = 0; j < T * d; j++) out[j] = NAN;
        return 1;
    }
    float *xe = buf, *gu = xe + most * d, *sw = gu + 2 * most * f, *y = sw + most * f;
    for (int32_t i = 0; i < count; i++) {
        const int64_t te = start[i + 1] - start[i], *rows = tok + start[i];
        const int64_t fe = gate_up[ids[i]]->width / 2;
        for (int64_t j = 0; j < te; j++) /* the expert's tokens, gathered */
            memcpy(xe + j * d, x + rows[j] * d, sizeof(float) * (size_t)d);
        wf_q35_run_products(gate_up[ids[i]], xe, te, gu, outs, threads, min_work);
        wf_swiglu(gu, gu + te * fe, te * fe, sw);
        wf_q35_run_products(down[ids[i]], sw, te, y, outs, threads, min_work);
        for (int64_t j = 0; j < te; j++) { /* out[t] ← out[t] ⊕ (w ⊗ y): two roundings */
            float *o = out + rows[j] * d;
            const float *yj = y + j * d, w = wt[start[i] + j];
            for (int64_t c = 0; c < d; c++) o[c] = o[c] + w * yj[c];
        }
    }
    free(buf), free(outs);
    return 0;
}
