/* The experts of one Qwen3-MoE layer as one C call (spec/models.md §qwen3-moe-forward;
 * spec/vqf.md §text-tensors for the stacked layout).
 *
 * For each chosen expert, in ascending index: its gate and up are the row band [e·Ie, (e+1)·Ie)
 * of the layer's stacked [E·Ie, d] matrices (one contiguous byte range), its down the column band
 * [e·Ie, (e+1)·Ie) of the stacked [d, E·Ie] matrix, read in place: the band's first unit in every
 * row group, `group_stride` (the whole matrix's row-group length) apart, so no byte is copied.
 * The tokens that chose the expert go through gate/up, SwiGLU and down with the same kernels the
 * Python driver (fast/qwen3_moe/decoder.py) called one by one, then the combine
 * moe[t] ← moe[t] ⊕ (w_t ⊗ y_t), element by element, in ascending expert index: the reference's
 * order, so every output is its bits (spec/numerics.md §matmul: a product's rows and tokens may
 * be grouped freely, an output's operations never change).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

/* qmatvec.c and model_ops.c entry points (declared where they are defined). */
void wf_matmat_f32(const wf_matrix *m, const float *x, int64_t tokens, float *y, int32_t threads);
void wf_matmat_q8_activation_set(const wf_matrix *const *ms, int32_t count, const int8_t *xq,
                                 const float *xd, int64_t tokens, float *const *ys,
                                 int32_t threads);
void wf_swiglu(const float *g, const float *u, int64_t n, float *out);
void wf_swiglu_quantize(const float *g, const float *u, int64_t n, float *out, int8_t *codes,
                        float *scales);

void wf_matmat_q8_activation_each(const wf_matrix *const *ms, int32_t count, const int8_t *xq,
                                  const float *xd, int64_t tokens, float *const *ys,
                                  int32_t threads);
void wf_softmax(float *s, int64_t n);

/* The router's spec/numerics.md §softmax of each of `rows` rows of n logits, in place (the
 * routing's first step, spec/models.md §qwen3-moe-forward; the top-k stays the reference's). */
void wf_softmax_rows(float *x, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) wf_softmax(x + r * n, n);
}

/* Bytes of one (row group, block column) unit: G rows of one block (one word for F32 / F16). */
static int64_t unit_bytes(const wf_matrix *m) {
    const int64_t g = m->group_rows > 1 ? m->group_rows : 1;
    if (m->kind == WF_W_F32) return 4;
    if (m->kind == WF_W_F16) return 2;
    return g * (2 + wf_payload_bytes(m->kind));
}

static int64_t block_cols(const wf_matrix *m) {
    return m->kind == WF_W_F32 || m->kind == WF_W_F16 ? 1 : WF_QK;
}

/* Expert e's gate (or up): rows [e·Ie, (e+1)·Ie) of the stacked matrix, a contiguous range. */
static wf_matrix row_band(const wf_matrix *m, int64_t e, int64_t width) {
    const int64_t g = m->group_rows > 1 ? m->group_rows : 1;
    wf_matrix b = *m;
    b.data = wf_group(m, e * width / g);
    b.rows = width;
    return b;
}

/* Expert e's down: columns [e·Ie, (e+1)·Ie) of the stacked matrix, in place. */
static wf_matrix col_band(const wf_matrix *m, int64_t e, int64_t width) {
    wf_matrix b = *m;
    b.data = m->data + e * width / block_cols(m) * unit_bytes(m);
    b.cols = width;
    b.group_stride = wf_stride(m);
    return b;
}

typedef struct {
    float *g, *u, *sw, *y, *x; /* [Te, Ie] ×3, [Te, d], gathered float activations [Te, d] */
    int8_t *xq, *sq;           /* gathered codes [Te, d], SwiGLU codes [Te, Ie] */
    float *xd, *sd;            /* their scales */
} buffers;

/* One expert's gate/up → SwiGLU → down over its `te` gathered tokens into b->y. */
static void expert(const wf_matrix *gate, const wf_matrix *up, const wf_matrix *down, int32_t codes,
                   int64_t te, const buffers *b, int32_t threads, int64_t min_work) {
    const int64_t d = gate->cols, w = gate->rows;
    const int32_t th_gu = wf_threads_for(threads, 2 * w * d * te, min_work);
    const int32_t th_dn = wf_threads_for(threads, d * w * te, min_work);
    if (codes) {
        const wf_matrix *set[2] = {gate, up};
        float *ys[2] = {b->g, b->u};
        wf_matmat_q8_activation_set(set, 2, b->xq, b->xd, te, ys, th_gu);
        wf_swiglu_quantize(b->g, b->u, te * w, b->sw, b->sq, b->sd);
        wf_matmat_q8_activation_set(&down, 1, b->sq, b->sd, te, &b->y, th_dn);
    } else {
        wf_matmat_f32(gate, b->x, te, b->g, wf_threads_for(threads, w * d * te, min_work));
        wf_matmat_f32(up, b->x, te, b->u, wf_threads_for(threads, w * d * te, min_work));
        wf_swiglu(b->g, b->u, te * w, b->sw);
        wf_matmat_f32(down, b->sw, te, b->y, th_dn);
    }
}

/* One token's chosen experts (quantized, q8_activation) with two pool calls in all: every
 * expert's gate and up bands as one set on the token's codes, the SwiGLUs, every down band on its
 * own expert's codes as one set, then the combine in ascending expert index as below. The same
 * products and operations as one expert at a time (a product's rows may be grouped freely), so
 * the same bits; a decode step's 2·count pool hand-offs a layer become two. Returns -1 when a
 * buffer could not be allocated (the caller then runs the experts one at a time). */
