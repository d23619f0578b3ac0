/* The kestrel-board numerics profile in portable C (spec/numerics.md §board).
 *
 * Every function here computes what ref/qwen3/board computes, operation for operation: the
 * same float32 roundings in the same order, fmaf() where the board fuses (C99 fmaf rounds once),
 * and the host C library's expf/cosf/sinf where the board calls its libm
 * (spec/numerics.md §board-c-library). The libm functions are called through volatile pointers so
 * the compiler can neither fold nor merge them (GCC would turn a cosf/sinf pair into sincosf, a
 * different routine). Built with -ffp-contract=off like every file in fast/csrc. Products split
 * over output rows only, so results do not depend on the thread count; their rows run in the
 * SIMD bodies of board_simd.c on the AVX2, AVX-512 and NEON paths (cpu.h), with the same bits.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "wf_kernels.h"

enum { QB = WFB_QB };

static float (*volatile board_expf)(float) = expf;
static float (*volatile board_cosf)(float) = cosf;
static float (*volatile board_sinf)(float) = sinf;

/* ---- threads: the canonical path's pool (wf_common.c wf_parallel_for) --------------------- */

typedef void (*wfb_range_fn)(void *ctx, int64_t begin, int64_t end);

/* `work` is the job's size in multiply-adds: at most a thread per `grain` of them (the canonical
 * path's policy, wf_threads_for), since handing a small product to a worker costs more than it
 * saves. The pool splits rows dynamically; each row is computed whole by one thread in the same
 * order, so the split never changes a result (tests set the grain to 1 so that tiny products
 * really run on several threads). */
static int64_t wfb_grain = 65536;

void wfb_set_thread_grain(int64_t grain) { wfb_grain = grain > 0 ? grain : 1; }

static void wfb_parallel(int64_t n, int32_t threads, int64_t work, wfb_range_fn fn, void *ctx) {
    wf_parallel_for(n, wf_threads_for(threads, work, wfb_grain), fn, ctx);
}

/* ---- spec/numerics.md §board-activations activation quantization ----------------------------- */

void wfb_quantize_act(const float *x, int64_t n, int8_t *codes, float *scales) {
    for (int64_t b = 0; b < n / QB; b++) {
        const float *v = x + b * QB;
        float amax = 1e-10f;
        for (int k = 0; k < QB; k++) {
            float a = fabsf(v[k]);
            if (a > amax) amax = a;
        }
        float d = amax / 127.0f;
        scales[b] = d;
        for (int k = 0; k < QB; k++) {
            float t = v[k] / d + 0.5f; /* two roundings: the divide, the add */
            t = truncf(t);
            if (t > 127.0f) t = 127.0f;
            if (t < -127.0f) t = -127.0f;
            codes[b * QB + k] = (int8_t)t;
        }
    }
}

/* ---- spec/numerics.md §board-products the products ------------------------------------------- */

static float wfb_f16(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, f = h & 0x3FF, bits;
    if (e == 0) {
        float v = (float)f * 0x1p-24f; /* subnormal: exact */
        return sign ? -v : v;
    }
    if (e == 31)
        bits = sign | 0x7F800000u | (f << 13);
    else
        bits = sign | ((e + 112) << 23) | (f << 13);
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

static int32_t wfb_idot(const int8_t *a, const int8_t *b, int lo, int hi) {
    int32_t s = 0;
    for (int k = lo; k < hi; k++) s += (int32_t)a[k] * (int32_t)b[k];
    return s;
}

static void wfb_mv_rows(void *ctx, int64_t r0, int64_t r1) {
    const wfb_mv *p = (const wfb_mv *)ctx;
    int64_t nb = p->cols / QB;
    for (int64_t r = wfb_mv_rows_simd(p, r0, r1); r < r1; r++) {
        const int8_t *wr = p->w + r * p->cols;
        const uint16_t *sr = p->sb + r * nb;
        float lo = 0.0f, hi = 0.0f, acc = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            const int8_t *wb = wr + b * QB, *xb = p->xc + b * QB;
            float s = wfb_f16(sr[b]) * p->dx[b];
            if (p->form == FORM_Q4_DECODE) {
                lo = fmaf((float)wfb_idot(wb, xb, 0, QB / 2), s, lo);
                hi = fmaf((float)wfb_idot(wb, xb, QB / 2, QB), s, hi);
            } else if (p->form == FORM_SINGLE_CHAIN) {
                acc = fmaf((float)wfb_idot(wb, xb, 0, QB), s, acc);
            } else {
                acc = acc + s * (float)wfb_idot(wb, xb, 0, QB);
            }
        }
        p->y[r] = p->form == FORM_Q4_DECODE ? lo + hi : acc;
    }
}

