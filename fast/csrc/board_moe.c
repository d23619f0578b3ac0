/* The kestrel-board profile's Q8 MoE FFN in portable C (spec/numerics.md §board-moe).
 *
 * Operation for operation what ref/qwen3_moe/board/ffn.py computes: the router's
 * multiply-then-add chains, the insertion top-k, the softmax over the chosen logits with the
 * host libm's expf (called through a volatile pointer so it is never folded; the caller checks
 * that the host libm gives the board's bits, spec/numerics.md §board-c-library), the per-block FMA
 * chains of the expert products (C99 fmaf rounds once), the exact-form SiLU and the rank-order
 * combine. Built with -ffp-contract=off like every file in fast/csrc. Gate/up split over an
 * expert's rows and down over output rows, every row computed by one thread in the same order,
 * so the thread count never changes a bit; the combine is serial.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

enum { MOE_QB = 32, MOE_MAX_THREADS = 64 };

static float (*volatile moe_expf)(float) = expf;

/* One Q8_0 matrix's logical words: codes [rows, cols] int8, scales [rows, cols/32] f32 (the
 * f16 scales widened exactly), row stride `cols`. */
typedef struct {
    const int8_t *codes;
    const float *scales;
    int64_t cols;
} wfbm_q8;

typedef struct {
    wfbm_q8 m;
    int64_t row0;     /* first row of the band */
    int64_t col0;     /* first column of the band (a multiple of 32) */
    int64_t ncols;    /* columns of the band */
    const float *x;   /* [ncols] */
    float *y;         /* [rows of the band] */
} wfbm_job;

/* spec/numerics.md §board-moe-products per 32-column block o = fma(x[c], code[c], o) from 0,
 * then acc = fma(d_w, o, acc), blocks ascending. */
static void wfbm_rows(void *arg, int64_t begin, int64_t end) {
    const wfbm_job *j = (const wfbm_job *)arg;
    for (int64_t r = begin; r < end; r++) {
        const int8_t *w = j->m.codes + (j->row0 + r) * j->m.cols + j->col0;
        const float *s = j->m.scales + (j->row0 + r) * (j->m.cols / MOE_QB) + j->col0 / MOE_QB;
        float acc = 0.0f;
        for (int64_t b = 0; b < j->ncols / MOE_QB; b++) {
            float o = 0.0f;
            for (int c = 0; c < MOE_QB; c++)
                o = fmaf(j->x[b * MOE_QB + c], (float)w[b * MOE_QB + c], o);
            acc = fmaf(s[b], o, acc);
        }
        j->y[r] = acc;
    }
}

typedef struct {
    const wfbm_job *job;
    int64_t begin, end;
} wfbm_part;

static void *wfbm_run(void *arg) {
    wfbm_part *p = (wfbm_part *)arg;
    wfbm_rows((void *)p->job, p->begin, p->end);
    return NULL;
}

static int64_t wfbm_grain = 65536;

void wfbm_set_thread_grain(int64_t grain) { wfbm_grain = grain > 0 ? grain : 1; }

/* Rows [0, n) of a job on up to `threads` threads (contiguous ranges; a thread that cannot be
 * started runs on the caller: same rows, same result). */
static void wfbm_product(const wfbm_job *job, int64_t n, int32_t threads) {
    int64_t useful = n * job->ncols / wfbm_grain + 1;
    if (threads > useful) threads = (int32_t)useful;
    if (threads > MOE_MAX_THREADS) threads = MOE_MAX_THREADS;
    if (threads > n) threads = (int32_t)n;
    if (threads <= 1) {
        wfbm_rows((void *)job, 0, n);
        return;
    }
    pthread_t tid[MOE_MAX_THREADS];
    wfbm_part parts[MOE_MAX_THREADS];
    int started[MOE_MAX_THREADS];
    for (int32_t t = 0; t < threads; t++) {
        parts[t].job = job;
        parts[t].begin = n * t / threads;
        parts[t].end = n * (t + 1) / threads;
        started[t] = t > 0 && pthread_create(&tid[t], NULL, wfbm_run, &parts[t]) == 0;
    }
    wfbm_rows((void *)job, parts[0].begin, parts[0].end);
    for (int32_t t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tid[t], NULL);
        else
            wfbm_rows((void *)job, parts[t].begin, parts[t].end);
    }
}

