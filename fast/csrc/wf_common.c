/* Helpers every forward-pass kernel shares: f16 widening, the canonical dot, row threads.
 *
 * wf_dot_f32 is spec/numerics.md §3.3: products rounded one by one, element i added to lane
 * i mod 8 in ascending i from +0.0, lanes combined by the fixed tree of §3.2. On NEON the eight
 * lanes are two float32x4 registers (lanes 0-3 and 4-7), so vaddq(lo, hi) is the tree's first
 * level; the portable loop is written lane-wise so that GCC turns it into the same 8-wide adds.
 */
#include <pthread.h>
#include <stdint.h>
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

/* A persistent pool of row workers: a decode step makes hundreds of products, and starting
 * threads for each cost more than the products themselves. One call runs at a time (`busy`);
 * worker i runs part i + 1 of each call, the caller part 0. Rows are independent (the contract
 * fixes the order inside a row), so any split gives the same bits. */
enum { MAX_THREADS = 64 };

static struct {
    pthread_mutex_t busy, mu;
    pthread_cond_t go, done;
    int workers;           /* threads started so far */
    unsigned long long generation;
    int pending;           /* parts of the current call not finished */
    wf_range_fn fn;
    void *ctx;
    int64_t n;
    int32_t parts;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 0, 0};

static void run_part(wf_range_fn fn, void *ctx, int64_t n, int32_t parts, int32_t i) {
    fn(ctx, n * i / parts, n * (i + 1) / parts);
}

static void *worker(void *arg) {
    const int32_t part = (int32_t)(intptr_t)arg;
    /* A worker is started by the call that first needs it, before that call's generation is
     * published (generations count from 1), so "nothing seen yet" makes it join that call. */
    unsigned long long seen = 0;
    pthread_mutex_lock(&pool.mu);
    for (;;) {
        while (pool.generation == seen) pthread_cond_wait(&pool.go, &pool.mu);
        seen = pool.generation;
        if (part >= pool.parts) continue; /* this call needs fewer workers */
        wf_range_fn fn = pool.fn;
        void *ctx = pool.ctx;
        const int64_t n = pool.n;
        const int32_t parts = pool.parts;
        pthread_mutex_unlock(&pool.mu);
        run_part(fn, ctx, n, parts, part);
        pthread_mutex_lock(&pool.mu);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* A forked child has none of the parent's workers (and maybe a held lock): start afresh. */
static void pool_after_fork(void) {
    pthread_mutex_init(&pool.busy, NULL);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.go, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.workers = 0;
    pool.pending = 0;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void register_fork_handler(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* Start workers until `want` exist (called with pool.mu held); returns how many exist. */
static int ensure_workers(int want) {
    pthread_once(&fork_once, register_fork_handler);
    while (pool.workers < want) {
        pthread_t tid;
        if (pthread_create(&tid, NULL, worker, (void *)(intptr_t)(pool.workers + 1)) != 0) break;
        pthread_detach(tid);
        pool.workers++;
    }
    return pool.workers;
}

void wf_parallel_for(int64_t n, int32_t threads, wf_range_fn fn, void *ctx) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if ((int64_t)threads > n) threads = (int32_t)n;
    if (threads <= 1) {
        fn(ctx, 0, n);
        return;
    }
    pthread_mutex_lock(&pool.busy);
    pthread_mutex_lock(&pool.mu);
    const int workers = ensure_workers(threads - 1);
    const int32_t parts = workers + 1 < threads ? workers + 1 : threads;
    pool.fn = fn, pool.ctx = ctx, pool.n = n, pool.parts = parts;
    pool.pending = parts - 1;
    pool.generation++;
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    run_part(fn, ctx, n, parts, 0);
    pthread_mutex_lock(&pool.mu);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
    pthread_mutex_unlock(&pool.busy);
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
