/* The kestrel-board profile's Q8 MoE FFN (spec/numerics.md §board-moe).
 *
 * Operation for operation what ref/qwen3_moe/board/ffn.py computes: the router's
 * multiply-then-add chains, the insertion top-k, the softmax over the chosen logits with the
 * host libm's expf (called through a volatile pointer so it is never folded; the caller checks
 * that the host libm gives the board's bits, spec/numerics.md §board-c-library), the per-block FMA
 * chains of the expert products (C99 fmaf rounds once), the exact-form SiLU and the rank-order
 * combine. Built with -ffp-contract=off like every file in fast/csrc.
 *
 * The expert matrices come packed (fast/qwen3_moe/board/ops.py `stack`): rows in groups of 16,
 * and per group and 32-column block the 32 columns' codes of the 16 rows side by side
 * (codes[((group·nb + b)·32 + c)·16 + lane], scales[(group·nb + b)·16 + lane]). So the products
 * put a row in each vector lane (AVX2, AVX-512, NEON; board_moe_body.h), every lane doing its
 * row's own chain in the board's order: the bits are the portable loop's on every path. A step's
 * gate and up products of all chosen experts are one call on the thread pool, their down
 * products another; a row is computed by one thread, so the thread count never changes a bit,
 * and the combine is serial.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "wf_kernels.h"

enum { MOE_QB = 32, MOE_GROUP = 16, MOE_SET = 8 };

static float (*volatile moe_expf)(float) = expf;

/* spec/numerics.md §board-moe-products one group of 16 rows: per lane and 32-column block
 * o = fma(x[c], code[c], o) from 0, then acc = fma(d_w, o, acc), blocks ascending. */
static void group_portable(const int8_t *pc, const float *ps, int64_t nb, const float *x,
                           float *y) {
    for (int l = 0; l < MOE_GROUP; l++) {
        float acc = 0.0f;
        for (int64_t b = 0; b < nb; b++) {
            float o = 0.0f;
            for (int c = 0; c < MOE_QB; c++)
                o = fmaf(x[b * MOE_QB + c], (float)pc[(b * MOE_QB + c) * MOE_GROUP + l], o);
            acc = fmaf(ps[b * MOE_GROUP + l], o, acc);
        }
        y[l] = acc;
    }
}

/* Groups g0..g1 of one packed matrix with nb blocks a row: y[16·g + lane]. */
typedef void (*moe_groups_fn)(const int8_t *pc, const float *ps, int64_t nb, const float *x,
                              float *y, int64_t g0, int64_t g1);

static void groups_portable(const int8_t *pc, const float *ps, int64_t nb, const float *x,
                            float *y, int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g++)
        group_portable(pc + g * nb * MOE_QB * MOE_GROUP, ps + g * nb * MOE_GROUP, nb, x,
                       y + g * MOE_GROUP);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx2,fma")))
#define SFX(name) avx2_##name
#define W 8
#define V __m256
#define VZERO _mm256_setzero_ps
#define VSET1 _mm256_set1_ps
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VFMA _mm256_fmadd_ps
#define VCODES(p) _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p))))
#include "board_moe_body.h"
#undef ATTR
#undef SFX
#undef W
#undef V
#undef VZERO
#undef VSET1
#undef VLOAD
#undef VSTORE
#undef VFMA
#undef VCODES

#define ATTR __attribute__((target("avx2,fma,avx512f")))
#define SFX(name) avx512_##name
#define W 16
#define V __m512
#define VZERO _mm512_setzero_ps
#define VSET1 _mm512_set1_ps
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VFMA _mm512_fmadd_ps
#define VCODES(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))
#include "board_moe_body.h"

static moe_groups_fn groups_for(int32_t isa) {
    if (isa == WF_ISA_AVX512) return avx512_moe_groups;
    /* the AVX2 path itself does not ask for FMA (cpu.c); this body needs it */
    if (isa == WF_ISA_AVX2 && __builtin_cpu_supports("fma")) return avx2_moe_groups;
    return groups_portable;
}

#elif defined(__ARM_NEON)
#include <arm_neon.h>

static inline float32x4_t moe_codes4(const int8_t *p) {
    int32_t four;
    memcpy(&four, p, 4);
    const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
    return vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide)));
}

#define ATTR
#define SFX(name) neon_##name
#define W 4
#define V float32x4_t
#define VZERO() vdupq_n_f32(0.0f)
#define VSET1 vdupq_n_f32
#define VLOAD vld1q_f32
#define VSTORE vst1q_f32
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define VCODES moe_codes4
#include "board_moe_body.h"

