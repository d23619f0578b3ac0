/* The one test driver of the kernels under emulation (tests/fast/neon/, conftest.py builds it).
 *
 * Built with every kernel source of fast/csrc for aarch64 (-march=armv8.2-a+dotprod) and run
 * under qemu-aarch64, so the NEON / dotprod paths (the products, the per-layer operations of
 * ops_body.h, the vision kernels) and the aarch64 libm execute on an x86 host. Usage:
 *   driver path                 print wf_simd_path() (2 = NEON + dotprod)
 *   driver OP IN OUT            run OP on the little-endian input file, write float32 results
 *                               (env WF_DRIVER_ISA: force that kernel path, cpu.h's WF_ISA_*)
 * IN starts with int64 parameters (per OP, below), then the arrays in the order listed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_io.h"
#include "wf_kernels.h"

/* kernel entry points not declared in wf_kernels.h (the library's ctypes surface) */
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
void wf_attend_group(const float *q, const float *keys, const float *values, int64_t npos,
                     int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t g,
                     float *scores, float *out);
void wf_norm_rope(const float *x, int64_t tokens, int64_t heads, int64_t head_dim, const float *w,
                  float eps, const float *cos, const float *sin, float *normed, float *rotated);
void wf_exp_array(const float *x, int64_t n, float *out);
void wf_attend_tile(const float *q, int64_t qd, const float *keys, const float *values,
                    int64_t stride, const int64_t *slots, int64_t t0, int64_t t1, int64_t heads,
                    int64_t kv_heads, int64_t head_dim, int64_t g, float *scores, float *att);

/* the board vision tower (board_vision.c, fast/qwen3_vl/board/ops.py's ctypes surface) */
void wfv_gelu(const float *x, int64_t n, float *y, int32_t threads);
void wfv_tanhf(const float *x, int64_t n, float *y);
void wfv_patch_embed(const float *rows, int64_t patches, int64_t k, const float *w,
                     const float *b, int64_t out, float *y, int32_t threads);
void wfv_q8_linear(const int8_t *xc, const float *d16, int64_t patches, int64_t k,
                   const int8_t *wc, const float *dw, int64_t rows, const float *bias, float *y,
                   int32_t threads);
int32_t wfv_attention(const float *q, const float *k, const float *v, int64_t n, int64_t hd,
                      float scale, float *out, float *scores, int32_t threads);
void wfv_dense_linear(const float *x, int64_t tokens, int64_t k, const float *w, int64_t rows,
                      const float *b, float *y, int32_t threads);

