/* Test driver for the per-layer operations' NEON forms under emulation (test_neon_ops.py).
 *
 * Built with every kernel source of fast/csrc for aarch64 and run under qemu-aarch64, so
 * ops_body.h's NEON instantiation executes on an x86 host. Usage:
 *   driver_ops path             print wf_simd_path() (2 = NEON + dotprod)
 *   driver_ops OP IN OUT        run OP on the little-endian input file, write float32 results
 * IN starts with int64 parameters (per OP, below), then float32 arrays in the order listed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

void wf_attend_group(const float *q, const float *keys, const float *values, int64_t npos,
                     int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t g,
                     float *scores, float *out);
void wf_norm_rope(const float *x, int64_t tokens, int64_t heads, int64_t head_dim, const float *w,
                  float eps, const float *cos, const float *sin, float *normed, float *rotated);
void wf_exp_array(const float *x, int64_t n, float *out);

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
    input = malloc(input_len ? input_len : 1);
    if (fread(input, 1, input_len, f) != input_len) return 2;
    fclose(f);
    const char *op = argv[1];
    float *y;
    int64_t ny;
    if (!strcmp(op, "attend_group")) { /* npos, heads, kv_heads, head_dim; q, keys, values */
        int64_t npos = param(), heads = param(), kvh = param(), hd = param();
        float *q = floats(heads * hd), *k = floats(npos * kvh * hd), *v = floats(npos * kvh * hd);
        float *scores = malloc(sizeof(float) * (size_t)(npos * (heads / kvh)));
        ny = heads * hd;
        y = malloc(sizeof(float) * (size_t)ny);
        for (int64_t g = 0; g < kvh; g++)
            wf_attend_group(q, k, v, npos, kvh * hd, heads, kvh, hd, g, scores, y);
    } else if (!strcmp(op, "norm_rope")) { /* tokens, heads, head_dim, eps bits; x, w, cos, sin */
        int64_t tokens = param(), heads = param(), hd = param(), eps_bits = param();
        float eps;
        uint32_t b = (uint32_t)eps_bits;
        memcpy(&eps, &b, 4);
        float *x = floats(tokens * heads * hd), *w = floats(hd);
        float *c = floats(tokens * hd / 2), *s = floats(tokens * hd / 2);
        ny = 2 * tokens * heads * hd; /* normed, then rotated */
        y = malloc(sizeof(float) * (size_t)ny);
        wf_norm_rope(x, tokens, heads, hd, w, eps, c, s, y, y + ny / 2);
    } else if (!strcmp(op, "exp")) { /* n; x */
        int64_t n = param();
        float *x = floats(n);
        ny = n;
        y = malloc(sizeof(float) * (size_t)(n ? n : 1));
        wf_exp_array(x, n, y);
    } else {
        fprintf(stderr, "unknown op %s\n", op);
        return 2;
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(y, sizeof(float), (size_t)ny, o) != (size_t)ny) return 2;
    fclose(o);
    return 0;
}
