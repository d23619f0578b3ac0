/* aarch64 driver for fast/csrc/board.c and board_simd.c (tests/fast/qwen3/board/
 * test_board_aarch64.py), built with every kernel source like tests/fast/neon/driver.c. Usage:
 *   board_driver path          print wf_simd_path() (2 = NEON + dotprod)
 *   board_driver OP IN OUT     run OP on the little-endian input file, write float32 results
 * OP act: int64 n; float32 x [n] -> the activation codes (as floats) and scales of x, the two
 *   RMSNorm orders of x (weights x) and the SiLU of (x, x); no libm calls (those are the host
 *   library's, spec/numerics.md §board-c-library).
 * OP products: int64 rows, cols; int8 codes [rows, cols], uint16 scale bits [rows, cols/32],
 *   int8 activation codes [cols], float32 scales [cols/32] -> the three product forms on the
 *   portable (0), NEON (1) and NEON + dotprod (2) paths, at 1 and at 3 threads, in that order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "driver_io.h"

void wfb_set_thread_grain(int64_t grain);
void wfb_quantize_act(const float *x, int64_t n, int8_t *codes, float *scales);
void wfb_matvec(const int8_t *w, const uint16_t *sb, int64_t rows, int64_t cols,
                const int8_t *xc, const float *dx, int32_t form, float *y, int32_t threads);
void wfb_rmsnorm(const float *x, const float *w, int64_t n, int64_t count, float eps,
                 int32_t order, float *out);
int32_t wfb_silu_mul(const float *g, const float *u, int64_t n, float *out);

static int act(float *y) {
    const int64_t n = param();
    const float *x = copy(4 * (size_t)n);
    int8_t *codes = malloc((size_t)n);
    wfb_quantize_act(x, n, codes, y + n);
    for (int64_t i = 0; i < n; i++) y[i] = (float)codes[i];
    float *at = y + n + n / 32;
    for (int32_t order = 0; order < 2; order++, at += n) wfb_rmsnorm(x, x, n, 1, 1e-6f, order, at);
    return wfb_silu_mul(x, x, n, at) ? -1 : (int)(3 * n + n / 32 + n);
}

static int products(float *y) {
    const int64_t rows = param(), cols = param(), nb = cols / 32;
    const int8_t *w = copy((size_t)(rows * cols));
    const uint16_t *sb = copy(2 * (size_t)(rows * nb));
    const int8_t *xc = copy((size_t)cols);
    const float *dx = copy(4 * (size_t)nb);
    float *at = y;
    wfb_set_thread_grain(1); /* tiny products on 3 threads too */
    for (int32_t isa = WF_ISA_PORTABLE; isa <= WF_ISA_DOTPROD; isa++) {
        if (wf_set_isa(isa) != 0) return -1;
        for (int32_t threads = 1; threads <= 3; threads += 2)
            for (int32_t form = 0; form < 3; form++, at += rows)
                wfb_matvec(w, sb, rows, cols, xc, dx, form, at, threads);
    }
    return (int)(at - y);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "path") == 0) {
        printf("%d\n", (int)wf_simd_path());
        return 0;
    }
    if (argc != 4 || read_input(argv[2]) != 0) return 2;
    float *y = malloc(sizeof(float) * (5 * input_len + 64)); /* more than either op writes */
    int ny = -2;
    if (strcmp(argv[1], "act") == 0) ny = act(y);
    if (strcmp(argv[1], "products") == 0) ny = products(y);
    if (ny < 0) return 3;
    return write_floats(argv[3], y, (size_t)ny);
}