/* y[rows] from int8 weight codes [rows, cols], f16 scale bits [rows, cols/32], activation codes
 * [cols] and float32 scales [cols/32] (already f16-rounded by the caller for the GEMM forms). */
void wfb_matvec(const int8_t *w, const uint16_t *sb, int64_t rows, int64_t cols,
                const int8_t *xc, const float *dx, int32_t form, float *y, int32_t threads) {
    wfb_mv p = {w, sb, cols, xc, dx, form, y};
    wfb_parallel(rows, threads, rows * cols, wfb_mv_rows, &p);
}

/* ---- spec/numerics.md §board-rmsnorm RMSNorm ------------------------------------------------- */

static float wfb_sumsq_tree8(const float *x, int64_t n) {
    float ss = 0.0f;
    int64_t whole = n - n % 8, c;
    for (c = 0; c < whole; c += 8) {
        float v[8];
        for (int k = 0; k < 8; k++) v[k] = x[c + k] * x[c + k];
        float s01 = (v[0] + v[4]) + (v[1] + v[5]);
        float s23 = (v[2] + v[6]) + (v[3] + v[7]);
        ss = ss + (s01 + s23);
    }
    for (; c < n; c++) ss = ss + x[c] * x[c];
    return ss;
}

static float wfb_sumsq_sequential(const float *x, int64_t n) {
    float ss = 0.0f;
    for (int64_t i = 0; i < n; i++) ss = ss + x[i] * x[i];
    return ss;
}

/* order 0 tree8, 1 sequential; `count` vectors of n, each normed with the same weights. */
void wfb_rmsnorm(const float *x, const float *w, int64_t n, int64_t count, float eps,
                 int32_t order, float *out) {
    for (int64_t v = 0; v < count; v++) {
        const float *xv = x + v * n;
        float ss = order == 0 ? wfb_sumsq_tree8(xv, n) : wfb_sumsq_sequential(xv, n);
        float rms = 1.0f / sqrtf(ss / (float)n + eps);
        for (int64_t i = 0; i < n; i++) out[v * n + i] = (xv[i] * rms) * w[i];
    }
}

/* ---- spec/numerics.md §board-exp exp_neon4, reciprocal, SiLU --------------------------------- */

static float wfb_exp4_one(float x) {
    static const float taylor[7] = {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 1.0f / 2, 1.0f,
                                    1.0f};
    const float log2e = 1.4426950408889634f, ln2 = 0.6931471805599453f;
    if (x < -87.0f) x = -87.0f;
    if (x > 87.0f) x = 87.0f;
    float n = nearbyintf(x * log2e); /* nearest, ties to even (the default mode) */
    float r = fmaf(-n, ln2, x);
    float p = taylor[0];
    for (int k = 1; k < 7; k++) p = fmaf(p, r, taylor[k]);
    uint32_t bits;
    memcpy(&bits, &p, 4);
    bits += (uint32_t)((int32_t)n) << 23;
    memcpy(&p, &bits, 4);
    return p;
}

void wfb_exp_neon4(const float *x, int64_t n, float *out) {
    for (int64_t i = 0; i < n; i++) out[i] = wfb_exp4_one(x[i]);
}

/* FRECPE for positive normal d below 2**126; returns 0 and sets *bad outside that range. */
static float wfb_frecpe(float d, int *bad) {
    uint32_t bits;
    memcpy(&bits, &d, 4);
    uint32_t e = (bits >> 23) & 0xFF;
    if (e == 0 || e >= 253 || (bits >> 31)) {
        *bad = 1;
        return 0.0f;
    }
    uint32_t a = 256 + ((bits >> 15) & 0xFF);
    uint32_t b = (1u << 19) / (2 * a + 1);
    uint32_t r = (b + 1) / 2;
    uint32_t o = ((253 - e) << 23) | ((r & 0xFF) << 15);
    float out;
    memcpy(&out, &o, 4);
    return out;
}

