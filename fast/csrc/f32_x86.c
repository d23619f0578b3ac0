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
 * Tokens are taken in spans whose rows fill three quarters of this core's L2 cache (glibc's
 * sysconf; 256 KiB when it does not say), and every band of 4 rows runs over the span before the
 * next band, so each band's weights come from memory once per span: on a 1 MiB L2 the mergers'
 * 196 tokens are 4 spans instead of 17, the 64 MiB fc1 streamed 4 times. The span only groups
 * the outputs; it changes no operation. Row r starts `ld` floats after row r − 1: the matrix's row length, or more for a column
 * band read in place (an expert's down columns, fast/csrc/moe.c).
 *
 * AVX-512 carries two tokens in one 512-bit register: each span's tokens are copied in pairs,
 * the eight columns i..i+7 of token t in the low half and of token t + 1 in the high half, and a
 * weight row's eight columns are loaded into both halves, so one mul and one add advance two
 * outputs, each half its own eight-lane accumulator in the order above (the same bits again).
 * A tile is 4 rows x 6 pairs; an odd token left over takes the one-token tile. When no columns
 * lie past the vector loop (every Qwen3.5 tower width), each pair register's two trees are
 * combined in the register (pair_sums: three shuffles and adds, the tree's own operands) instead
 * of through memory: 1.05-1.22x on the tower's four linears (1 thread, contended); the 256-bit
 * tiles likewise (finish).
 */
#define _GNU_SOURCE /* sysconf's cache sizes */
#include <stdlib.h>
#include <unistd.h>

#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx2,avx512f,avx512vl")))
#define INLINE static inline __attribute__((always_inline))

enum { BAND = 4, X_SPAN_MIN = 1 << 18 };

/* Bytes of token rows a span holds: 3/4 of the L2 cache, at least X_SPAN_MIN. */
static int64_t x_span_bytes(void) {
    long l2 = 0;
#ifdef _SC_LEVEL2_CACHE_SIZE
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return l2 / 4 * 3 > X_SPAN_MIN ? l2 / 4 * 3 : X_SPAN_MIN;
}

/* One output from its eight lanes and the columns past the vector loop (i..n-1). */
INLINE float finish_lanes(float *l, const float *w, const float *x, int64_t i, int64_t n) {
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + w[i] * x[i];
    return wf_combine_lanes(l);
}

/* One output from its accumulator and the columns past the vector loop (i..n-1); with none, the
 * tree in the register (lanes j and j + 4, then j + 2, then j + 1, each add of the tree's own
 * operands: spec/numerics.md §combining-tree). */
AVX2 INLINE float finish(__m256 acc, const float *w, const float *x, int64_t i, int64_t n) {
    if (i == n) {
        __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 1, 1, 1))));
    }
    float l[WF_LANES];
    _mm256_storeu_ps(l, acc);
    return finish_lanes(l, w, x, i, n);
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

/* The two outputs of a pair register, each half's eight lanes combined as wf_combine_lanes does
 * (spec/numerics.md §combining-tree): lanes j and j + 4 (the 128-bit blocks swapped), then j and
 * j + 2, then j and j + 1, each add of the tree's own operands (an IEEE add is commutative), so
 * lane 0 holds the low token's sum and lane 8 the high token's; y[0] and y[rows] get them. */
AVX512 INLINE void pair_sums(__m512 v, float *y, int64_t rows) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
    y[0] = _mm512_cvtss_f32(v);
    y[rows] = _mm_cvtss_f32(_mm512_extractf32x4_ps(v, 2));
}

/* Rows w[0..3] against NP token pairs: xp holds pair p's vector columns at xp + p·2·nv (for each
 * eight columns i, token 2p's then token 2p + 1's), x the same tokens unpacked (n apart) for the
 * columns past nv = n rounded down to 8; y[t * rows + a] gets row a, token t. */
