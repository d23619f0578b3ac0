/* Prefill as a blocked matrix-matrix product with AVX2
 * (spec/numerics.md §q8-activation, §kernel-paths).
 *
 * A tile is 8 rows x up to 3 tokens (more spill registers) whose eight-lane float32 accumulators
 * (lane i = row r+i) stay in registers over all blocks of the row; the 8 rows' weights of one block
 * are unpacked once per tile and reused by its tokens, and a band of 8 rows runs every token tile
 * before the next band, so each weight byte comes from memory once per product (later tiles find it
 * in L1). Every output still performs acc = acc + (float)D * (d_w * d_x) over its blocks in
 * ascending order from +0.0, with D the exact int32 block dot (every integer step below is exact),
 * so the bits are the scalar loop's; tiling only changes which outputs are computed together
 * (spec/numerics.md §batch-invariance).
 *
 * Q4 codes enter as nibbles n in [0, 15] (maddubs takes them unsigned) and D = sum(n x) - 8 sum(x)
 * (xsum8 = 8 sum(x) per token and block). Q8 codes go through maddubs(|w|, x sign(w)).
 */
#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "x86_common.h"
#include <string.h>

#define AVX2 __attribute__((target("avx2,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* -O2 does not unroll: the tile loops must, so that the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 8")

enum { TILE_ROWS = 8, TILE_TOKENS = 3, X_SPAN_BYTES = 1 << 18 };

/* The 4 codes x[0..3] in every 32-bit lane. */
AVX2 INLINE __m256i piece(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* Where the float32 work of one token's tile happens: acc + (float)D * (d_w * d_x). */
AVX2 INLINE __m256 accumulate(__m256 acc, __m256i dots, __m256 dw, float dx) {
    return _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dots),
                                            _mm256_mul_ps(dw, _mm256_set1_ps(dx))));
}

/* Q4_0 4x4 (spec/vqf.md §q4-0), rows r..r+7 = row groups A and B, tokens t0..t0+nt-1: group block
 * b is 4 f16 scales and 4 chunks of 16 bytes, chunk c holding payload bytes 4c..4c+3 of rows 0..3
 * (XOR 0x88). One register holds chunk c of A (low half) and of B (high half), so 32-bit lane i
 * is row r+i's bytes 4c..4c+3: low nibbles elements 4c..4c+3, high ones 16+4c..16+4c+3. Against
 * the activation piece broadcast to every lane, maddubs gives each lane its row's products; the
 * eight maddubs sums stay below 8·2·15·127 = 30480 in int16, so D is exact. */
