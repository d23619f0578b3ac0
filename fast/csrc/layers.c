/* The decoder layers of a Qwen3 dense forward pass as one C call (spec/models.md §qwen3;
 * spec/models.md §qwen3-forward): per layer RMSNorm, the q/k/v products, q/k norm + RoPE, the
 * KV-cache write, attention, o_proj + residual, RMSNorm, gate/up, SwiGLU, down + residual.
 *
 * Nothing here has an order of its own: each step is the kernel the Python driver
 * (fast/qwen3/decoder.py) calls for it, in the same sequence, so every output is the same bits as
 * the step-by-step path (and the reference). Which products share one pool call, and the thread
 * counts, only change how outputs are grouped, never an output's operations
 * (spec/numerics.md §matmul). The point is to make a decode step one call, not a dozen per layer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

/* model_ops.c and qmatvec.c entry points this file drives (declared where they are defined). */
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out);
void wf_rmsnorm_quantize(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                         float *out, int8_t *codes, float *scales);
void wf_norm_rope(const float *x, int64_t tokens, int64_t heads, int64_t head_dim, const float *w,
                  float eps, const float *cos, const float *sin, float *normed, float *rotated);
void wf_swiglu(const float *g, const float *u, int64_t n, float *out);
void wf_swiglu_quantize(const float *g, const float *u, int64_t n, float *out, int8_t *codes,
                        float *scales);
void wf_attend_group(const float *q, const float *keys, const float *values, int64_t npos,
                     int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t g,
                     float *scores, float *out);
void wf_attend_tile(const float *q, int64_t qd, const float *keys, const float *values,
                    int64_t stride, const int64_t *slots, int64_t t0, int64_t t1, int64_t heads,
                    int64_t kv_heads, int64_t head_dim, int64_t g, float *scores, float *att);
int64_t wf_attend_tile_tokens(int64_t heads, int64_t kv_heads);
void wf_matmat_f32(const wf_matrix *m, const float *x, int64_t tokens, float *y, int32_t threads);
void wf_matmat_q8_activation_set(const wf_matrix *const *ms, int32_t count, const int8_t *xq,
                                 const float *xd, int64_t tokens, float *const *ys,
                                 int32_t threads);

enum { P_Q, P_K, P_V, P_O, P_GATE, P_UP, P_DOWN, P_COUNT };

/* One layer's weights. codes[i] = 1 when product i takes spec/numerics.md §q8-activation activation
 * codes (a quantized matrix in q8_activation mode), 0 when it takes float activations
 * (spec/numerics.md §f32-weights, or a dense F32 / F16 matrix). */
typedef struct {
    const wf_matrix *mat[P_COUNT];
    int32_t codes[P_COUNT];
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
} wf_layer;

/* Products `which[0..n)` of layer L applied to the same activations (float x, and its codes
 * xq / scales xd when some product takes them): those taking codes as one pool call, the others
 * one by one, as fast/numerics/matrix.py project does. */
static void project(const wf_layer *L, const int *which, int n, const float *x, const int8_t *xq,
                    const float *xd, int64_t T, float *const *ys, int32_t threads,
                    int64_t min_work) {
    const wf_matrix *set[P_COUNT];
    float *set_y[P_COUNT];
    int count = 0;
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        const wf_matrix *m = L->mat[which[i]];
        if (L->codes[which[i]]) {
            set[count] = m, set_y[count++] = ys[i];
            rows += m->rows;
        } else {
            const int64_t work = m->rows * m->cols * T;
            wf_matmat_f32(m, x, T, ys[i], wf_threads_for(threads, work, min_work));
        }
    }
    if (count > 0)
        wf_matmat_q8_activation_set(set, count, xq, xd, T, set_y,
                                    wf_threads_for(threads, rows * set[0]->cols * T, min_work));
}

static int any_codes(const wf_layer *L, int a, int b, int c) {
    return L->codes[a] || (b >= 0 && L->codes[b]) || (c >= 0 && L->codes[c]);
}

/* Attention of T tokens: unit u = i * kv_heads + g is every query head of the tokens of tile i
 * (`tile` consecutive tokens, wf_attend_tile_tokens) that reads kv head g (wf_attend_tile: on a
 * SIMD path the tile's queries go through the cache together, attention_tiles.c), token t
 * attending cache rows 0..slots[t]. Units are independent (each query has its own scores and
 * sums), so any split over the pool gives the same bits. The pool hands out work in chunks of
 * UNIT_SPAN (its CHUNK_ALIGN, made for row groups), so each unit counts UNIT_SPAN: otherwise a
 * decode step's eight units would be one chunk, on one thread. A unit sees its kv head alone
 * (a one-kv-head view: its group of query heads, its keys from `keys + g·head_stride`, rows
 * `row_stride` apart), so the cache may keep a head's rows together (wf_forward_layers) or
 * every head of a position together (wf_attend_tokens): the same operations either way. */
