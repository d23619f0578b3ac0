/* The decoder layers of a Qwen3.5 pass with dense FFNs as one C call
 * (spec/models.md §qwen35-forward): per layer the zero-centred input norm, the mixer's input
 * products, the mixer (wf_q35_gdn_mix or wf_q35_attention_mix, qwen35_layer.c), its output
 * product and the residual; the post-attention norm, gate / up, SwiGLU, down and the residual.
 *
 * Nothing here has an order of its own: each step is the kernel fast/qwen35/ (gdn.py,
 * attention.py, ffn.py) calls for it, in the same sequence, so every output is the same bits as
 * the step-by-step path and the reference (tests/differential/test_qwen35_fast_eq_ref.py compares
 * both with the reference). Which products share one pool run, and the thread counts, only group
 * the outputs (spec/numerics.md §threads). The point is the decode step: at one token the two
 * dozen ctypes calls, array allocations and views a layer made in Python cost a few milliseconds
 * a step, against ~37 ms of products that already run at the memory's speed.
 */
#include <stdlib.h>
#include <string.h>

#include "qwen35_layer.h"
#include "wf_kernels.h"

void wf_swiglu(const float *g, const float *u, int64_t n, float *out);            /* model_ops.c */
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out); /* model_ops.c */

/* One layer (fast/qwen35/forward.py binds them). `mixer` is a wf_q35_gdn when `attention` is 0,
 * a wf_q35_attention when 1; `parts` the floats per token of its mixer call's output, whose last
 * part (the normed or gated rows the output product reads) begins at T · last. The FFN's
 * gate_up set writes [T, ffn] of gate then of up (blocks). */
typedef struct {
    int32_t attention;
    const void *mixer;
    const float *input_norm, *post_norm; /* zero-centred: 1 + w rounded once */
    const wf_q35_products *mix_in, *mix_out, *gate_up, *down;
    int64_t parts, last;
} wf_q35_layer;

void wf_q35_run_products(const wf_q35_products *P, const float *x, int64_t T, float *y,
                         float **outs, int32_t threads, int64_t min_work) {
    for (int64_t j = 0; j < P->count; j++)
        outs[j] = (float *)((char *)y + P->offset[j] + P->first[j] * T);
    wf_nf_matmat_set(P->segs, P->count, x, T, outs, P->ldy,
                     wf_threads_for(threads, P->width * P->cols * T, min_work));
}

/* The most, over the layers, of one per-layer size: the input products' width, the mixer
 * output's floats a token, the gate / up width, or the product segments of a layer. */
enum { MOST_MIX_IN, MOST_PARTS, MOST_GATE_UP, MOST_SEGMENTS };

static int64_t most_of(const wf_q35_layer *layers, int32_t n, int what) {
    int64_t most = 0;
    for (int32_t i = 0; i < n; i++) {
        const wf_q35_layer *L = layers + i;
        int64_t v = L->mix_in->count + L->mix_out->count + L->gate_up->count + L->down->count;
        if (what == MOST_MIX_IN) v = L->mix_in->width;
        if (what == MOST_PARTS) v = L->parts;
        if (what == MOST_GATE_UP) v = L->gate_up->width;
        most = v > most ? v : most;
    }
    return most;
}

/* Floats of scratch wf_q35_forward_layers needs for T tokens of width `hidden`. */
int64_t wf_q35_forward_scratch_floats(const wf_q35_layer *layers, int32_t n, int64_t hidden,
                                      int64_t T) {
    /* n, o, h: hidden; proj: the widest input set; mixer outputs; gate / up and SwiGLU */
    const int64_t ffn = most_of(layers, n, MOST_GATE_UP);
    return T * (3 * hidden + most_of(layers, n, MOST_MIX_IN) + most_of(layers, n, MOST_PARTS) +
                ffn + ffn / 2);
}

