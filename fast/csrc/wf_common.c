/* Helpers every forward-pass kernel shares: f16 widening, the canonical dot, row threads, and the
 * fetch of one row's block from a file-encoded (possibly tiled) matrix.
 *
 * wf_dot_f32 is spec/numerics.md §dot: products rounded one by one, element i added to lane
 * i mod 8 in ascending i from +0.0, lanes combined by the fixed tree of
 * spec/numerics.md §combining-tree. On NEON the eight lanes are two float32x4 registers (lanes 0-3
 * and 4-7), so vaddq(lo, hi) is the tree's first level; the portable loop is written lane-wise so
 * that GCC turns it into the same 8-wide adds.
 */
#include <pthread.h>
#include <stdatomic.h>
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
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#if defined(__ARM_NEON)
    if (wf_isa() != WF_ISA_PORTABLE) {
        float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
        for (; i + WF_LANES <= n; i += WF_LANES) {
            lo = vaddq_f32(lo, vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)));
            hi = vaddq_f32(hi, vmulq_f32(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4)));
        }
        vst1q_f32(l, lo);
        vst1q_f32(l + 4, hi);
    }
#endif
    for (; i + WF_LANES <= n; i += WF_LANES)
        for (int j = 0; j < WF_LANES; j++) l[j] = l[j] + a[i + j] * b[i + j];
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + a[i] * b[i];
    return wf_combine_lanes(l);
}

/* A persistent pool of row workers: a decode step makes hundreds of products, and starting
 * threads for each cost more than the products themselves. One call runs at a time (`busy`).
 * Rows are independent (the contract fixes the order inside a row), so any split gives the
 * same bits, and the split is dynamic: the caller and the workers claim chunks of rows,
 * CHUNK_ALIGN-aligned (whole row groups of every tiling), from a shared counter until none are
 * left. A worker that is descheduled (a shared machine, or a little core of a big.LITTLE board)
 * then delays a call by one chunk, not by half of it. The counter carries the call's generation in
 * its top bits, so a worker that wakes after its call ended cannot claim rows of the next one with
 * the old call's arguments.
 *
 * Waking a sleeping thread costs tens of microseconds, about as much as a small product, and a
 * decode step's products come a few tens of microseconds apart. So a worker spins (2^18 loads, a
 * few hundred microseconds: 2^15 was too short to bridge the Python between products) on
 * the call sequence before it sleeps on the condition variable, and the caller spins on the count
 * of finished rows before it sleeps. (No PAUSE in the spin: on this VM it made two threads 4x
 * slower, most likely through the hypervisor's pause-loop exits; not verified further.) */
enum { MAX_THREADS = 64, SPIN_ROUNDS = 1 << 18, CHUNK_ALIGN = 8, CHUNKS_PER_THREAD = 8 };
#define ROW_BITS 40 /* rows of one call < 2^40; the generation tag takes the other 24 bits */
#define ROW_MASK ((1ULL << ROW_BITS) - 1)

/* A call's parameters are published like a seqlock, so a spinning worker reads them without
 * taking pool.mu: seq is odd while the caller writes them and 2 x the call's generation after.
 * (Taking the lock there often meant a sleep: a worker spinning on the generation saw it change
 * while the caller still held the lock for the broadcast, blocked on the futex and was woken by
 * the caller's unlock. `strace -f -c` of a 2-thread tg64 bench: 18,549 futex calls before, 1,884
 * after; tokens/s did not move beyond the noise on the Intel guest where it was measured.) The
 * mutex and condition variables remain for sleeping only. */
static struct {
    pthread_mutex_t busy, mu;
    pthread_cond_t go, done;
    int workers; /* threads started so far */
    _Atomic unsigned long long seq;
    _Atomic unsigned long long next; /* generation << ROW_BITS | first unclaimed row */
    _Atomic int64_t finished;        /* rows of the current call done */
    _Atomic(wf_range_fn) fn;
    _Atomic(void *) ctx;
    _Atomic int64_t n, chunk;
    _Atomic int32_t parts;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL, NULL, 0, 0, 0};

#define RELAXED memory_order_relaxed

static inline void compiler_barrier(void) { __asm__ __volatile__("" ::: "memory"); }