enum { UNIT_SPAN = 8 };

typedef struct {
    const float *qr, *keys, *values;
    const int64_t *slots;
    int64_t heads, kv_heads, head_dim, qd, row_stride, head_stride, npos_max, tile, tokens;
    float *att;
} attention_job;

static void attention_units(void *arg, int64_t s0, int64_t s1) {
    const attention_job *a = arg;
    const int64_t group = a->heads / a->kv_heads, hd = a->head_dim;
    float *scores = malloc(sizeof(float) * (size_t)(a->tile * group * a->npos_max));
    if (scores == NULL) return; /* att was NaN-filled by the caller: the failure shows */
    for (int64_t u = (s0 + UNIT_SPAN - 1) / UNIT_SPAN; u * UNIT_SPAN < s1; u++) {
        const int64_t t0 = (u / a->kv_heads) * a->tile, g = u % a->kv_heads;
        const int64_t t1 = t0 + a->tile < a->tokens ? t0 + a->tile : a->tokens;
        wf_attend_tile(a->qr + g * group * hd, a->qd, a->keys + g * a->head_stride,
                       a->values + g * a->head_stride, a->row_stride, a->slots, t0, t1, group,
                       1, hd, 0, scores, a->att + g * group * hd);
    }
    free(scores);
}

/* spec/numerics.md §attention of T tokens of one sequence on the pool, as wf_forward_layers runs
 * it (units of attention_units): qr [T, qd], token t reading rows 0..slots[t] of keys / values
 * (rows of kvd floats), att [T, qd] (NaN-filled first, so a failed allocation shows). The
 * Qwen3.5 fast path (fast/qwen35/attention.py) calls it once per sequence and layer. */
void wf_attend_tokens(const float *qr, int64_t qd, const float *keys, const float *values,
                      int64_t kvd, const int64_t *slots, int64_t T, int64_t heads,
                      int64_t kv_heads, int64_t head_dim, float *att, int32_t threads) {
    int64_t npos_max = 0;
    for (int64_t t = 0; t < T; t++) npos_max = slots[t] + 1 > npos_max ? slots[t] + 1 : npos_max;
    const int64_t tile = wf_attend_tile_tokens(heads, kv_heads);
    attention_job job = {qr,  keys,      values,   slots, heads, kv_heads, head_dim,
                         qd,  kvd,       head_dim, npos_max, tile, T,     att};
    for (int64_t j = 0; j < T * qd; j++) att[j] = NAN;
    wf_parallel_for((T + tile - 1) / tile * kv_heads * UNIT_SPAN, threads, attention_units, &job);
}

/* The per-token steps between the products (norms with or without the activation quantizer, q / k
 * norm and rotation, SwiGLU, the quantizer alone): every token's row gets the same operations
 * wherever it runs, and each row starts a whole block of spec/numerics.md §q8-activation (widths
 * taking codes are multiples of WF_QK), so the tokens go on the pool
 * (spec/numerics.md §threads). At one token they stay on the caller (wf_threads_for). */
enum { TOK_NORM, TOK_NORM_QUANT, TOK_ROPE, TOK_QUANT, TOK_SWIGLU, TOK_SWIGLU_QUANT };

typedef struct {
    int op;
    const float *x, *y, *w, *cos, *sin; /* y: SwiGLU's up; cos / sin [T, head_dim / 2] */
    float *out, *out2;                  /* out2: the rotated rows */
    int8_t *codes;
    float *scales, eps;
    int64_t n, heads, head_dim; /* floats a token; heads × head_dim for TOK_ROPE */
} token_job;

