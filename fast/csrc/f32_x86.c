/* Dense float32 products Y = X W^T in register tiles with AVX2 and AVX-512VL
 * (spec/numerics.md §dot, spec/numerics.md §matmul, spec/numerics.md §kernel-paths): the F32
 * matrices of a `.ninfer` vision tower and the F32 mergers of a Qwen3-VL file, over all patches
 * of an image at once.
 *
 * A tile is 4 rows x NT tokens (NT = 2 with AVX2's 16 vector registers, 6 with AVX-512VL's 32);
 * each of its outputs keeps one eight-lane accumulator in a 256-bit register, lane j adding
 * w[i+j] * x[i+j] for i = 0, 8, 16, ... with the product rounded before the add (no FMA: the
 * library is built with -ffp-contract=off and only mul and add are issued). The columns past the
 * last multiple of 8 go to the same lanes in scalar code, and the lanes are combined by
 * wf_combine_lanes: exactly the order of wf_dot_f32, so the bits are the scalar loop's and the
 * tiling only changes which outputs are computed together (spec/numerics.md §batch-invariance).
 * Tokens are taken in spans whose rows stay in a 256 KiB cache share, and every band of 4 rows
 * runs over the span before the next band, so each band's weights come from memory once per
 * span. Row r starts `ld` floats after row r − 1: the matrix's row length, or more for a column
 * band read in place (an expert's down columns, fast/csrc/moe.c).
 */
#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx2,avx512f,avx512vl")))
#define INLINE static inline __attribute__((always_inline))

enum { BAND = 4, X_SPAN_BYTES = 1 << 18 };

/* One output from its accumulator and the columns past the vector loop (i..n-1). */
AVX2 INLINE float finish(__m256 acc, const float *w, const float *x, int64_t i, int64_t n) {
    float l[WF_LANES];
    _mm256_storeu_ps(l, acc);
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + w[i] * x[i];
    return wf_combine_lanes(l);
}

/* Rows w[0..3] (n columns each, `ld` floats apart) against tokens x[0..NT-1]; y[t * rows + a]
 * gets row a, token t. */
#define DEFINE_TILE(NAME, ATTR, NT)                                                              \
    ATTR static void NAME(const float *w, int64_t ld, int64_t n, const float *x, float *y,      \
                          int64_t rows) {                                                       \
        __m256 acc[BAND][NT];                                                                    \
        _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                                   \
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) acc[a][t] = _mm256_setzero_ps(); \
        int64_t i = 0;                                                                           \
        for (; i + WF_LANES <= n; i += WF_LANES) {                                               \
            __m256 wv[BAND];                                                                     \
            _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                               \
                wv[a] = _mm256_loadu_ps(w + a * ld + i);                                         \
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++) {                               \
                const __m256 xv = _mm256_loadu_ps(x + t * n + i);                                \
                _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                           \
                    acc[a][t] = _mm256_add_ps(acc[a][t], _mm256_mul_ps(wv[a], xv));              \
            }                                                                                    \
        }                                                                                        \
        _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                                   \
            _Pragma("GCC unroll 8") for (int t = 0; t < NT; t++)                                 \
                y[t * rows + a] = finish(acc[a][t], w + a * ld, x + t * n, i, n);                \
    }

DEFINE_TILE(tile_avx2_2, AVX2, 2)
DEFINE_TILE(tile_avx2_1, AVX2, 1)
DEFINE_TILE(tile_avx512_6, AVX512, 6)
DEFINE_TILE(tile_avx512_1, AVX512, 1)

typedef void (*tile_fn)(const float *, int64_t, int64_t, const float *, float *, int64_t);

/* Bands of 4 rows from r0 (as many as fit before r1) and every token; returns the first row
 * left to the caller. */
static int64_t bands(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0, int64_t r1,
                     const float *x, int64_t tokens, float *y, tile_fn wide, int nt,
                     tile_fn one) {
    int64_t span = (X_SPAN_BYTES / (cols * 4 + 1)) / nt * nt;
    if (span < nt) span = nt;
    const int64_t end = r0 + (r1 - r0) / BAND * BAND;
    for (int64_t s0 = 0; s0 < tokens; s0 += span) {
        const int64_t s1 = s0 + span < tokens ? s0 + span : tokens;
        for (int64_t r = r0; r < end; r += BAND) {
            int64_t t = s0;
            for (; t + nt <= s1; t += nt)
                wide(w + r * ld, ld, cols, x + t * cols, y + t * rows + r, rows);
            for (; t < s1; t++) one(w + r * ld, ld, cols, x + t * cols, y + t * rows + r, rows);
        }
    }
    return end;
}

int64_t wf_f32_rows_x86(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0,
                        int64_t r1, const float *x, int64_t tokens, float *y, int32_t isa) {
    if (isa == WF_ISA_AVX512)
        return bands(w, ld, cols, rows, r0, r1, x, tokens, y, tile_avx512_6, 6, tile_avx512_1);
    if (isa == WF_ISA_AVX2)
        return bands(w, ld, cols, rows, r0, r1, x, tokens, y, tile_avx2_2, 2, tile_avx2_1);
    return r0;
}

#else

int64_t wf_f32_rows_x86(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0,
                        int64_t r1, const float *x, int64_t tokens, float *y, int32_t isa) {
    (void)w, (void)ld, (void)cols, (void)rows, (void)r1, (void)x, (void)tokens, (void)y, (void)isa;
    return r0;
}

#endif