static moe_groups_fn groups_for(int32_t isa) {
    return isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD ? neon_moe_groups : groups_portable;
}

#else
static moe_groups_fn groups_for(int32_t isa) {
    (void)isa;
    return groups_portable;
}
#endif

/* One product set on the pool: segment s is a packed matrix of `groups` row groups applied to
 * its own x, into its own y; a work item is one group of one segment. */
typedef struct {
    moe_groups_fn run;
    const int8_t *pc[2 * MOE_SET]; /* MOE_SET experts' gate and up, or 2·MOE_SET downs */
    const float *ps[2 * MOE_SET], *x[2 * MOE_SET];
    float *y[2 * MOE_SET];
    int64_t nb, groups;
} moe_set;

static void moe_set_range(void *arg, int64_t begin, int64_t end) {
    const moe_set *m = (const moe_set *)arg;
    while (begin < end) {
        const int64_t s = begin / m->groups, g0 = begin % m->groups;
        const int64_t g1 = end - s * m->groups < m->groups ? end - s * m->groups : m->groups;
        m->run(m->pc[s], m->ps[s], m->nb, m->x[s], m->y[s], g0, g1);
        begin = s * m->groups + g1;
    }
}

static int64_t wfbm_grain = 65536;

void wfbm_set_thread_grain(int64_t grain) { wfbm_grain = grain > 0 ? grain : 1; }

static void moe_set_run(const moe_set *m, int64_t segments, int32_t threads) {
    const int64_t items = segments * m->groups;
    const int64_t macs = items * MOE_GROUP * m->nb * MOE_QB;
    wf_parallel_for(items, wf_threads_for(threads, macs, wfbm_grain), moe_set_range, (void *)m);
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
 * layer's stacked [ne·ie, d] matrices packed (above): expert e owns row groups
 * [e·ie/16, (e+1)·ie/16); down is each expert's [d, ie] matrix packed, expert after expert.
 * Returns 1 (out zeroed, nothing else written) when d or ie is not a multiple of 32
 * (spec/numerics.md §board-moe-defect), else 0. */
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
    const moe_groups_fn run = groups_for(wf_isa());
    const int64_t nb = d / MOE_QB, nbd = ie / MOE_QB, block = MOE_QB * MOE_GROUP;
    for (int64_t j0 = 0; j0 < k; j0 += MOE_SET) { /* gate and up of up to 8 experts a call */
        const int64_t n = k - j0 < MOE_SET ? k - j0 : MOE_SET;
        moe_set gu = {run, {0}, {0}, {0}, {0}, nb, ie / MOE_GROUP};
        for (int64_t i = 0; i < n; i++) {
            const int64_t j = j0 + i, g = experts[j] * (ie / MOE_GROUP); /* first row group */
            gu.pc[2 * i] = gate_codes + g * nb * block;
            gu.ps[2 * i] = gate_scales + g * nb * MOE_GROUP;
            gu.pc[2 * i + 1] = up_codes + g * nb * block;
            gu.ps[2 * i + 1] = up_scales + g * nb * MOE_GROUP;
            gu.x[2 * i] = gu.x[2 * i + 1] = x;
            gu.y[2 * i] = gate + j * ie, gu.y[2 * i + 1] = up + j * ie;
        }
        moe_set_run(&gu, 2 * n, threads);
    }
    for (int64_t i = 0; i < k * ie; i++) {
        float den = 1.0f + moe_expf(-gate[i]);
        float q = gate[i] / den;
        act[i] = q * up[i];
    }
    for (int64_t j0 = 0; j0 < k; j0 += 2 * MOE_SET) { /* the down products, 16 experts a call */
        const int64_t n = k - j0 < 2 * MOE_SET ? k - j0 : 2 * MOE_SET;
        moe_set dn = {run, {0}, {0}, {0}, {0}, nbd, d / MOE_GROUP};
        for (int64_t i = 0; i < n; i++) {
            const int64_t j = j0 + i, e = experts[j];
            dn.pc[i] = down_codes + e * d * ie, dn.ps[i] = down_scales + e * d * nbd;
            dn.x[i] = act + j * ie, dn.y[i] = partial + j * d;
        }
        moe_set_run(&dn, n, threads);
    }
    for (int64_t j = 0; j < k; j++) { /* the combine in rank order, each running sum kept */
        float *y = partial + j * d;
        for (int64_t r = 0; r < d; r++) {
            float p = weights[j] * y[r];
            out[r] = out[r] + p;
            y[r] = out[r];
        }
    }
    return 0;
}
