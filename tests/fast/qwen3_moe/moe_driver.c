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

int32_t wfbm_moe_ffn(const float *x, int64_t d, const float *router, int64_t ne, int64_t k,
                     const int8_t *gate_codes, const float *gate_scales, const int8_t *up_codes,
                     const float *up_scales, const int8_t *down_codes, const float *down_scales,
                     int64_t ie, int32_t threads, float *logits, int32_t *experts, float *weights,
                     float *gate, float *up, float *act, float *partial, float *out);

static uint8_t *input;
static size_t input_len, at;

static void *take(size_t n) {
    if (at + n > input_len) {
        fprintf(stderr, "input too short\n");
        exit(2);
    }
    void *p = input + at;
    at += n;
    return p;
}

static int64_t param(void) {
    int64_t v;
    memcpy(&v, take(8), 8);
    return v;
}

static void *copy(size_t n) {
    void *p = malloc(n ? n : 1);
    memcpy(p, take(n), n);
    return p;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "path") == 0) {
        printf("%d\n", (int)wf_simd_path());
        return 0;
    }
    if (argc != 4 || strcmp(argv[1], "moe") != 0) return 2;
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    input_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    input = malloc(input_len ? input_len : 1);
    if (fread(input, 1, input_len, f) != input_len) return 2;
    fclose(f);
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
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(y, 4, n, o) != n) return 2;
    fclose(o);
    return 0;
}
