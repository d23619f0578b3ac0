/* What board.c shares with its SIMD bodies in board_simd.c (spec/numerics.md §board-products). */
#ifndef WF_BOARD_H
#define WF_BOARD_H

#include <stdint.h>

enum { WFB_QB = 32, FORM_Q4_DECODE = 0, FORM_SINGLE_CHAIN = 1, FORM_Q8_PREFILL = 2 };

/* One product: int8 weight codes [rows, cols], f16 scale bits [rows, cols/32], activation codes
 * [cols] and scales [cols/32], the form, y [rows]. */
typedef struct {
    const int8_t *w;
    const uint16_t *sb;
    int64_t cols;
    const int8_t *xc;
    const float *dx;
    int32_t form;
    float *y;
} wfb_mv;

/* Rows r0, r0 + 1, ... of the product on the kernel path in use (cpu.h), in whole tiles of its
 * lane count; returns the first row it left (r0 on the portable path), board.c does the rest. */
int64_t wfb_mv_rows_simd(const wfb_mv *p, int64_t r0, int64_t r1);

#endif