/* Claim and run chunks of call `gen` until none are left; returns the rows this thread ran. */
static void run_chunks(unsigned long long gen, wf_range_fn fn, void *ctx, int64_t n,
                       int64_t chunk, int signal_last) {
    const unsigned long long tag = (gen << ROW_BITS) & ~ROW_MASK;
    unsigned long long v = atomic_load(&pool.next);
    for (;;) {
        if ((v & ~ROW_MASK) != tag || (int64_t)(v & ROW_MASK) >= n) return;
        if (!atomic_compare_exchange_weak(&pool.next, &v, v + (unsigned long long)chunk)) continue;
        const int64_t begin = (int64_t)(v & ROW_MASK);
        const int64_t end = begin + chunk < n ? begin + chunk : n;
        fn(ctx, begin, end);
        const int64_t done = atomic_fetch_add(&pool.finished, end - begin) + (end - begin);
        if (done == n && signal_last) { /* the last rows of the call: wake the caller */
            pthread_mutex_lock(&pool.mu);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
        v = atomic_load(&pool.next);
    }
}

static void *worker(void *arg) {
    const int32_t part = (int32_t)(intptr_t)arg;
    /* A worker is started by the call that first needs it, before that call's generation is
     * published (generations count from 1), so "nothing seen yet" makes it join that call. */
    unsigned long long seen = 0;
    for (;;) {
        unsigned long long s = atomic_load_explicit(&pool.seq, memory_order_acquire);
        for (int i = 0; (s & 1) || s >> 1 == seen; i++) { /* until a new call is published */
            if (i == SPIN_ROUNDS) {
                pthread_mutex_lock(&pool.mu);
                while (atomic_load(&pool.seq) >> 1 == seen) pthread_cond_wait(&pool.go, &pool.mu);
                pthread_mutex_unlock(&pool.mu);
                i = 0;
            }
            compiler_barrier();
            s = atomic_load_explicit(&pool.seq, memory_order_acquire);
        }
        const int32_t parts = atomic_load_explicit(&pool.parts, RELAXED);
        wf_range_fn fn = atomic_load_explicit(&pool.fn, RELAXED);
        void *ctx = atomic_load_explicit(&pool.ctx, RELAXED);
        const int64_t n = atomic_load_explicit(&pool.n, RELAXED);
        const int64_t chunk = atomic_load_explicit(&pool.chunk, RELAXED);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pool.seq, RELAXED) != s) continue; /* rewritten meanwhile */
        seen = s >> 1;
        if (part < parts) run_chunks(seen, fn, ctx, n, chunk, 1);
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

int32_t wf_threads_for(int32_t asked, int64_t work, int64_t min_work) {
    int64_t t = work / (min_work > 0 ? min_work : 1);
    if (t > asked) t = asked;
    return t < 1 ? 1 : (int32_t)t;
}

void wf_parallel_for(int64_t n, int32_t threads, wf_range_fn fn, void *ctx) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if ((int64_t)threads > n) threads = (int32_t)n;
    if (threads <= 1 || n > (int64_t)ROW_MASK) {
        fn(ctx, 0, n);
        return;
    }
    int64_t chunk = n / ((int64_t)threads * CHUNKS_PER_THREAD) / CHUNK_ALIGN * CHUNK_ALIGN;
    if (chunk < CHUNK_ALIGN) chunk = CHUNK_ALIGN;
    pthread_mutex_lock(&pool.busy);
    pthread_mutex_lock(&pool.mu);
    const int workers = ensure_workers(threads - 1);
    const unsigned long long gen = (atomic_load(&pool.seq) >> 1) + 1;
    atomic_store_explicit(&pool.seq, 2 * gen - 1, RELAXED); /* odd: parameters being written */
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&pool.fn, fn, RELAXED);
    atomic_store_explicit(&pool.ctx, ctx, RELAXED);
    atomic_store_explicit(&pool.n, n, RELAXED);
    atomic_store_explicit(&pool.chunk, chunk, RELAXED);
    atomic_store_explicit(&pool.parts, workers + 1 < threads ? workers + 1 : threads, RELAXED);
    atomic_store(&pool.finished, 0);
    atomic_store(&pool.next, (gen << ROW_BITS) & ~ROW_MASK);
    atomic_store_explicit(&pool.seq, 2 * gen, memory_order_release);
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    run_chunks(gen, fn, ctx, n, chunk, 0);
    for (int i = 0; i < SPIN_ROUNDS && atomic_load(&pool.finished) < n; i++) compiler_barrier();
    if (atomic_load(&pool.finished) < n) {
        pthread_mutex_lock(&pool.mu);
        while (atomic_load(&pool.finished) < n) pthread_cond_wait(&pool.done, &pool.mu);
        pthread_mutex_unlock(&pool.mu);
    }
    pthread_mutex_unlock(&pool.busy);
}

/* Row r, block column b: the f16 scale bits and the 32 signed codes. An untiled Q8 block is
 * returned in place; everything else is unpacked into `tmp`. */
const int8_t *wf_fetch_block(const wf_matrix *m, int64_t r, int64_t b, int8_t *tmp,
                             uint16_t *d) {
    const int p = wf_payload_bytes(m->kind);
    const uint8_t *scale, *src;
    uint8_t gathered[WF_QK];
    if (m->group_rows <= 1) {
        const uint8_t *block = wf_group(m, r) + b * (2 + p);
        scale = block;
        src = block + 2;
    } else {
        /* spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l: row m's payload byte j at 2G + (j/k)(kG) + km +
         * j%k, XOR undone */
        const int64_t g = m->group_rows, k = m->chunk_bytes, mm = r % g;
        const uint8_t *group = wf_group(m, r / g) + b * g * (2 + p);
        scale = group + 2 * mm;
        const uint8_t *row = group + 2 * g + k * mm;
        if (k == 4) /* chunk c: k bytes at 2G + c·kG + km (fixed sizes, so memcpy is inlined) */
            for (int c = 0; c < p / 4; c++) memcpy(gathered + 4 * c, row + c * 4 * g, 4);
        else
            for (int c = 0; c < p / k; c++) memcpy(gathered + c * k, row + c * k * g, (size_t)k);
        const uint8_t mask = (uint8_t)m->xor_mask;
        for (int j = 0; j < WF_QK; j++) gathered[j] ^= mask;
        src = gathered;
    }
    *d = (uint16_t)(scale[0] | (scale[1] << 8));
    if (m->kind == WF_W_Q8) {
        if (src != gathered) return (const int8_t *)src;
        memcpy(tmp, gathered, WF_QK);
        return tmp;
    }
    for (int j = 0; j < WF_QK / 2; j++) {
        /* byte j: element j low nibble, j + 16 high (spec/vqf.md §q4-0) */
        tmp[j] = (int8_t)((src[j] & 0x0F) - 8);
        tmp[j + WF_QK / 2] = (int8_t)((src[j] >> 4) - 8);
    }
    return tmp;
}