/* The mixer of layer L between its input products proj [T, mix_in->width] and out. */
static int32_t run_mixer(const wf_q35_layer *L, const float *proj, int64_t T, const float *cos,
                         const float *sin, const int64_t *slots, float *window, float *states,
                         float *keys, float *values, float *out, int32_t threads,
                         int64_t min_work) {
    const int64_t ld = L->mix_in->width;
    if (L->attention) {
        const wf_q35_attention *A = L->mixer;
        const int64_t qd = A->heads * A->head_dim, kvd = A->kv_heads * A->head_dim;
        int64_t work = 0; /* multiply-adds of q·k and p·v */
        for (int64_t t = 0; t < T; t++) work += 2 * qd * (slots[t] + 1);
        wf_q35_attention_mix(A, proj, ld, T, cos, sin, keys, values, slots, out,
                             wf_threads_for(threads, work, min_work),
                             wf_threads_for(threads, T * 4 * (qd + kvd), min_work));
        return 0;
    }
    const wf_q35_gdn *G = L->mixer;
    const int64_t channels = 2 * G->hk * G->dk + G->hv * G->dv;
    const int64_t token_work = channels * (G->kernel + 1) + 2 * G->hv * G->dv;
    return wf_q35_gdn_mix(G, proj, ld, T, window, states, out,
                          wf_threads_for(threads, T * G->hv * G->dk * G->dv, min_work),
                          wf_threads_for(threads, T * token_work, min_work));
}

/* x [T, hidden] holds the embeddings of one sequence's T tokens on entry and the last layer's
 * output on return. Per layer i: window[i] / states[i] are a Gated DeltaNet layer's conv inputs
 * and recurrent states, keys[i] / values[i] a full-attention layer's cache rows (token t at row
 * slots[t], attending rows 0 .. slots[t]); cos / sin [T, rot_half] the tokens' rotary rows.
 * `scratch` holds wf_q35_forward_scratch_floats floats; min_work is wf_threads_for's bound (the
 * tests lower it). Returns 0, or 1 when out of memory (a mixer's work area, the output pointers):
 * then x and the caches may be partly advanced and the caller discards them. */
int32_t wf_q35_forward_layers(const wf_q35_layer *layers, int32_t nlayers, int64_t hidden,
                              float eps, float *x, int64_t T, const float *cos, const float *sin,
                              const int64_t *slots, float *const *window, float *const *states,
                              float *const *keys, float *const *values, float *scratch,
                              int32_t threads, int64_t min_work) {
    if (nlayers <= 0 || T <= 0) return 0;
    float **outs = malloc(sizeof(float *) * (size_t)most_of(layers, nlayers, MOST_SEGMENTS));
    if (outs == NULL) return 1;
    const int64_t ffn = most_of(layers, nlayers, MOST_GATE_UP) / 2;
    float *n = scratch, *o = n + T * hidden, *h = o + T * hidden, *proj = h + T * hidden;
    float *mixed = proj + T * most_of(layers, nlayers, MOST_MIX_IN);
    float *gu = mixed + T * most_of(layers, nlayers, MOST_PARTS), *sw = gu + 2 * T * ffn;
    int32_t status = 0;
    for (int32_t i = 0; i < nlayers; i++) {
        const wf_q35_layer *L = layers + i;
        const int64_t f = L->gate_up->width / 2;
        /* h = x + output(mixer(input_norm(x))) */
        wf_rmsnorm_rows(x, T, hidden, L->input_norm, eps, n);
        wf_q35_run_products(L->mix_in, n, T, proj, outs, threads, min_work);
        status = run_mixer(L, proj, T, cos, sin, slots, window[i], states[i], keys[i], values[i],
                           mixed, threads, min_work);
        if (status) break;
        wf_q35_run_products(L->mix_out, mixed + T * L->last, T, o, outs, threads, min_work);
        /* spec/numerics.md §residual */
        for (int64_t j = 0; j < T * hidden; j++) h[j] = x[j] + o[j];
        /* x = h + down(silu(gate(m)) · up(m)), m = post_norm(h) */
        wf_rmsnorm_rows(h, T, hidden, L->post_norm, eps, n);
        wf_q35_run_products(L->gate_up, n, T, gu, outs, threads, min_work);
        wf_swiglu(gu, gu + T * f, T * f, sw);
        wf_q35_run_products(L->down, sw, T, o, outs, threads, min_work);
        for (int64_t j = 0; j < T * hidden; j++) x[j] = h[j] + o[j];
    }
    free(outs);
    return status;
}
