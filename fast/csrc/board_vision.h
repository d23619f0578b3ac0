/* What board_vision.c shares with the SIMD bodies of board_vision_simd.c
 * (spec/numerics.md §board-vision): one table of functions per kernel path, each output a lane. */
#ifndef WF_BOARD_VISION_H
#define WF_BOARD_VISION_H

#include <stdint.h>

typedef struct {
    int64_t lanes;  /* W: keys, output elements or channels at once */
    int64_t dlanes; /* WD: tokens at once in bv_dense8 */
    void (*scores)(const float *q, const float *kt, int64_t stride, int64_t hd, float scale,
                   float *s);
    int64_t (*weighted_sum)(const float *e, float inv, const float *v, int64_t n, int64_t hd,
                            float *o);
    void (*dense8)(const float *xg, const float *w, int64_t k, double *acc);
    void (*patch)(const float *x, const float *wt, int64_t stride, int64_t k, const float *b,
                  float *y);
    int64_t (*gelu)(const float *x, int64_t n, float *y); /* whole vectors; returns the count */
    int64_t (*tanhf)(const float *x, int64_t n, float *y); /* the same */
} wfv_simd;

/* The table of the kernel path in use (cpu.h), NULL on the portable path. */
const wfv_simd *wfv_simd_for(int32_t isa);

#endif
