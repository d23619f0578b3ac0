/* Test driver for the forward-pass kernels under emulation (tests/fast/neon/test_neon_kernels.py).
 *
 * Built with the kernel sources of fast/csrc for aarch64 (-march=armv8.2-a+dotprod) and run
 * under qemu-aarch64, so the NEON / dotprod code paths execute on an x86 host. Usage:
 *   driver path                 print wf_simd_path() (2 = NEON + dotprod)
 *   driver OP IN OUT            run OP on the little-endian input file, write float32 results
 * IN starts with int64 parameters (per OP, below), then the arrays in the order listed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

void wf_quantize_activation(const float *x, int64_t n, int8_t *codes, float *scales);
void wf_matmat_q8_activation(const wf_matrix *m, const int8_t *xq, const float *xd, int64_t tokens,
                             float *y, int32_t threads);
void wf_matmat_f32(const wf_matrix *m, const float *x, int64_t tokens, float *y, int32_t threads);
void wf_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w, float eps,
                     float *out);
void wf_swiglu(const float *g, const float *u, int64_t n, float *out);
void wf_attend(const float *q, const float *keys, const float *values, int64_t npos,
               int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, float *scores,
               float *out);

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
    if (!strcmp(op, "q8act") || !strcmp(op, "f32")) {
        /* rows, cols, tokens, kind, group_rows, chunk_bytes, xor, nbytes, threads;
         * weights [nbytes], x [tokens * cols] */
        wf_matrix m;
        m.rows = param(), m.cols = param();
        int64_t tokens = param();
        m.kind = (int32_t)param(), m.group_rows = (int32_t)param();
        m.chunk_bytes = (int32_t)param(), m.xor_mask = (int32_t)param();
        int64_t nbytes = param(), threads = param();
        uint8_t *w = malloc((size_t)nbytes + 1);
        memcpy(w, take((size_t)nbytes), (size_t)nbytes);
        m.data = w;
        float *x = floats(tokens * m.cols);
        ny = tokens * m.rows;
        y = malloc(sizeof(float) * (size_t)(ny ? ny : 1));
        if (!strcmp(op, "f32")) {
            wf_matmat_f32(&m, x, tokens, y, (int32_t)threads);
        } else {
            int8_t *codes = malloc((size_t)(tokens * m.cols));
            float *scales = malloc(sizeof(float) * (size_t)(tokens * m.cols / WF_QK + 1));
            wf_quantize_activation(x, tokens * m.cols, codes, scales);
            wf_matmat_q8_activation(&m, codes, scales, tokens, y, (int32_t)threads);
        }
    } else if (!strcmp(op, "rmsnorm")) { /* rows, n, eps bits; x [rows * n], w [n] */
        int64_t rows = param(), n = param(), eps_bits = param();
        float eps;
        uint32_t b = (uint32_t)eps_bits;
        memcpy(&eps, &b, 4);
        float *x = floats(rows * n), *w = floats(n);
        ny = rows * n;
        y = malloc(sizeof(float) * (size_t)ny);
        wf_rmsnorm_rows(x, rows, n, w, eps, y);
    } else if (!strcmp(op, "swiglu")) { /* n; gate [n], up [n] */
        int64_t n = param();
        float *g = floats(n), *u = floats(n);
        ny = n;
        y = malloc(sizeof(float) * (size_t)n);
        wf_swiglu(g, u, n, y);
    } else if (!strcmp(op, "attend")) { /* npos, heads, kv_heads, head_dim; q, keys, values */
        int64_t npos = param(), heads = param(), kvh = param(), hd = param();
        float *q = floats(heads * hd), *k = floats(npos * kvh * hd), *v = floats(npos * kvh * hd);
        float *scores = malloc(sizeof(float) * (size_t)npos);
        ny = heads * hd;
        y = malloc(sizeof(float) * (size_t)ny);
        wf_attend(q, k, v, npos, kvh * hd, heads, kvh, hd, scores, y);
    } else {
        fprintf(stderr, "unknown op %s\n", op);
        return 2;
    }
    FILE *o = fopen(argv[3], "wb");
    if (!o || fwrite(y, sizeof(float), (size_t)ny, o) != (size_t)ny) return 2;
    fclose(o);
    return 0;
}