static float f32_of_bits(int64_t bits) { /* a float32 parameter, passed as its bit pattern */
    const uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
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
    if (argc != 4 || read_input(argv[2]) != 0) return 2;
    /* WF_DRIVER_ISA=1: the NEON path without dotprod (the build's best path otherwise) */
    const char *isa = getenv("WF_DRIVER_ISA");
    if (isa != NULL && wf_set_isa((int32_t)atoi(isa)) != 0) return 2;
    const char *op = argv[1];
    float *y = NULL;
    int64_t ny = 0;
    if (!strcmp(op, "q8act") || !strcmp(op, "f32") || !strcmp(op, "q8band")) {
        /* rows, cols, tokens, kind, group_rows, chunk_bytes, xor, nbytes, threads (q8band: then
         * the band's byte offset and its row-group stride: a column band read in place);
         * weights [nbytes], x [tokens * cols] */
        wf_matrix m;
        m.rows = param(), m.cols = param();
        int64_t tokens = param();
        m.kind = (int32_t)param(), m.group_rows = (int32_t)param();
        m.chunk_bytes = (int32_t)param(), m.xor_mask = (int32_t)param();
        int64_t nbytes = param(), threads = param();
        const int band = !strcmp(op, "q8band");
        const int64_t offset = band ? param() : 0;
        m.group_stride = band ? param() : 0;
        uint8_t *w = malloc((size_t)nbytes + 1);
        memcpy(w, take((size_t)nbytes), (size_t)nbytes);
        m.data = w + offset;
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
        int64_t rows = param(), n = param();
        const float eps = f32_of_bits(param());
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
    } else if (!strcmp(op, "layernorm")) { /* rows, n, eps bits, threads; x [rows*n], w [n], b [n] */
        int64_t rows = param(), n = param();
        const float eps = f32_of_bits(param());
        int64_t threads = param();
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
    } else if (!strcmp(op, "attend_group")) { /* npos, heads, kv_heads, head_dim; q, keys, values */
        int64_t npos = param(), heads = param(), kvh = param(), hd = param();
        float *q = floats(heads * hd), *k = floats(npos * kvh * hd), *v = floats(npos * kvh * hd);
        float *scores = malloc(sizeof(float) * (size_t)(npos * (heads / kvh)));
        ny = heads * hd;
        y = malloc(sizeof(float) * (size_t)ny);
        for (int64_t g = 0; g < kvh; g++)
            wf_attend_group(q, k, v, npos, kvh * hd, heads, kvh, hd, g, scores, y);
    } else if (!strcmp(op, "attend_tile")) {
        /* tokens, npos, heads, kv_heads, head_dim, slots [tokens]; q [tokens, heads·hd], keys,
         * values [npos, kv_heads·hd] -> att [tokens, heads·hd], every kv head, one tile */
        int64_t tokens = param(), npos = param(), heads = param(), kvh = param(), hd = param();
        int64_t *slots = malloc(sizeof(int64_t) * (size_t)tokens);
        for (int64_t t = 0; t < tokens; t++) slots[t] = param();
        float *q = floats(tokens * heads * hd), *k = floats(npos * kvh * hd);
        float *v = floats(npos * kvh * hd);
        float *scores = malloc(sizeof(float) * (size_t)(tokens * heads * npos));
        ny = tokens * heads * hd;
        y = malloc(sizeof(float) * (size_t)ny);
        for (int64_t g = 0; g < kvh; g++)
            wf_attend_tile(q, heads * hd, k, v, kvh * hd, slots, 0, tokens, heads, kvh, hd, g,
                           scores, y);
    } else if (!strcmp(op, "norm_rope")) { /* tokens, heads, head_dim, eps bits; x, w, cos, sin */
        int64_t tokens = param(), heads = param(), hd = param();
        const float eps = f32_of_bits(param());
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
    } else if (!strcmp(op, "nf_matmat")) {
        /* rows, cols, tokens, kind, code_bits, group, base_bytes, high_bytes, base_bits, gpr,
         * high_offset, scale_offset, nbytes, threads; payload [nbytes], lut [256], x */
        wf_nf_matrix m;
        m.row0 = 0, m.rows = param(), m.cols = param();
        int64_t tokens = param();
        m.kind = (int32_t)param(), m.code_bits = (int32_t)param(), m.group = (int32_t)param();
        m.base_bytes = (int32_t)param(), m.high_bytes = (int32_t)param();
        m.base_bits = (int32_t)param();
        m.gpr = param(), m.high_offset = param(), m.scale_offset = param();
        int64_t nbytes = param(), threads = param();
        uint8_t *w = malloc((size_t)nbytes + 1);
        memcpy(w, take((size_t)nbytes), (size_t)nbytes);
        m.data = w, m.lut = floats(256);
        float *x = floats(tokens * m.cols);
        ny = tokens * m.rows;
        y = malloc(sizeof(float) * (size_t)(ny ? ny : 1));
        wf_nf_matmat(&m, x, tokens, y, m.rows, (int32_t)threads);
    } else if (!strcmp(op, "gdn_step")) {
        /* hv, hk, dk, dv; states [hv dk dv], q, k [hk dk], v [hv dv], decay, beta [hv]
         * -> out [hv dv], then the updated states */
        int64_t hv = param(), hk = param(), dk = param(), dv = param();
        float *states = floats(hv * dk * dv), *q = floats(hk * dk), *k = floats(hk * dk);
        float *v = floats(hv * dv), *decay = floats(hv), *beta = floats(hv);
        ny = hv * dv + hv * dk * dv;
        y = malloc(sizeof(float) * (size_t)ny);
        if (wf_gdn_step(states, q, k, v, decay, beta, hv, hk, dk, dv, y)) return 2;
        memcpy(y + hv * dv, states, sizeof(float) * (size_t)(hv * dk * dv));
    } else if (!strcmp(op, "bv_tanhf")) { /* n; x */
        int64_t n = param();
        float *x = floats(n);
        ny = n;
        y = malloc(sizeof(float) * (size_t)(n ? n : 1));
        wfv_tanhf(x, n, y);
    } else if (!strcmp(op, "bv_gelu")) { /* n, threads; x */
        int64_t n = param(), threads = param();
        float *x = floats(n);
        ny = n;
        y = malloc(sizeof(float) * (size_t)(n ? n : 1));
        wfv_gelu(x, n, y, (int32_t)threads);
    } else if (!strcmp(op, "bv_patch")) { /* patches, k, out, threads; rows, w [out k], b */
        int64_t p = param(), k = param(), out = param(), threads = param();
        float *x = floats(p * k), *w = floats(out * k), *b = floats(out);
        ny = p * out;
        y = malloc(sizeof(float) * (size_t)ny);
        wfv_patch_embed(x, p, k, w, b, out, y, (int32_t)threads);
    } else if (!strcmp(op, "bv_dense")) { /* tokens, k, rows, threads; x, w [rows k], b */
        int64_t t = param(), k = param(), rows = param(), threads = param();
        float *x = floats(t * k), *w = floats(rows * k), *b = floats(rows);
        ny = t * rows;
        y = malloc(sizeof(float) * (size_t)ny);
        wfv_dense_linear(x, t, k, w, rows, b, y, (int32_t)threads);
    } else if (!strcmp(op, "bv_attend")) { /* n, hd, scale bits, threads; q, k, v -> out, scores */
        int64_t n = param(), hd = param();
        const float scale = f32_of_bits(param());
        int64_t threads = param();
        float *q = floats(n * hd), *k = floats(n * hd), *v = floats(n * hd);
        ny = n * hd + n * n;
        y = malloc(sizeof(float) * (size_t)ny);
        if (wfv_attention(q, k, v, n, hd, scale, y, y + n * hd, (int32_t)threads)) return 2;
    } else if (!strcmp(op, "bv_q8")) {
        /* patches, k, rows, threads; codes [p k] bytes, d16 [p k/32], wc [rows k] bytes,
         * dw [rows k/32], bias [rows] */
        int64_t p = param(), k = param(), rows = param(), threads = param();
        int8_t *xc = copy((size_t)(p * k));
        float *d16 = floats(p * (k / 32));
        int8_t *wc = copy((size_t)(rows * k));
        float *dw = floats(rows * (k / 32)), *bias = floats(rows);
        ny = p * rows;
        y = malloc(sizeof(float) * (size_t)ny);
        wfv_q8_linear(xc, d16, p, k, wc, dw, rows, bias, y, (int32_t)threads);
    } else {
        fprintf(stderr, "unknown op %s\n", op);
        return 2;
    }
    return write_floats(argv[3], y, (size_t)ny);
}
