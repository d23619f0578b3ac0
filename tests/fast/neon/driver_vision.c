/* Test driver for fast/csrc/vision.c under emulation (tests/fast/neon/test_neon_vision.py).
 *
 * Built with every kernel source for aarch64 (-march=armv8.2-a+dotprod) and run under
 * qemu-aarch64, so the NEON paths the vision kernels call (the canonical dot, attention) and the
 * aarch64 libm the GELU estimates use run on an x86 host. Usage:
 *   driver_vision path          print wf_simd_path() (2 = NEON + dotprod)
 *   driver_vision OP IN OUT     run OP on the little-endian input file, write float32 results
 * IN starts with int64 parameters (per OP, below), then the arrays in the order listed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

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

static float *floats(int64_t n) {
    float *out = malloc(sizeof(float) * (size_t)(n ? n : 1));
    memcpy(out, take(sizeof(float) * (size_t)n), sizeof(float) * (size_t)n);
    return out;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "path") == 0) {
        printf("%d\n", (int)wf_simd_path());
        return 0;
    }
    if (argc != 4) return 2;
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    input_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    input = malloc(input_len + 1);
    if (fread(input, 1, input_len, f) != input_len) return 2;
    fclose(f);
    const char *op = argv[1];
    float *y = NULL;
    int64_t ny = 0;
    if (!strcmp(op, "layernorm")) { /* rows, n, eps bits, threads; x [rows*n], w [n], b [n] */
        int64_t rows = param(), n = param(), eps_bits = param(), threads = param();
        uint32_t e32 = (uint32_t)eps_bits;
        float eps;
        memcpy(&eps, &e32, 4);
        float *x = floats(rows * n), *w = floats(n), *b = floats(n);
        ny = rows * n;
        y = malloc(sizeof(float) * (size_t)(ny ? ny : 1));
        wf_layernorm_rows(x, rows, n, w, b, eps, y, (int32_t)threads);
    } else if (!strcmp(op, "gelu")) { /* n, kind, threads; x [n] -> out [n], then flags [n] */
        int64_t n = param(), kind = param(), threads = param();
        float *x = floats(n);
        uint8_t *flags = malloc((size_t)(n ? n : 1));
        ny = 2 * n;
        y = malloc(sizeof(float) * (size_t)(ny ? ny : 1));
        wf_gelu(x, n, (int32_t)kind, 0x1p-36, y, flags, (int32_t)threads);
        for (int64_t i = 0; i < n; i++) y[n + i] = (float)flags[i];
    } else if (!strcmp(op, "segments")) {
        /* tokens, heads, head_dim, threads, then seg_of[tokens], seg_len[tokens]; q, k, v */
        int64_t t = param(), heads = param(), hd = param(), threads = param();
        int64_t *seg_of = malloc(sizeof(int64_t) * (size_t)t), *seg_len = malloc(sizeof(int64_t) * (size_t)t);
        for (int64_t i = 0; i < t; i++) seg_of[i] = param();
        for (int64_t i = 0; i < t; i++) seg_len[i] = param();
        float *q = floats(t * heads * hd), *k = floats(t * heads * hd), *v = floats(t * heads * hd);
        ny = t * heads * hd;
        y = malloc(sizeof(float) * (size_t)ny);
        wf_attend_segments(q, k, v, t, heads, hd, seg_of, seg_len, y, (int32_t)threads);
    } else {
        fprintf(stderr, "unknown op %s\n", op);
        return 2;
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(y, sizeof(float), (size_t)ny, o) != (size_t)ny) return 2;
    fclose(o);
    return 0;
}
