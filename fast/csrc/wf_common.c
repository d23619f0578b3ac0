/* Helpers every forward-pass kernel shares: f16 widening, the canonical dot, row threads.
 *
 * wf_dot_f32 is spec/numerics.md §3.3: products rounded one by one, element i added to lane
 * i mod 8 in ascending i from +0.0, lanes combined by the fixed tree of §3.2. On NEON the eight
 * lanes are two float32x4 registers (lanes 0-3 and 4-7), so vaddq(lo, hi) is the tree's first
 * level; the portable loop is written lane-wise so that GCC turns it into the same 8-wide adds.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

static float float_from_bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* IEEE binary16 fields moved into binary32 ones; subnormals are m * 2^-24, exact. */
static float widen(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e5 = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e5 == 0x1Fu) return float_from_bits(sign | 0x7F800000u | (m << 13));
    if (e5 != 0) return float_from_bits(sign | ((e5 + 112u) << 23) | (m << 13));
    float mag = (float)m * 0x1p-24f;
    return sign ? -mag : mag;
}

static void fill_f16_table(void) {
    for (uint32_t h = 0; h < 65536u; h++) f16_table[h] = widen((uint16_t)h);
}

const float *wf_f16_table(void) {
    pthread_once(&f16_once, fill_f16_table);
    return f16_table;
}

float wf_f16_to_f32(uint16_t h) { return wf_f16_table()[h]; }

float wf_dot_f32(const float *a, const float *b, int64_t n) {
    int64_t i = 0;
#if defined(__ARM_NEON)
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (; i + WF_LANES <= n; i += WF_LANES) {
        lo = vaddq_f32(lo, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
        hi = vaddq_f32(hi, vmulq_f32(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4)));
    }
    float l[WF_LANES];
    vst1q_f32(l, lo);
    vst1q_f32(l + 4, hi);
#else
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (; i + WF_LANES <= n; i += WF_LANES)
        for (int j = 0; j < WF_LANES; j++) l[j] = l[j] + a[i + j] * b[i + j];
#endif
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + a[i] * b[i];
    return wf_combine_lanes(l);
}

typedef struct {
    wf_range_fn fn;
    void *ctx;
    int64_t begin, end;
} range_job;

static void *run_range(void *arg) {
    range_job *job = arg;
    job->fn(job->ctx, job->begin, job->end);
    return NULL;
}

/* Rows are independent (the contract fixes the order inside a row), so any split gives the same
 * bits; the caller's thread takes the first part. A failed pthread_create runs its part inline. */
void wf_parallel_for(int64_t n, int32_t threads, wf_range_fn fn, void *ctx) {
    if (threads > 64) threads = 64;
    if ((int64_t)threads > n) threads = (int32_t)n;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return;
    }
    range_job jobs[64];
    pthread_t tids[64];
    int started[64] = {0};
    for (int32_t t = 0; t < threads; t++) {
        jobs[t] = (range_job){fn, ctx, n * t / threads, n * (t + 1) / threads};
    }
    for (int32_t t = 1; t < threads; t++)
        started[t] = pthread_create(&tids[t], NULL, run_range, &jobs[t]) == 0;
    run_range(&jobs[0]);
    for (int32_t t = 1; t < threads; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            run_range(&jobs[t]);
    }
}

int32_t wf_simd_path(void) {
#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
    return 2;
#elif defined(__ARM_NEON)
    return 1;
#else
    return wf_x86_avx2() ? 3 : 0;
#endif
}
