/* The SIMD forms of the per-layer operations (ops_vec.c), one table per kernel path.
 *
 * Each entry computes exactly what the plain C of model_ops.c computes, output by output and in
 * the same order of operations (spec/numerics.md §kernel-paths): vectors only ever hold independent
 * outputs, or the spec/numerics.md §lanes lanes of one sum.
 */
#ifndef WF_OPS_VEC_H
#define WF_OPS_VEC_H

#include <stdint.h>

typedef struct {
    /* spec/numerics.md §exp on x[0..n): returns how many leading elements it did (a multiple of
     * the vector width); the caller does the rest with wf_exp. */
    int64_t (*exp_array)(const float *x, int64_t n, float *out);
    /* spec/numerics.md §silu swiglu on the leading elements, as exp_array. */
    int64_t (*swiglu)(const float *g, const float *u, int64_t n, float *out);
    /* spec/numerics.md §rmsnorm on nrows rows of n, whole. */
    void (*rmsnorm_rows)(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                         float *out);
    /* spec/numerics.md §rotation on one head vector v of 2h floats with its cos / sin rows,
     * whole. */
    void (*rotate)(const float *v, const float *c, const float *s, int64_t h, float *o);
    /* spec/numerics.md §attention for the heads / kv_heads query heads of one token that read kv
     * head g (head_dim % 32 == 0): their scores (group * npos floats of `scores`), softmaxes and
     * outputs, the queries taken two at a time against four cached positions at a time. */
    void (*attend_group)(const float *q, const float *keys, const float *values, int64_t npos,
                         int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim,
                         int64_t g, float *scores, float *out);
} wf_vec_ops;

/* The table of kernel path `isa` (WF_ISA_*), or NULL when that path has no SIMD forms here
 * (portable C, or an ISA this build does not target). */
const wf_vec_ops *wf_vec_ops_for(int32_t isa);

#endif