static void token_rows(void *arg, int64_t t0, int64_t t1) {
    const token_job *j = arg;
    const int64_t k = t1 - t0, n = j->n, at = t0 * n, h = t0 * (j->head_dim / 2);
    int8_t *codes = j->codes == NULL ? NULL : j->codes + at;
    float *scales = j->scales == NULL ? NULL : j->scales + at / WF_QK;
    switch (j->op) {
    case TOK_NORM: wf_rmsnorm_rows(j->x + at, k, n, j->w, j->eps, j->out + at); break;
    case TOK_NORM_QUANT:
        wf_rmsnorm_quantize(j->x + at, k, n, j->w, j->eps, j->out + at, codes, scales);
        break;
    case TOK_ROPE:
        wf_norm_rope(j->x + at, k, j->heads, j->head_dim, j->w, j->eps, j->cos + h, j->sin + h,
                     j->out + at, j->out2 + at);
        break;
    case TOK_QUANT: wf_quantize_activation(j->x + at, k * n, codes, scales); break;
    case TOK_SWIGLU: wf_swiglu(j->x + at, j->y + at, k * n, j->out + at); break;
    default: wf_swiglu_quantize(j->x + at, j->y + at, k * n, j->out + at, codes, scales); break;
    }
}

/* min_work counts a product's multiply-adds; an element of these steps costs about STEP_COST of
 * them (SwiGLU's exp, a norm's square and scale, the quantizer's divide and round), so a 64-token
 * chunk of SwiGLU (~200 k elements) goes on the pool and a decode step's few thousand do not. */
enum { STEP_COST = 16 };

static void per_token(const token_job *j, int64_t T, int32_t threads, int64_t min_work) {
    const int32_t th = wf_threads_for(threads, T * j->n * STEP_COST, min_work);
    wf_parallel_for(T, th, token_rows, (void *)j);
}

/* Floats of scratch wf_forward_layers needs for T tokens. */
int64_t wf_forward_scratch_floats(const wf_layer *L, int64_t T) {
    const int64_t hid = L->mat[P_Q]->cols, qd = L->mat[P_Q]->rows, kvd = L->mat[P_K]->rows;
    const int64_t inter = L->mat[P_GATE]->rows;
    int64_t widest = hid > qd ? hid : qd;
    widest = widest > inter ? widest : inter;
    /* n, h, o, d: hid; q, qn, qr, att: qd; k, kn, kr, v: kvd; g, u, sw: inter; codes (int8, in
     * floats rounded up) and scales: widest */
    return T * (4 * hid + 4 * qd + 4 * kvd + 3 * inter + (widest + 3) / 4 + widest / WF_QK + 1);
}

/* x [T, hidden] holds the embeddings on entry and the last layer's output on return. Token t is
 * at cache row slots[t] of its layer (keys / values [layers, kv_heads, capacity, head_dim]: a kv
 * head's rows together, so decode attention at depth streams them instead of taking 512 B of
 * every position's row; docs/performance.md); every token's
 * K/V is written before any attends, and token t reads rows 0..slots[t]
 * (spec/numerics.md §attention). cos / sin [T, head_dim/2] are the tokens'
 * spec/numerics.md §cos-sin, §mrope-positions rows. `scratch` holds
 * wf_forward_scratch_floats(layers, T) floats; min_work is wf_threads_for's bound (the tests lower
 * it so that tiny models use threads). Attention runs on the pool too: its units are (token, kv
 * head) groups of query heads. Returns 0; an allocation failure inside a kernel leaves NaN (outputs
 * are NaN-filled first), so it cannot pass for a result. */
