/* The constants of a Qwen3.5 layer's mixer, bound once by fast/qwen35/ (gdn.py GdnBinding,
 * attention.py AttentionBinding; fast/_native.py WfQ35Gdn / WfQ35Attention mirror them), and the
 * two calls of qwen35_layer.c that run a mixer between its input and output projections. */
#ifndef WF_QWEN35_LAYER_H
#define WF_QWEN35_LAYER_H

#include <stdint.h>

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

#endif