/* Returns 1 (and leaves out partly written) when a reciprocal left the emulated range. */
int32_t wfb_reciprocal(const float *d, int64_t n, float *out) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float x = wfb_frecpe(d[i], &bad);
        for (int k = 0; k < 2; k++) x = x * fmaf(-d[i], x, 2.0f);
        out[i] = x;
    }
    return bad;
}

int32_t wfb_silu_mul(const float *g, const float *u, int64_t n, float *out) {
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float d = wfb_exp4_one(-g[i]) + 1.0f;
        float x = wfb_frecpe(d, &bad);
        for (int k = 0; k < 2; k++) x = x * fmaf(-d, x, 2.0f);
        out[i] = (g[i] * x) * u[i];
    }
    return bad;
}

/* ---- spec/numerics.md §board-rope RoPE ------------------------------------------------------- */

void wfb_rope(const float *x, int64_t heads, int64_t head_dim, int64_t pos,
              const float *inv_freq, float *out) {
    int64_t h = head_dim / 2;
    float c[256], s[256];
    for (int64_t j = 0; j < h; j++) c[j] = board_cosf((float)pos * inv_freq[j]);
    for (int64_t j = 0; j < h; j++) s[j] = board_sinf((float)pos * inv_freq[j]);
    for (int64_t t = 0; t < heads; t++) {
        const float *a = x + t * head_dim, *b = a + h;
        float *oa = out + t * head_dim, *ob = oa + h;
        for (int64_t j = 0; j < h; j++) {
            float aj = a[j], bj = b[j];
            oa[j] = aj * c[j] - bj * s[j];
            ob[j] = bj * c[j] + aj * s[j];
        }
    }
}

/* ---- spec/numerics.md §board-query, §board-kv-cache and §board-attention attention ----------- */

static float wfb_amax_or_one(const float *v, int64_t n) {
    float a = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float f = fabsf(v[i]);
        if (f > a) a = f;
    }
    return a < 1e-6f ? 1.0f : a;
}

/* One token's kv-head vectors [count, n]: int8 codes and scales amax·(1/127). */
void wfb_quantize_kv(const float *v, int64_t n, int64_t count, int8_t *codes, float *scales) {
    for (int64_t c = 0; c < count; c++) {
        const float *x = v + c * n;
        float a = wfb_amax_or_one(x, n), f = 127.0f / a;
        for (int64_t i = 0; i < n; i++) {
            float t = floorf(x[i] * f + 0.5f);
            if (t > 127.0f) t = 127.0f;
            if (t < -128.0f) t = -128.0f;
            codes[c * n + i] = (int8_t)t;
        }
        scales[c] = a * (1.0f / 127.0f);
    }
}

void wfb_quantize_query(const float *q, int64_t n, int8_t *codes, float *scales) {
    for (int64_t b = 0; b < n / QB; b++) {
        const float *x = q + b * QB;
        float qm = wfb_amax_or_one(x, QB), f = 127.0f / qm;
        for (int k = 0; k < QB; k++) {
            float t = x[k] * f;
            double a = floor((double)fabsf(t) + 0.5); /* half away from zero, exactly */
            double c = t < 0 ? -a : a;
            if (c > 127.0) c = 127.0;
            if (c < -128.0) c = -128.0;
            codes[b * QB + k] = (int8_t)c;
        }
        scales[b] = qm * (1.0f / 127.0f);
    }
}

typedef struct {
    const float *q;
    const int8_t *k8, *v8;
    const float *ks, *vs, *k32, *v32;
    int64_t upto, heads, kv_heads, head_dim;
    float scale;
    float *out, *work; /* work: upto floats per head (prefill scores) */
} wfb_att;

