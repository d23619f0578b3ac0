/* The board MoE FFN under emulation: fast/csrc/board_moe.c built for aarch64 (with every other
 * kernel source, as tests/emulated builds them) and run under qemu-aarch64 with the aarch64 libm.
 *   moe_driver path           print wf_simd_path()
 *   moe_driver moe IN OUT     IN: int64 d, ne, k, ie, threads; then float32 x [d], router
 *                             [ne, d], gate/up/down scales; int8 codes as raw bytes (see below).
 * OUT: float32 logits [ne], experts [k] (as float), weights [k], gate, up, act [k, ie],
 * partial [k, d], out [d].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "driver_io.h"

int32_t wfbm_moe_ffn(const float *x, int64_t d, const float *router, int64_t ne, int64_t k,
                     const int8_t *gate_codes, const float *gate_scales, const int8_t *up_codes,
                     const float *up_scales, const int8_t *down_codes, const float *down_scales,
                     int64_t ie, int32_t threads, float *logits, int32_t *experts, float *weights,
                     float *gate, float *up, float *act, float *partial, float *out);

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "path") == 0) {
        printf("%d\n", (int)wf_simd_path());
        return 0;
    }
    if (argc != 4 || strcmp(argv[1], "moe") != 0 || read_input(argv[2]) != 0) return 2;
    int64_t d = param(), ne = param(), k = param(), ie = param(), threads = param();
    size_t rows = (size_t)(ne * ie), nb = (size_t)(d / 32), nbd = (size_t)(ne * ie / 32);
    float *x = copy((size_t)d * 4), *router = copy((size_t)(ne * d) * 4);
    float *gs = copy(rows * nb * 4), *us = copy(rows * nb * 4), *ds = copy((size_t)d * nbd * 4);
    int8_t *gc = copy(rows * (size_t)d), *uc = copy(rows * (size_t)d);
    int8_t *dc = copy((size_t)d * rows);
    size_t n = (size_t)(ne + 2 * k + 3 * k * ie + k * d + d);
    float *y = calloc(n, 4);
    float *logits = y, *ex = y + ne, *w = ex + k, *g = w + k, *u = g + k * ie, *a = u + k * ie;
    float *partial = a + k * ie, *out = partial + k * d;
    int32_t *ids = calloc((size_t)k, 4);
    wfbm_moe_ffn(x, d, router, ne, k, gc, gs, uc, us, dc, ds, ie, (int32_t)threads, logits, ids, w,
                 g, u, a, partial, out);
    for (int64_t j = 0; j < k; j++) ex[j] = (float)ids[j];
    return write_floats(argv[3], y, n);
}
