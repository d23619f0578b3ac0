/* aarch64 driver for fast/csrc/board.c (tests/fast/qwen3/board/test_board_aarch64.py).
 *
 * Reads one little-endian input file: int64 rows, cols, then int8 weights [rows, cols], uint16
 * scale bits [rows, cols/32], float32 activations [cols]; writes float32 results: the four
 * product forms of the quantized activations, the two RMSNorm orders and the SiLU of the
 * activations (no libm calls: those are the host library's, spec/numerics.md §board-c-library).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void wfb_quantize_act(const float *x, int64_t n, int8_t *codes, float *scales);
void wfb_matvec(const int8_t *w, const uint16_t *sb, int64_t rows, int64_t cols,
                const int8_t *xc, const float *dx, int32_t form, float *y, int32_t threads);
void wfb_rmsnorm(const float *x, const float *w, int64_t n, int64_t count, float eps,
                 int32_t order, float *out);
int32_t wfb_silu_mul(const float *g, const float *u, int64_t n, float *out);

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    FILE *f = fopen(argv[1], "rb"), *o = fopen(argv[2], "wb");
    int64_t dims[2];
    if (!f || !o || fread(dims, 8, 2, f) != 2) return 3;
    int64_t rows = dims[0], cols = dims[1], nb = cols / 32;
    int8_t *w = malloc(rows * cols), *xc = malloc(cols);
    uint16_t *sb = malloc(rows * nb * 2);
    float *x = malloc(cols * 4), *dx = malloc(nb * 4), *y = malloc((rows + cols) * 4);
    if (fread(w, 1, rows * cols, f) != (size_t)(rows * cols)) return 4;
    if (fread(sb, 2, rows * nb, f) != (size_t)(rows * nb)) return 4;
    if (fread(x, 4, cols, f) != (size_t)cols) return 4;
    wfb_quantize_act(x, cols, xc, dx);
    for (int32_t form = 0; form < 3; form++) {
        wfb_matvec(w, sb, rows, cols, xc, dx, form, y, 3);
        fwrite(y, 4, rows, o);
    }
    for (int32_t order = 0; order < 2; order++) {
        wfb_rmsnorm(x, x, cols, 1, 1e-6f, order, y);
        fwrite(y, 4, cols, o);
    }
    if (wfb_silu_mul(x, x, cols, y)) return 5;
    fwrite(y, 4, cols, o);
    fclose(o);
    return 0;
}