int32_t wf_forward_layers(const wf_layer *layers, int32_t nlayers, int64_t heads,
                          int64_t kv_heads, int64_t head_dim, float eps, float *x, int64_t T,
                          const float *cos, const float *sin, float *keys, float *values,
                          int64_t capacity, const int64_t *slots, float *scratch,
                          int32_t threads, int64_t min_work) {
    if (nlayers <= 0 || T <= 0) return 0;
    const wf_layer *L0 = layers;
    const int64_t hid = L0->mat[P_Q]->cols, qd = L0->mat[P_Q]->rows, kvd = L0->mat[P_K]->rows;
    const int64_t inter = L0->mat[P_GATE]->rows;
    int64_t widest = hid > qd ? hid : qd;
    widest = widest > inter ? widest : inter;
    float *p = scratch;
    float *n = p; p += T * hid;
    float *h = p; p += T * hid;
    float *o = p; p += T * hid;
    float *d = p; p += T * hid;
    float *q = p; p += T * qd;
    float *qn = p; p += T * qd;
    float *qr = p; p += T * qd;
    float *att = p; p += T * qd;
    float *k = p; p += T * kvd;
    float *kn = p; p += T * kvd;
    float *kr = p; p += T * kvd;
    float *v = p; p += T * kvd;
    float *g = p; p += T * inter;
    float *u = p; p += T * inter;
    float *sw = p; p += T * inter;
    int8_t *xq = (int8_t *)p; p += (T * widest + 3) / 4;
    float *xd = p;
    int64_t npos_max = 0;
    for (int64_t t = 0; t < T; t++) npos_max = slots[t] + 1 > npos_max ? slots[t] + 1 : npos_max;
    int64_t attention_work = 0; /* multiply-adds of q.k and p.v, for the thread count */
    for (int64_t t = 0; t < T; t++) attention_work += 2 * (slots[t] + 1) * qd;
    const int32_t attention_threads = wf_threads_for(threads, attention_work, min_work);
    const int64_t tile = wf_attend_tile_tokens(heads, kv_heads); /* tokens per attention unit */
    static const int QKV[3] = {P_Q, P_K, P_V}, O[1] = {P_O}, GU[2] = {P_GATE, P_UP};
    static const int DOWN[1] = {P_DOWN};
    for (int32_t i = 0; i < nlayers; i++) {
        const wf_layer *L = layers + i;
        float *lk = keys + (int64_t)i * capacity * kvd, *lv = values + (int64_t)i * capacity * kvd;
        /* h = x + o_proj(attn(input_layernorm(x))) */
        const token_job norm1 = {.op = any_codes(L, P_Q, P_K, P_V) ? TOK_NORM_QUANT : TOK_NORM,
                                 .x = x, .w = L->attn_norm, .out = n, .codes = xq, .scales = xd,
                                 .eps = eps, .n = hid};
        per_token(&norm1, T, threads, min_work);
        float *const qkv[3] = {q, k, v};
        project(L, QKV, 3, n, xq, xd, T, qkv, threads, min_work);
        const token_job rq = {.op = TOK_ROPE, .x = q, .w = L->q_norm, .cos = cos, .sin = sin,
                              .out = qn, .out2 = qr, .eps = eps, .n = qd, .heads = heads,
                              .head_dim = head_dim};
        const token_job rk = {.op = TOK_ROPE, .x = k, .w = L->k_norm, .cos = cos, .sin = sin,
                              .out = kn, .out2 = kr, .eps = eps, .n = kvd, .heads = kv_heads,
                              .head_dim = head_dim};
        per_token(&rq, T, threads, min_work);
        per_token(&rk, T, threads, min_work);
        const int64_t plane = capacity * head_dim; /* one kv head's rows */
        const size_t row = sizeof(float) * (size_t)head_dim;
        for (int64_t t = 0; t < T; t++)
            for (int64_t g = 0; g < kv_heads; g++) {
                memcpy(lk + g * plane + slots[t] * head_dim, kr + t * kvd + g * head_dim, row);
                memcpy(lv + g * plane + slots[t] * head_dim, v + t * kvd + g * head_dim, row);
            }
        attention_job job = {qr, lk,       lv,    slots,    heads, kv_heads, head_dim,
                             qd, head_dim, plane, npos_max, tile,  T,        att};
        for (int64_t j = 0; j < T * qd; j++) att[j] = NAN;
        wf_parallel_for((T + tile - 1) / tile * kv_heads * UNIT_SPAN, attention_threads,
                        attention_units, &job);
        if (L->codes[P_O]) {
            const token_job qo = {.op = TOK_QUANT, .x = att, .codes = xq, .scales = xd, .n = qd};
            per_token(&qo, T, threads, min_work);
        }
        float *const oy[1] = {o};
        project(L, O, 1, att, xq, xd, T, oy, threads, min_work);
        for (int64_t j = 0; j < T * hid; j++) h[j] = x[j] + o[j]; /* spec/numerics.md §residual */
        /* x = h + down_proj(silu(gate_proj(m)) * up_proj(m)), m = post_attention_layernorm(h) */
        const token_job norm2 = {.op = any_codes(L, P_GATE, P_UP, -1) ? TOK_NORM_QUANT : TOK_NORM,
                                 .x = h, .w = L->ffn_norm, .out = n, .codes = xq, .scales = xd,
                                 .eps = eps, .n = hid};
        per_token(&norm2, T, threads, min_work);
        float *const gu[2] = {g, u};
        project(L, GU, 2, n, xq, xd, T, gu, threads, min_work);
        const token_job act = {.op = L->codes[P_DOWN] ? TOK_SWIGLU_QUANT : TOK_SWIGLU, .x = g,
                               .y = u, .out = sw, .codes = xq, .scales = xd, .n = inter};
        per_token(&act, T, threads, min_work);
        float *const dy[1] = {d};
        project(L, DOWN, 1, sw, xq, xd, T, dy, threads, min_work);
        for (int64_t j = 0; j < T * hid; j++) x[j] = h[j] + d[j];
    }
    return 0;
}