static void wfb_decode_heads(void *ctx, int64_t h0, int64_t h1) {
    const wfb_att *p = (const wfb_att *)ctx;
    int64_t hd = p->head_dim, nb = hd / QB;
    for (int64_t h = h0; h < h1; h++) {
        int64_t g = h * p->kv_heads / p->heads;
        int8_t qc[256];
        float qs[8];
        wfb_quantize_query(p->q + h * hd, hd, qc, qs);
        float m = -1e9f, ssum = 0.0f, *out = p->out + h * hd;
        for (int64_t i = 0; i < hd; i++) out[i] = 0.0f;
        for (int64_t t = 0; t < p->upto; t++) {
            const int8_t *kc = p->k8 + (t * p->kv_heads + g) * hd;
            float s = 0.0f;
            for (int64_t b = 0; b < nb; b++)
                s = s + (float)wfb_idot(qc + b * QB, kc + b * QB, 0, QB) * qs[b];
            s = (s * p->ks[t * p->kv_heads + g]) * p->scale;
            float w;
            if (s > m) {
                float ms = board_expf(m - s);
                ssum = ssum * ms;
                for (int64_t i = 0; i < hd; i++) out[i] = out[i] * ms;
                w = 1.0f;
                m = s;
            } else {
                w = board_expf(s - m);
            }
            ssum = ssum + w;
            float wv = w * p->vs[t * p->kv_heads + g];
            const int8_t *vc = p->v8 + (t * p->kv_heads + g) * hd;
            for (int64_t i = 0; i < hd; i++) out[i] = fmaf((float)vc[i], wv, out[i]);
        }
        if (ssum > 0) {
            float inv = 1.0f / ssum;
            for (int64_t i = 0; i < hd; i++) out[i] = out[i] * inv;
        }
    }
}

static float wfb_dot_lanes4(const float *a, const float *b, int64_t n) {
    float l[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    int64_t whole = n - n % 4, i;
    for (i = 0; i < whole; i += 4)
        for (int j = 0; j < 4; j++) l[j] = fmaf(a[i + j], b[i + j], l[j]);
    float acc = (l[0] + l[2]) + (l[1] + l[3]);
    for (; i < n; i++) acc = fmaf(a[i], b[i], acc);
    return acc;
}

static void wfb_prefill_heads(void *ctx, int64_t h0, int64_t h1) {
    const wfb_att *p = (const wfb_att *)ctx;
    int64_t hd = p->head_dim, n = p->upto, n4 = n - n % 4;
    for (int64_t h = h0; h < h1; h++) {
        int64_t g = h * p->kv_heads / p->heads;
        const float *q = p->q + h * hd;
        float *x = p->work + h * n, m = -1e9f, *out = p->out + h * hd;
        for (int64_t t = 0; t < n; t++) {
            x[t] = wfb_dot_lanes4(q, p->k32 + (t * p->kv_heads + g) * hd, hd) * p->scale;
            if (x[t] > m) m = x[t];
        }
        for (int64_t t = 0; t < n; t++) x[t] = x[t] - m;
        for (int64_t t = 0; t < n; t++) x[t] = t < n4 ? wfb_exp4_one(x[t]) : board_expf(x[t]);
        float total = 0.0f;
        for (int64_t t = 0; t < n4; t += 4)
            total = total + ((x[t] + x[t + 2]) + (x[t + 1] + x[t + 3]));
        for (int64_t t = n4; t < n; t++) total = total + x[t];
        float inv = 1.0f / total;
        for (int64_t i = 0; i < hd; i++) out[i] = 0.0f;
        for (int64_t t = 0; t < n; t++) {
            float w = x[t] * inv;
            const float *v = p->v32 + (t * p->kv_heads + g) * hd;
            for (int64_t i = 0; i < hd; i++) out[i] = fmaf(w, v[i], out[i]);
        }
    }
}

/* Decode attention over the INT8 cache (k8/v8 [upto, kv_heads, head_dim], ks/vs [upto,
 * kv_heads]); head_dim a multiple of 32, at most 256. Heads are independent: split over them. */
void wfb_attn_decode(const float *q, const int8_t *k8, const int8_t *v8, const float *ks,
                     const float *vs, int64_t upto, int64_t heads, int64_t kv_heads,
                     int64_t head_dim, float scale, float *out, int32_t threads) {
    wfb_att p = {q, k8, v8, ks, vs, NULL, NULL, upto, heads, kv_heads, head_dim, scale, out, NULL};
    wfb_parallel(heads, threads, 2 * heads * upto * head_dim, wfb_decode_heads, &p);
}

/* Prefill attention over the float32 cache; work holds heads*upto floats. */
void wfb_attn_prefill(const float *q, const float *k32, const float *v32, int64_t upto,
                      int64_t heads, int64_t kv_heads, int64_t head_dim, float scale, float *out,
                      float *work, int32_t threads) {
    wfb_att p = {q, NULL, NULL, NULL, NULL, k32, v32, upto, heads, kv_heads, head_dim, scale,
                 out, work};
    wfb_parallel(heads, threads, 2 * heads * upto * head_dim, wfb_prefill_heads, &p);
}