/* spec/numerics.md §board-moe-router and §board-moe-topk: logits, then insertion into k ranked
 * slots (ahead when greater, or equal with a smaller index). */
static void wfbm_route(const float *x, int64_t d, const float *router, int64_t ne, int64_t k,
                       float *logits, int32_t *experts) {
    for (int64_t e = 0; e < ne; e++) {
        float acc = 0.0f;
        for (int64_t i = 0; i < d; i++) {
            float p = router[e * d + i] * x[i];
            acc = acc + p;
        }
        logits[e] = acc;
    }
    int64_t n = 0;
    for (int64_t e = 0; e < ne; e++) {
        int64_t pos = n;
        while (pos > 0 && (logits[e] > logits[experts[pos - 1]] ||
                           (logits[e] == logits[experts[pos - 1]] && e < experts[pos - 1])))
            pos--;
        if (pos >= k) continue;
        int64_t last = n < k ? n : k - 1;
        for (int64_t s = last; s > pos; s--) experts[s] = experts[s - 1];
        experts[pos] = (int32_t)e;
        if (n < k) n++;
    }
}

/* spec/numerics.md §board-moe: one token's Q8 MoE FFN with every intermediate. gate/up are the
 * layer's stacked [ne·ie, d] matrices, down its stacked [d, ne·ie]; expert e owns gate/up rows
 * [e·ie, (e+1)·ie) and down columns [e·ie, (e+1)·ie). Returns 1 (out zeroed, nothing else
 * written) when d or ie is not a multiple of 32 (spec/numerics.md §board-moe-defect), else 0. */
int32_t wfbm_moe_ffn(const float *x, int64_t d, const float *router, int64_t ne, int64_t k,
                     const int8_t *gate_codes, const float *gate_scales, const int8_t *up_codes,
                     const float *up_scales, const int8_t *down_codes, const float *down_scales,
                     int64_t ie, int32_t threads, float *logits, int32_t *experts, float *weights,
                     float *gate, float *up, float *act, float *partial, float *out) {
    memset(out, 0, (size_t)d * sizeof(float));
    if (d % MOE_QB != 0 || ie % MOE_QB != 0) return 1;
    wfbm_route(x, d, router, ne, k, logits, experts);
    float top = logits[experts[0]], sum = 0.0f;
    for (int64_t j = 0; j < k; j++) {
        weights[j] = moe_expf(logits[experts[j]] - top);
        sum = sum + weights[j];
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < k; j++) weights[j] = weights[j] * inv;
    for (int64_t j = 0; j < k; j++) {
        int64_t e = experts[j];
        float *g = gate + j * ie, *u = up + j * ie, *a = act + j * ie;
        wfbm_job jg = {{gate_codes, gate_scales, d}, e * ie, 0, d, x, g};
        wfbm_job ju = {{up_codes, up_scales, d}, e * ie, 0, d, x, u};
        wfbm_product(&jg, ie, threads);
        wfbm_product(&ju, ie, threads);
        for (int64_t i = 0; i < ie; i++) {
            float den = 1.0f + moe_expf(-g[i]);
            float q = g[i] / den;
            a[i] = q * u[i];
        }
        float *y = partial + j * d; /* the expert's down product first, then the combine */
        wfbm_job jd = {{down_codes, down_scales, ne * ie}, 0, e * ie, ie, a, y};
        wfbm_product(&jd, d, threads);
        for (int64_t r = 0; r < d; r++) {
            float p = weights[j] * y[r];
            out[r] = out[r] + p;
            y[r] = out[r];
        }
    }
    return 0;
}