#define DEFINE_PAIR_TILE(NAME, NP)                                                               \
    AVX512 static void NAME(const float *w, int64_t ld, int64_t n, const float *xp,             \
                            const float *x, float *y, int64_t rows) {                           \
        const int64_t nv = n / WF_LANES * WF_LANES;                                              \
        __m512 acc[BAND][NP];                                                                    \
        _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                                   \
            _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) acc[a][p] = _mm512_setzero_ps(); \
        for (int64_t i = 0; i < nv; i += WF_LANES) {                                             \
            __m512 wv[BAND];                                                                     \
            _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++) wv[a] = _mm512_castpd_ps(     \
                _mm512_broadcast_f64x4(_mm256_loadu_pd((const double *)(w + a * ld + i))));      \
            _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) {                               \
                const __m512 xv = _mm512_loadu_ps(xp + p * 2 * nv + 2 * i);                      \
                _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                           \
                    acc[a][p] = _mm512_add_ps(acc[a][p], _mm512_mul_ps(wv[a], xv));              \
            }                                                                                    \
        }                                                                                        \
        if (nv == n) { /* no columns past the vector loop: both trees in the register */        \
            _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                               \
                _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++)                             \
                    pair_sums(acc[a][p], y + 2 * p * rows + a, rows);                            \
            return;                                                                              \
        }                                                                                        \
        for (int a = 0; a < BAND; a++)                                                           \
            for (int p = 0; p < NP; p++) {                                                       \
                float l[2 * WF_LANES];                                                           \
                _mm512_storeu_ps(l, acc[a][p]);                                                  \
                const float *x0 = x + 2 * p * n;                                                 \
                y[2 * p * rows + a] = finish_lanes(l, w + a * ld, x0, nv, n);                    \
                y[(2 * p + 1) * rows + a] = finish_lanes(l + WF_LANES, w + a * ld, x0 + n, nv, n); \
            }                                                                                    \
    }

enum { PAIRS = 6 };
DEFINE_PAIR_TILE(pairs_avx512_6, PAIRS)
DEFINE_PAIR_TILE(pairs_avx512_1, 1)

/* Tokens x[0..2·pairs-1] (n columns each) into xp in pairs, their first nv columns (module
 * comment). */
static void pack_pairs(const float *x, int64_t n, int64_t nv, int64_t pairs, float *xp) {
    for (int64_t p = 0; p < pairs; p++)
        for (int64_t i = 0; i < nv; i += WF_LANES)
            for (int h = 0; h < 2; h++)
                for (int j = 0; j < WF_LANES; j++)
                    xp[p * 2 * nv + 2 * i + h * WF_LANES + j] = x[(2 * p + h) * n + i + j];
}

/* Bands of 4 rows from r0 (as many as fit before r1) and every token; returns the first row
 * left to the caller. */
static int64_t bands(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0, int64_t r1,
                     const float *x, int64_t tokens, float *y, tile_fn wide, int nt,
                     tile_fn one) {
    int64_t span = (x_span_bytes() / (cols * 4 + 1)) / nt * nt;
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

/* The AVX-512 bands: spans of 2·PAIRS·k tokens packed in pairs, each band of 4 rows over the
 * span's pairs, an odd last token alone. Without the pair buffer (or without two tokens or
 * eight columns) the one-token-per-register tiles. */
static int64_t bands_avx512(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0,
                            int64_t r1, const float *x, int64_t tokens, float *y) {
    const int64_t nv = cols / WF_LANES * WF_LANES, nt = 2 * PAIRS;
    int64_t span = (x_span_bytes() / (cols * 4 + 1)) / nt * nt;
    if (span < nt) span = nt;
    float *xp = tokens >= 2 && nv > 0 ? malloc((size_t)(span / 2 * 2 * nv) * sizeof(float)) : NULL;
    if (xp == NULL)
        return bands(w, ld, cols, rows, r0, r1, x, tokens, y, tile_avx512_6, 6, tile_avx512_1);
    const int64_t end = r0 + (r1 - r0) / BAND * BAND;
    for (int64_t s0 = 0; s0 < tokens; s0 += span) {
        const int64_t s1 = s0 + span < tokens ? s0 + span : tokens, pairs = (s1 - s0) / 2;
        pack_pairs(x + s0 * cols, cols, nv, pairs, xp);
        for (int64_t r = r0; r < end; r += BAND) {
            const float *wr = w + r * ld;
            int64_t p = 0;
            for (; p + PAIRS <= pairs; p += PAIRS)
                pairs_avx512_6(wr, ld, cols, xp + p * 2 * nv, x + (s0 + 2 * p) * cols,
                               y + (s0 + 2 * p) * rows + r, rows);
            for (; p < pairs; p++)
                pairs_avx512_1(wr, ld, cols, xp + p * 2 * nv, x + (s0 + 2 * p) * cols,
                               y + (s0 + 2 * p) * rows + r, rows);
            for (int64_t t = s0 + 2 * pairs; t < s1; t++)
                tile_avx512_1(wr, ld, cols, x + t * cols, y + t * rows + r, rows);
        }
    }
    free(xp);
    return end;
}

int64_t wf_f32_rows_x86(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0,
                        int64_t r1, const float *x, int64_t tokens, float *y, int32_t isa) {
    if (isa == WF_ISA_AVX512) return bands_avx512(w, ld, cols, rows, r0, r1, x, tokens, y);
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
