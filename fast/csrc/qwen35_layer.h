/* What fast/qwen35/ binds once per layer for the C calls of a Qwen3.5 pass (fast/_native.py
 * WfQ35Gdn / WfQ35Attention / WfQ35Products mirror the structs): a mixer's constants (gdn.py
 * GdnBinding, attention.py AttentionBinding) with the two calls of qwen35_layer.c that run a
 * mixer between its input and output projections, and a fixed product set (matrix.py ProductSet)
 * with the call of qwen35_forward.c that runs it. */
#ifndef WF_QWEN35_LAYER_H
#define WF_QWEN35_LAYER_H

#include <stdint.h>

#include "wf_kernels.h"

/* One Gated DeltaNet layer's constants (bound once, fast/qwen35/gdn.py GdnBinding). */
typedef struct {
    const float *conv_w;  /* [kernel, C], C = 2 · hk · dk + hv · dv */
    const float *a_exp;   /* [hv] exp(A_log) */
    const float *dt_bias; /* [hv] */
    const float *norm_w;  /* [dv] the gated RMSNorm's weight, as stored */
    int64_t kernel, hv, hk, dk, dv;
    float eps;        /* the gated RMSNorm's */
    float l2_eps;     /* spec/numerics.md §gdn-l2norm */
} wf_q35_gdn;

/* One gated full-attention layer's constants (bound once, fast/qwen35/attention.py). */
typedef struct {
    const float *q_norm, *k_norm; /* [head_dim] the zero-centred weights, 1 + w rounded once */
    int64_t heads, kv_heads, head_dim, rot_half; /* rot_half: the rotated dims / 2 */
    float eps;
} wf_q35_attention;

int32_t wf_q35_gdn_mix(const wf_q35_gdn *L, const float *proj, int64_t ld, int64_t T,
                       float *window, float *states, float *out, int32_t threads,
                       int32_t token_threads);
void wf_q35_attention_mix(const wf_q35_attention *L, const float *proj, int64_t ld, int64_t T,
                          const float *cos, const float *sin, float *keys, float *values,
                          const int64_t *slots, float *out, int32_t threads,
                          int32_t token_threads);

/* A fixed set of products reading the same activations [T, cols] (fast/qwen35/matrix.py
 * ProductSet): segment j writes from byte offset[j] + first[j] · T of the output, row stride
 * ldy[j]; `width` rows in all. */
typedef struct {
    const wf_nf_matrix *const *segs;
    const int64_t *first, *offset, *ldy;
    int64_t count, width, cols;
} wf_q35_products;

/* The products of P with x [T, cols] into y; `outs` holds P->count pointers (qwen35_forward.c). */
void wf_q35_run_products(const wf_q35_products *P, const float *x, int64_t T, float *y,
                         float **outs, int32_t threads, int64_t min_work);

#endif