AVX2 INLINE void q4_4x4_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                             const int32_t *xsum8, int64_t t0, const int nt, float *y) {
    const int64_t nb = m->cols / WF_QK;
    const uint8_t *ga = wf_group(m, r / 4), *gb = wf_group(m, r / 4 + 1);
    const __m256i mask = _mm256_set1_epi8((char)0x88), low = _mm256_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, ga += 72, gb += 72) {
        __m256i lo[4], hi[4];
        UNROLL
        for (int c = 0; c < 4; c++) {
            const __m256i v = _mm256_xor_si256(
                _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(gb + 8 + 16 * c)),
                                 _mm_loadu_si128((const __m128i *)(ga + 8 + 16 * c))),
                mask);
            lo[c] = _mm256_and_si256(v, low);
            hi[c] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
        }
        const __m256 dw = _mm256_cvtph_ps(
            _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)ga),
                               _mm_loadl_epi64((const __m128i *)gb)));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            const int8_t *x = xq + tb * WF_QK;
            __m256i s = _mm256_maddubs_epi16(lo[0], piece(x));
            UNROLL
            for (int c = 1; c < 4; c++)
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(lo[c], piece(x + 4 * c)));
            UNROLL
            for (int c = 0; c < 4; c++)
                s = _mm256_add_epi16(s, _mm256_maddubs_epi16(hi[c], piece(x + 16 + 4 * c)));
            const __m256i dots =
                _mm256_sub_epi32(_mm256_madd_epi16(s, ones), _mm256_set1_epi32(xsum8[tb]));
            acc[t] = accumulate(acc[t], dots, dw, xd[tb]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* Q8_0 8x8 (spec/vqf.md §q8-tiled), rows r..r+7 = one row group (r % 8 == 0), tokens t0..: group
 * block b is 8 f16 scales then 8 chunks of 32 bytes, chunk c holding payload bytes 4c..4c+3 of rows
 * 0..7, so 32-bit lane i is row r+i's piece c. |w| is made once per block for the tile's tokens;
 * each maddubs pair is at most 2·128·127 and is widened to int32 at once, so D is exact. */
AVX2 INLINE void q8_8x8_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                             int64_t t0, const int nt, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK);
    const uint8_t *g = wf_group(m, r / 8);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        __m256i aw[8];
        UNROLL
        for (int c = 0; c < 8; c++)
            aw[c] = _mm256_abs_epi8(_mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c)));
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            const int8_t *x = xq + tb * WF_QK;
            __m256i dots = _mm256_setzero_si256();
            UNROLL
            for (int c = 0; c < 8; c++) {
                const __m256i w = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
                const __m256i pairs =
                    _mm256_maddubs_epi16(aw[c], _mm256_sign_epi8(piece(x + 4 * c), w));
                dots = _mm256_add_epi32(dots, _mm256_madd_epi16(pairs, ones));
            }
            acc[t] = accumulate(acc[t], dots, dw, xd[tb]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* Untiled Q4_0 / Q8_0 rows r..r+7 (18- or 34-byte blocks, spec/vqf.md §q8-0), tokens t0..: row
 * i's 32 codes of block b in one register (Q4: nibbles, elements 0-15 low half, 16-31 high), the
 * token's 32 activation codes in order in another; the eight rows' partial vectors are reduced
 * together (rows_of). */
AVX2 INLINE void untiled_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                              const int32_t *xsum8, int64_t t0, const int nt, const int q4,
                              float *y) {
    const int64_t nb = m->cols / WF_QK, bytes = q4 ? 18 : 34, row_bytes = wf_stride(m);
    const uint8_t *p = m->data + r * row_bytes;
    const __m256i ones = _mm256_set1_epi16(1), low = _mm256_set1_epi8(0x0F);
    __m256 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p += bytes) {
        __m256i w[8];
        UNROLL
        for (int i = 0; i < 8; i++) {
            const uint8_t *blk = p + i * row_bytes + 2;
            if (q4) {
                const __m128i q = _mm_loadu_si128((const __m128i *)blk);
                const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
                w[i] = _mm256_and_si256(both, low);
            } else {
                w[i] = _mm256_loadu_si256((const __m256i *)blk);
            }
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
            scale_bits(p), scale_bits(p + row_bytes), scale_bits(p + 2 * row_bytes),
            scale_bits(p + 3 * row_bytes), scale_bits(p + 4 * row_bytes),
            scale_bits(p + 5 * row_bytes), scale_bits(p + 6 * row_bytes),
            scale_bits(p + 7 * row_bytes)));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + tb * WF_QK));
            __m256i part[8];
            UNROLL
            for (int i = 0; i < 8; i++) {
                const __m256i pairs =
                    q4 ? _mm256_maddubs_epi16(w[i], x)
                       : _mm256_maddubs_epi16(_mm256_abs_epi8(w[i]), _mm256_sign_epi8(x, w[i]));
                part[i] = _mm256_madd_epi16(pairs, ones);
            }
            __m256i dots = rows_of(part);
            if (q4) dots = _mm256_sub_epi32(dots, _mm256_set1_epi32(xsum8[tb]));
            acc[t] = accumulate(acc[t], dots, dw, xd[tb]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

enum { G_NONE, G_Q4_4X4, G_Q8_8X8, G_Q4, G_Q8 };

static int gemm_layout(const wf_matrix *m) {
    if (m->group_rows <= 1) return m->kind == WF_W_Q4 ? G_Q4 : m->kind == WF_W_Q8 ? G_Q8 : G_NONE;
    if (m->kind == WF_W_Q4 && m->group_rows == 4 && m->chunk_bytes == 4 && m->xor_mask == 0x88)
        return G_Q4_4X4;
    if (m->kind == WF_W_Q8 && m->group_rows == 8 && m->chunk_bytes == 4 && m->xor_mask == 0)
        return G_Q8_8X8;
    return G_NONE;
}

/* One tile with a constant token count (so its loops unroll and the accumulators stay in
 * registers). */
AVX2 INLINE void tile(int layout, const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                      const int32_t *xsum8, int64_t t0, const int nt, float *y) {
    switch (layout) {
    case G_Q4_4X4: q4_4x4_tile(m, r, xq, xd, xsum8, t0, nt, y); break;
    case G_Q8_8X8: q8_8x8_tile(m, r, xq, xd, t0, nt, y); break;
    case G_Q4: untiled_tile(m, r, xq, xd, xsum8, t0, nt, 1, y); break;
    default: untiled_tile(m, r, xq, xd, xsum8, t0, nt, 0, y); break;
    }
}

/* spec/numerics.md §q8-activation for bands of 8 rows from r0 (as many as fit before r1, each
 * starting on a row group of the layout) and every token: the rows it leaves, from the returned
 * one, go to the caller. xsum8 is 8·sum(x) of every token's blocks (used by Q4). */
AVX2 int64_t wf_gemm_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                               const float *xd, const int32_t *xsum8, int64_t tokens, float *y) {
    const int layout = gemm_layout(m);
    if (layout == G_NONE || (layout == G_Q8_8X8 && r0 % 8) || (layout == G_Q4_4X4 && r0 % 4))
        return r0;
    /* Tokens in spans whose codes stay in a 256 KiB cache share: every band of the span reads
     * them, so a long prompt must not stream all its codes from memory once per band. */
    int64_t span = (X_SPAN_BYTES / m->cols) / TILE_TOKENS * TILE_TOKENS;
    if (span < TILE_TOKENS) span = TILE_TOKENS;
    const int64_t bands_end = r0 + (r1 - r0) / TILE_ROWS * TILE_ROWS;
    for (int64_t s0 = 0; s0 < tokens; s0 += span) {
        const int64_t s1 = s0 + span < tokens ? s0 + span : tokens;
        for (int64_t r = r0; r < bands_end; r += TILE_ROWS) {
            int64_t t0 = s0;
            for (; t0 + TILE_TOKENS <= s1; t0 += TILE_TOKENS)
                tile(layout, m, r, xq, xd, xsum8, t0, TILE_TOKENS, y);
            switch (s1 - t0) {
            case 3: tile(layout, m, r, xq, xd, xsum8, t0, 3, y); break;
            case 2: tile(layout, m, r, xq, xd, xsum8, t0, 2, y); break;
            case 1: tile(layout, m, r, xq, xd, xsum8, t0, 1, y); break;
            default: break;
            }
        }
    }
    return bands_end;
}

#else

int64_t wf_gemm_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                          const float *xd, const int32_t *xsum8, int64_t tokens, float *y) {
    (void)m, (void)r1, (void)xq, (void)xd, (void)xsum8, (void)tokens, (void)y;
    return r0;
}

#endif