static int32_t one_token(const wf_matrix *gate, const wf_matrix *up, const wf_matrix *down,
                         int64_t width, const int8_t *xq, const float *xd, int32_t count,
                         const int32_t *ids, const float *wt, float *moe, int32_t threads,
                         int64_t min_work) {
    enum { MOST = 64 };
    const int64_t d = gate->cols, nbs = width / WF_QK;
    if (count > MOST) return -1;
    float *fl = malloc(sizeof(float) * (size_t)(count * (3 * width + d + nbs) + 1));
    int8_t *sq = malloc((size_t)(count * width + 1));
    if (fl == NULL || sq == NULL) {
        free(fl), free(sq);
        return -1;
    }
    float *g = fl, *u = g + count * width, *sw = u + count * width, *y = sw + count * width;
    float *sd = y + count * d;
    wf_matrix bands[2 * MOST], downs[MOST];
    const wf_matrix *set[2 * MOST], *dset[MOST];
    float *ys[2 * MOST], *dys[MOST];
    for (int32_t i = 0; i < count; i++) {
        bands[2 * i] = row_band(gate, ids[i], width);
        bands[2 * i + 1] = row_band(up, ids[i], width);
        downs[i] = col_band(down, ids[i], width);
        set[2 * i] = bands + 2 * i, set[2 * i + 1] = bands + 2 * i + 1, dset[i] = downs + i;
        ys[2 * i] = g + i * width, ys[2 * i + 1] = u + i * width, dys[i] = y + i * d;
    }
    wf_matmat_q8_activation_set(set, 2 * count, xq, xd, 1,
                                ys, wf_threads_for(threads, 2 * width * d * count, min_work));
    /* expert i's SwiGLU and its codes: whole 32-blocks of its own row (width % 32 == 0) */
    for (int32_t i = 0; i < count; i++)
        wf_swiglu_quantize(g + i * width, u + i * width, width, sw + i * width, sq + i * width,
                           sd + i * nbs);
    wf_matmat_q8_activation_each(dset, count, sq, sd, 1, dys,
                                 wf_threads_for(threads, d * width * count, min_work));
    for (int32_t i = 0; i < count; i++) /* moe ← moe ⊕ (w ⊗ y), ascending expert index */
        for (int64_t c = 0; c < d; c++) moe[c] = moe[c] + wt[i] * y[i * d + c];
    free(fl), free(sq);
    return 0;
}

/* moe [T, d] (zeroed by the caller) = Σ over chosen experts, ascending, of w ⊗ expert(n).
 * Expert list i: expert index ids[i], its tokens tok[start[i] .. start[i+1]) (ascending) with
 * weights wt[...]. x: the normalized activations [T, d] (float); xq / xd their
 * spec/numerics.md §q8-activation codes and scales when `codes` (quantized weights in
 * q8_activation mode), else NULL. Returns 0, or -1 when a buffer could not be allocated (moe is
 * then NaN, so a failure cannot pass for a result). */
int32_t wf_moe_experts(const wf_matrix *gate, const wf_matrix *up, const wf_matrix *down,
                       int64_t width, int32_t codes, const float *x, const int8_t *xq,
                       const float *xd, int64_t T, int32_t count, const int32_t *ids,
                       const int64_t *start, const int64_t *tok, const float *wt, float *moe,
                       int32_t threads, int64_t min_work) {
    const int64_t d = gate->cols, nbx = d / WF_QK, nbs = width / WF_QK;
    int32_t singles = codes && T == 1 && count > 0 && width % WF_QK == 0;
    for (int32_t i = 0; singles && i < count; i++) singles = start[i] == i && start[i + 1] == i + 1;
    if (singles &&
        one_token(gate, up, down, width, xq, xd, count, ids, wt, moe, threads, min_work) == 0)
        return 0;
    int64_t most = 0;
    for (int32_t i = 0; i < count; i++)
        if (start[i + 1] - start[i] > most) most = start[i + 1] - start[i];
    buffers b;
    float *fl = malloc(sizeof(float) * (size_t)(most * (3 * width + 2 * d + nbx + nbs) + 1));
    int8_t *cb = malloc((size_t)(most * (d + width) + 1));
    if (fl == NULL || cb == NULL) {
        free(fl), free(cb);
        for (int64_t i = 0; i < T * d; i++) moe[i] = NAN;
        return -1;
    }
    b.g = fl, b.u = b.g + most * width, b.sw = b.u + most * width, b.y = b.sw + most * width;
    b.x = b.y + most * d, b.xd = b.x + most * d, b.sd = b.xd + most * nbx;
    b.xq = cb, b.sq = cb + most * d;
    for (int32_t i = 0; i < count; i++) {
        const int64_t te = start[i + 1] - start[i], *rows = tok + start[i];
        for (int64_t j = 0; j < te; j++) { /* the expert's tokens, gathered */
            if (codes) {
                memcpy(b.xq + j * d, xq + rows[j] * d, (size_t)d);
                memcpy(b.xd + j * nbx, xd + rows[j] * nbx, sizeof(float) * (size_t)nbx);
            } else {
                memcpy(b.x + j * d, x + rows[j] * d, sizeof(float) * (size_t)d);
            }
        }
        const wf_matrix g = row_band(gate, ids[i], width), u = row_band(up, ids[i], width);
        const wf_matrix dn = col_band(down, ids[i], width);
        expert(&g, &u, &dn, codes, te, &b, threads, min_work);
        for (int64_t j = 0; j < te; j++) { /* moe[t] ← moe[t] ⊕ (w ⊗ y): two roundings */
            float *o = moe + rows[j] * d;
            const float *y = b.y + j * d, w = wt[start[i] + j];
            for (int64_t c = 0; c < d; c++) o[c] = o[c] + w * y[c];
        }
    }
    free(fl), free(cb);
    return 0;
}
