/* The spec/numerics.md §q8-activation q8_activation product with AVX-512 + VNNI on x86-64, decode
 * (one token) and prefill (many), chosen at run time (spec/numerics.md §kernel-paths).
 *
 * The library is built for the baseline x86-64 ISA, so these functions carry a target attribute
 * and qmatvec.c calls them only on the avx512 path, which wf_isa_usable grants only when the CPU
 * reports AVX-512 F/BW/VL + VNNI and AVX2 + F16C (the rows left over go to the AVX2 kernels).
 *
 * One kernel per layout computes a tile of rows x up to TILE_TOKENS tokens, decode being the tile
 * of one token: 16 rows (Q4_0 4x4 and Q8_0 4x4 / G256 4x4: four row groups; Q8_0 8x8 and Q4_0
 * 8x8l: two; untiled prefill: 16 rows transposed per block) in the 16 lanes of a zmm, or 8 rows of
 * an untiled payload in a ymm (decode, and the last 8 rows of an untiled prefill). Every tiled
 * layout of spec/vqf.md §encodings has its kernel here; rows past the last 16-row band go to the
 * AVX2 kernels. The integer block dot D uses vpdpbusd (u8 x s8, four
 * products summed into each int32 lane without saturation):
 *   Q4 codes enter as nibbles n in [0, 15] (unsigned already): D = sum(n x) - 8 sum(x);
 *   Q8 codes enter as w + 128 (w XOR 0x80, in [0, 255]):    D = sum((w + 128) x) - 128 sum(x).
 * Every partial sum is below 2^21 in magnitude, so each step is exact and D is the scalar int32.
 * The float part of each (row, token) is the scalar sequence acc = acc + (float)D * (d_w * d_x)
 * over ascending blocks from +0.0, separate multiplies and adds (no FMA: the lanes are outputs,
 * never parts of one sum), so the bits are the portable loop's and the AVX2 kernels' for any
 * thread count; tiling only changes which outputs are computed together
 * (spec/numerics.md §batch-invariance).
 */
#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "x86_common.h"
#include <string.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,f16c")))
#define INLINE static inline __attribute__((always_inline))
/* -O2 does not unroll: the tile loops must, so that the accumulators live in registers. */
#define UNROLL _Pragma("GCC unroll 8")

/* 8 tokens: the weights of a block are unpacked once per 8 tokens, and 8 accumulators plus the
 * block's 8 weight registers still fit the 32 zmm registers (no spills at -O2). 4 was no faster on
 * prefill here (noisy, loaded machine: 0.7-1.3x of 8 per matrix). */
enum { TILE_TOKENS = 8, X_SPAN_BYTES = 1 << 18 };

/* The 4 codes x[0..3] in every 32-bit lane. */
AVX512 INLINE __m512i piece16(const int8_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm512_set1_epi32(v);
}

/* One block of one token for 16 rows in lanes: u[k] holds piece k (codes 4k..4k+3) of every
 * row's block, unsigned as vpdpbusd takes them; D = the exact dot less `correction` (8·sum(x)
 * for Q4 nibbles, 128·sum(x) for Q8 codes + 128); then the spec/numerics.md §q8-activation
 * float steps, multiply and add apart. */
AVX512 INLINE __m512 add_block16(__m512 acc, const __m512i u[8], const int8_t *x,
                                 int32_t correction, __m512 dw, float dx) {
    __m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
    UNROLL
    for (int k = 0; k < 8; k += 2) {
        d0 = _mm512_dpbusd_epi32(d0, u[k], piece16(x + 4 * k));
        d1 = _mm512_dpbusd_epi32(d1, u[k + 1], piece16(x + 4 * k + 4));
    }
    const __m512i dots = _mm512_sub_epi32(_mm512_add_epi32(d0, d1), _mm512_set1_epi32(correction));
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(dots),
                                            _mm512_mul_ps(dw, _mm512_set1_ps(dx))));
}

AVX512 INLINE long long bits64(const uint8_t *p) {
    long long v;
    memcpy(&v, p, 8);
    return v;
}

/* The 16 bytes at p in each of four row groups (gs bytes apart), group g in 128-bit lane g. */
AVX512 INLINE __m512i four_groups(const uint8_t *p, int64_t gs) {
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)p));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + gs)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 2 * gs)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(p + 3 * gs)), 3);
}

/* The 32 bytes at p in each of two row groups (gs bytes apart), group g in 256-bit half g. */
AVX512 INLINE __m512i two_groups(const uint8_t *p, int64_t gs) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)),
                              _mm256_loadu_si256((const __m256i *)(p + gs)), 1);
}

/* The eight f16 scales at g of each of two row groups, widened: lane 8k+i is group k's row i. */
AVX512 INLINE __m512 two_groups_scales(const uint8_t *g, int64_t gs) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)g)),
        _mm_loadu_si128((const __m128i *)(g + gs)), 1));
}

/* The four f16 scales at g of each of four row groups, widened: lane 4k+i is group k's row i. */
AVX512 INLINE __m512 four_groups_scales(const uint8_t *g, int64_t gs) {
    return _mm512_cvtph_ps(
        _mm256_set_epi64x(bits64(g + 3 * gs), bits64(g + 2 * gs), bits64(g + gs), bits64(g)));
}

/* Q4_0 4x4 (spec/vqf.md §q4-0), rows r..r+15 = row groups 0-3 from r (r % 4 == 0), tokens
 * t0..t0+nt-1: group block b is 4 f16 scales and 4 chunks of 16 bytes, chunk c holding payload
 * bytes 4c..4c+3 of the group's rows 0..3 (XOR 0x88); byte 4c+k carries element 4c+k in its low
 * nibble and 16+4c+k in its high one. Chunk c of group g goes to 128-bit lane g, so 32-bit lane
 * 4g+i is row r+4g+i's piece c, and vpdpbusd against the activation piece broadcast to every lane
 * adds each row's four products to its own lane: no transpose. */
AVX512 INLINE void q4_4x4_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                               const int32_t *xsum8, int64_t t0, const int nt, float *y) {
    const int64_t nb = m->cols / WF_QK, gs = wf_stride(m); /* row group to row group */
    const uint8_t *g = m->data + (r / 4) * gs;
    const __m512i mask = _mm512_set1_epi8((char)0x88), low = _mm512_set1_epi8(0x0F);
    __m512 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += 72) {
        if (nt == 1) /* decode: the hardware prefetcher loses four interleaved streams */
            for (int k = 4; k < 8; k++) {
                _mm_prefetch((const char *)(g + k * gs), _MM_HINT_T0);
                _mm_prefetch((const char *)(g + k * gs + 64), _MM_HINT_T0);
            }
        __m512i lo[4], hi[4];
        UNROLL
        for (int c = 0; c < 4; c++) {
            const __m512i v = _mm512_xor_si512(four_groups(g + 8 + 16 * c, gs), mask);
            lo[c] = _mm512_and_si512(v, low);
            hi[c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        const __m512 dw = four_groups_scales(g, gs);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            const int8_t *x = xq + tb * WF_QK;
            __m512i dl = _mm512_setzero_si512(), dh = _mm512_setzero_si512();
            UNROLL
            for (int c = 0; c < 4; c++) {
                dl = _mm512_dpbusd_epi32(dl, lo[c], piece16(x + 4 * c));
                dh = _mm512_dpbusd_epi32(dh, hi[c], piece16(x + 16 + 4 * c));
            }
            const __m512i dots =
                _mm512_sub_epi32(_mm512_add_epi32(dl, dh), _mm512_set1_epi32(xsum8[tb]));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(dots),
                                                         _mm512_mul_ps(dw,
                                                         _mm512_set1_ps(xd[tb]))));
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* Q8 tiled by `group` rows (spec/vqf.md §q8-tiled: q8_0_8x8 and g256_8x8 with group 8,
 * q8_0_4x4 and g256_4x4 with group 4), rows r..r+15 = the 16 / group row groups from r (r % group
 * == 0), tokens t0..: group block b is `group` f16 scales then 8 chunks, chunk c holding codes
 * 4c..4c+3 of the group's rows (no XOR). Chunk c of every group of the tile fills one register
 * (8x8: A's 256 bits then B's; 4x4: group k in 128-bit lane k, as in q4_4x4_tile), so 32-bit lane
 * i is row r+i's piece c; the codes become w + 128 once per block for the tile's tokens, and
 * 128·sum(x) = 16·xsum8 comes off D (add_block16). */
AVX512 INLINE void q8_tiled_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                                 const int32_t *xsum8, int64_t t0, const int nt, const int group,
                                 float *y) {
    const int64_t nb = m->cols / WF_QK, step = group * (2 + WF_QK), gs = wf_stride(m);
    const int64_t chunk = 4 * group; /* bytes of one piece of every row of a group */
    const uint8_t *g = m->data + (r / group) * gs;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        if (nt == 1) /* decode: the next tile's row groups' block (272 or 136 bytes each) */
            for (int k = 16 / group; k < 32 / group; k++)
                for (int64_t i = 0; 64 * i < step; i++)
                    _mm_prefetch((const char *)(g + k * gs + 64 * i), _MM_HINT_T0);
        __m512i u[8];
        UNROLL
        for (int c = 0; c < 8; c++) {
            const uint8_t *p = g + 2 * group + chunk * c;
            const __m512i v = group == 8 ? two_groups(p, gs) : four_groups(p, gs);
            u[c] = _mm512_xor_si512(v, bias);
        }
        const __m512 dw = group == 8 ? two_groups_scales(g, gs) : four_groups_scales(g, gs);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            acc[t] = add_block16(acc[t], u, xq + tb * WF_QK, 16 * xsum8[tb], dw, xd[tb]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* One token (decode) on a Q8_0 8x8 payload, rows r..r+7 = one row group (r % 8 == 0), ymm: the
 * steps of q8_tiled_tile for one group, so the matrix is read as one sequential stream (its row
 * groups are contiguous), with the next group's block prefetched as the AVX2 kernel does. The
 * 16-row tile reads two groups at once plus two prefetched ones, four streams: 0.8x the AVX2
 * decode of a whole model here, where this form is not slower. */
AVX512 static void rows8_one_token_q8_8x8(const wf_matrix *m, int64_t r, const int8_t *xq,
                                          const float *xd, const int32_t *xsum8, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK);
    const uint8_t *g = wf_group(m, r / 8);
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        for (int i = 0; i < 5; i++) /* the next row group's block: 272 bytes, 5 lines */
            _mm_prefetch((const char *)(g + wf_stride(m) + 64 * i), _MM_HINT_T0);
        const int8_t *x = xq + b * WF_QK;
        __m256i d0 = _mm256_setzero_si256(), d1 = _mm256_setzero_si256();
        UNROLL
        for (int c = 0; c < 8; c += 2) {
            int32_t p0, p1;
            memcpy(&p0, x + 4 * c, 4);
            memcpy(&p1, x + 4 * c + 4, 4);
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(g + 48 + 32 * c));
            d0 = _mm256_dpbusd_epi32(d0, _mm256_xor_si256(w0, bias), _mm256_set1_epi32(p0));
            d1 = _mm256_dpbusd_epi32(d1, _mm256_xor_si256(w1, bias), _mm256_set1_epi32(p1));
        }
        const __m256i dots =
            _mm256_sub_epi32(_mm256_add_epi32(d0, d1), _mm256_set1_epi32(16 * xsum8[b]));
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dots),
                                               _mm256_mul_ps(dw, _mm256_set1_ps(xd[b]))));
    }
    _mm256_storeu_ps(y + r, acc);
}

/* Untiled Q4_0 / Q8_0 rows r..r+7 (18- or 34-byte blocks, spec/vqf.md §q8-0), tokens t0.. (Q8
 * decode, and the last 8 rows of a prefill; untiled16_tile does the other prefill bands): row
 * i's 32 codes of block b in one ymm (Q4: nibbles, elements 0-15 in the low half, 16-31 in the
 * high one; Q8: w + 128), the token's 32 activation codes in order in another; one vpdpbusd per
 * row, then the eight rows' partial vectors are reduced together (rows_of). */
AVX512 INLINE void untiled_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                                const int32_t *xsum8, int64_t t0, const int nt, const int q4,
                                float *y) {
    const int64_t nb = m->cols / WF_QK, bytes = q4 ? 18 : 34, row_bytes = wf_stride(m);
    const uint8_t *p = m->data + r * row_bytes;
    const __m256i low = _mm256_set1_epi8(0x0F), bias = _mm256_set1_epi8((char)0x80);
    const int32_t xmul = q4 ? 1 : 16; /* Q4: 8·sum(x); Q8: 128·sum(x) */
    __m256 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p += bytes) {
        __m256i w[8];
        UNROLL
        for (int i = 0; i < 8; i++) {
            const uint8_t *blk = p + i * row_bytes + 2;
            if (nt == 1) /* decode: eight interleaved row streams; fetch the next eight rows' */
                _mm_prefetch((const char *)(blk + 8 * row_bytes), _MM_HINT_T0);
            if (q4) {
                const __m128i q = _mm_loadu_si128((const __m128i *)blk);
                w[i] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low);
            } else {
                w[i] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)blk), bias);
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
            for (int i = 0; i < 8; i++)
                part[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), w[i], x);
            const __m256i dots =
                _mm256_sub_epi32(rows_of(part), _mm256_set1_epi32(xmul * xsum8[tb]));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_cvtepi32_ps(dots),
                                                         _mm256_mul_ps(dw,
                                                         _mm256_set1_ps(xd[tb]))));
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm256_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* Untiled Q4_0 / Q8_0 rows r..r+15, tokens t0.. (prefill): the 16 rows' codes of block b are
 * transposed once per block into c[k], whose 32-bit lane i is row r+i's 4-byte piece k (Q4:
 * nibbles of elements 4k..4k+3; Q8: w + 128), so the tile's tokens then take one vpdpbusd per
 * piece against the activation piece broadcast to every lane, as the tiled layouts do, instead of
 * reducing 16 rows' partial vectors per token. Register k of the transpose input holds rows k and
 * k+8: Q8 as [row k pieces 0-7 | row k+8 pieces 0-7], Q4 as [row k pieces 0-3 | row k+8 pieces 0-3
 * | row k 4-7 | row k+8 4-7] (low nibbles then high ones); dword and qword unpacks gather four
 * rows per 128-bit lane, and one two-source qword permute per piece puts the four quarters of 16
 * rows in order. Moving bytes is exact, so D is the per-row loop's. */
AVX512 INLINE void untiled16_tile(const wf_matrix *m, int64_t r, const int8_t *xq,
                                  const float *xd, const int32_t *xsum8, int64_t t0,
                                  const int nt, const int q4, float *y) {
    const int64_t nb = m->cols / WF_QK, bytes = q4 ? 18 : 34, row_bytes = wf_stride(m);
    const uint8_t *p = m->data + r * row_bytes;
    const __m512i low = _mm512_set1_epi8(0x0F), bias = _mm512_set1_epi8((char)0x80);
    /* qword indices of piece k and piece k + 4 (0-7: u, 8-15: v, see below) */
    const __m512i lo_idx = q4 ? _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11)
                              : _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i hi_idx = q4 ? _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15)
                              : _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    const int32_t xmul = q4 ? 1 : 16; /* Q4: 8·sum(x); Q8: 128·sum(x) */
    __m512 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, p += bytes) {
        __m512i z[8], tr[8], c[8];
        UNROLL
        for (int k = 0; k < 8; k++) {
            const uint8_t *ra = p + k * row_bytes + 2, *rb = ra + 8 * row_bytes;
            if (q4) {
                const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)rb),
                                                   _mm_loadu_si128((const __m128i *)ra));
                z[k] = _mm512_and_si512(
                    _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1),
                    low);
            } else {
                z[k] = _mm512_xor_si512(
                    _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)ra)),
                        _mm256_loadu_si256((const __m256i *)rb), 1),
                    bias);
            }
        }
        /* per 128-bit lane: rows k, k+1 interleaved by dword, then rows 4j..4j+3 by qword */
        UNROLL
        for (int j = 0; j < 4; j++) {
            tr[2 * j] = _mm512_unpacklo_epi32(z[2 * j], z[2 * j + 1]);
            tr[2 * j + 1] = _mm512_unpackhi_epi32(z[2 * j], z[2 * j + 1]);
        }
        UNROLL
        for (int h = 0; h < 2; h++) { /* rows 0-3 (h = 0) and 4-7 (h = 1) of each half */
            const __m512i *t4 = tr + 4 * h;
            __m512i *u = z + 4 * h; /* z is free again */
            u[0] = _mm512_unpacklo_epi64(t4[0], t4[2]); /* pieces 0 (and 4) */
            u[1] = _mm512_unpackhi_epi64(t4[0], t4[2]); /* 1 (5) */
            u[2] = _mm512_unpacklo_epi64(t4[1], t4[3]); /* 2 (6) */
            u[3] = _mm512_unpackhi_epi64(t4[1], t4[3]); /* 3 (7) */
        }
        UNROLL
        for (int k = 0; k < 4; k++) { /* u = rows 0-3 and 8-11, v = rows 4-7 and 12-15 */
            c[k] = _mm512_permutex2var_epi64(z[k], lo_idx, z[4 + k]);
            c[k + 4] = _mm512_permutex2var_epi64(z[k], hi_idx, z[4 + k]);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_setr_epi16(
            scale_bits(p), scale_bits(p + row_bytes), scale_bits(p + 2 * row_bytes),
            scale_bits(p + 3 * row_bytes), scale_bits(p + 4 * row_bytes),
            scale_bits(p + 5 * row_bytes), scale_bits(p + 6 * row_bytes),
            scale_bits(p + 7 * row_bytes), scale_bits(p + 8 * row_bytes),
            scale_bits(p + 9 * row_bytes), scale_bits(p + 10 * row_bytes),
            scale_bits(p + 11 * row_bytes), scale_bits(p + 12 * row_bytes),
            scale_bits(p + 13 * row_bytes), scale_bits(p + 14 * row_bytes),
            scale_bits(p + 15 * row_bytes)));
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            acc[t] = add_block16(acc[t], c, xq + tb * WF_QK, xmul * xsum8[tb], dw, xd[tb]);
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* Eight rows' partial vectors p[0..7] (low half block b, high half b+1) into the eight D of
 * block b (*db) and of block b+1 (*db1), lane i = row i: two hadd levels leave rows 0-3 and
 * 4-7 of both blocks complete, one cross-lane permute per block regroups them. */
AVX512 INLINE void transpose_dots8(const __m256i p[8], __m256i *db, __m256i *db1) {
    const __m256i h03 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i h47 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    *db = _mm256_permute2x128_si256(h03, h47, 0x20);
    *db1 = _mm256_permute2x128_si256(h03, h47, 0x31);
}

/* One token (decode) on an untiled Q4 payload, rows r..r+7, blocks in pairs: one ymm holds row
 * i's 16 payload bytes of block b (low half) and of b+1 (high half), so its low nibbles are
 * elements 0-15 of both blocks and its high nibbles 16-31; two vpdpbusd against the matching
 * activation halves give row i's partial vector of both blocks, and one reduction of the eight
 * rows yields the sixteen D. (untiled_tile reduces once per block: slower than the AVX2 pair
 * kernel here, this one is not.) The accumulator adds block b's product before block b+1's, the
 * contract's ascending order; an odd last block goes through the same steps with its bytes in
 * both halves, using only block b. */
AVX512 static void rows8_one_token_q4_untiled(const wf_matrix *m, int64_t r, const int8_t *xq,
                                              const float *xd, const int32_t *xsum8, float *y) {
    const int64_t nb = m->cols / WF_QK, row_bytes = wf_stride(m);
    const uint8_t *p = m->data + r * row_bytes;
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2, p += 36) {
        const int pair = b + 2 <= nb;
        const int64_t b1 = pair ? b + 1 : b, off1 = pair ? 18 : 0;
        const int8_t *x0 = xq + b * WF_QK, *x1 = xq + b1 * WF_QK;
        const __m256i xlo = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x1),
                                             _mm_loadu_si128((const __m128i *)x0));
        const __m256i xhi = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(x1 + 16)),
                                             _mm_loadu_si128((const __m128i *)(x0 + 16)));
        __m256i part[8];
        UNROLL
        for (int i = 0; i < 8; i++) {
            const uint8_t *blk = p + i * row_bytes;
            /* eight interleaved row streams: fetch the same bytes of the next eight rows */
            _mm_prefetch((const char *)(blk + 8 * row_bytes), _MM_HINT_T0);
            const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + off1 + 2)),
                                               _mm_loadu_si128((const __m128i *)(blk + 2)));
            const __m256i lo = _mm256_and_si256(q, low);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
            part[i] = _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), lo, xlo),
                                          hi, xhi);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16(
            scale_bits(p), scale_bits(p + row_bytes), scale_bits(p + 2 * row_bytes),
            scale_bits(p + 3 * row_bytes), scale_bits(p + 4 * row_bytes),
            scale_bits(p + 5 * row_bytes), scale_bits(p + 6 * row_bytes),
            scale_bits(p + 7 * row_bytes)));
        __m256i db, db1;
        transpose_dots8(part, &db, &db1);
        db = _mm256_sub_epi32(db, _mm256_set1_epi32(xsum8[b]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(db),
                                               _mm256_mul_ps(dw, _mm256_set1_ps(xd[b]))));
        if (!pair) break;
        const __m256 dw1 = _mm256_cvtph_ps(_mm_setr_epi16(
            scale_bits(p + 18), scale_bits(p + 18 + row_bytes), scale_bits(p + 18 + 2 * row_bytes),
            scale_bits(p + 18 + 3 * row_bytes), scale_bits(p + 18 + 4 * row_bytes),
            scale_bits(p + 18 + 5 * row_bytes), scale_bits(p + 18 + 6 * row_bytes),
            scale_bits(p + 18 + 7 * row_bytes)));
        db1 = _mm256_sub_epi32(db1, _mm256_set1_epi32(xsum8[b1]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(db1),
                                               _mm256_mul_ps(dw1, _mm256_set1_ps(xd[b1]))));
    }
    _mm256_storeu_ps(y + r, acc);
}

/* The 8 bytes x[0..7] in every 64-bit lane. */
AVX512 INLINE __m512i piece16x2(const int8_t *x) {
    long long v;
    memcpy(&v, x, 8);
    return _mm512_set1_epi64(v);
}

/* Q4_0 8x8l (spec/vqf.md §q4-8x8l), rows r..r+15 = row groups A and B from r (r % 8 == 0),
 * tokens t0..: group block b is 8 f16 scales then two chunks of 64 bytes, chunk h holding payload
 * bytes 8h..8h+7 of rows 0..7 (row m at 8m; XOR 0x88); byte k carries element k in its low nibble
 * and 16+k in its high one. Loaded whole, chunk h puts row m's bytes in 64-bit lane m, so against
 * the activation's 8 codes broadcast to every 64-bit lane vpdpbusd leaves row m's products in
 * 32-bit lanes 2m and 2m+1; the four (chunk, nibble) steps add into the same lanes, and the two
 * lanes of a row are added after the block, A's rows then B's in lane order: integers, exact in
 * any order, so D is the scalar int32. */
AVX512 INLINE void q4_8x8l_tile(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                                const int32_t *xsum8, int64_t t0, const int nt, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK / 2), gs = wf_stride(m);
    const uint8_t *g = m->data + (r / 8) * gs;
    const __m512i mask = _mm512_set1_epi8((char)0x88), low = _mm512_set1_epi8(0x0F);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512 acc[TILE_TOKENS];
    UNROLL
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        if (nt == 1) /* decode: the next two row groups' block, 144 bytes each */
            for (int k = 2; k < 4; k++)
                for (int i = 0; i < 3; i++)
                    _mm_prefetch((const char *)(g + k * gs + 64 * i), _MM_HINT_T0);
        __m512i lo[4], hi[4]; /* [group A chunk 0, A chunk 1, B chunk 0, B chunk 1] */
        UNROLL
        for (int q = 0; q < 4; q++) {
            const __m512i v = _mm512_xor_si512(
                _mm512_loadu_si512((const void *)(g + (q / 2) * gs + 16 + 64 * (q % 2))), mask);
            lo[q] = _mm512_and_si512(v, low);
            hi[q] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        const __m512 dw = two_groups_scales(g, gs);
        UNROLL
        for (int t = 0; t < nt; t++) {
            const int64_t tb = (t0 + t) * nb + b;
            const int8_t *x = xq + tb * WF_QK;
            __m512i pa = _mm512_setzero_si512(), pb = _mm512_setzero_si512();
            UNROLL
            for (int h = 0; h < 2; h++) {
                const __m512i xl = piece16x2(x + 8 * h), xh = piece16x2(x + 16 + 8 * h);
                pa = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(pa, lo[h], xl), hi[h], xh);
                pb = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(pb, lo[2 + h], xl), hi[2 + h], xh);
            }
            const __m512i sums = _mm512_add_epi32(_mm512_permutex2var_epi32(pa, even, pb),
                                                  _mm512_permutex2var_epi32(pa, odd, pb));
            const __m512i dots = _mm512_sub_epi32(sums, _mm512_set1_epi32(xsum8[tb]));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_cvtepi32_ps(dots),
                                                         _mm512_mul_ps(dw,
                                                         _mm512_set1_ps(xd[tb]))));
        }
    }
    UNROLL
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(y + (t0 + t) * m->rows + r, acc[t]);
}

/* spec/numerics.md §q8-activation steps 1-2 for the 32-element blocks [start, n), two zmm a
 * block; returns the first block start it left to the caller (a block holding a NaN: the scalar
 * loop keeps the first NaN's bits as amax). The AVX2 form's operations (qmatvec_x86.c) on 16
 * lanes: amax is a maximum of non-NaN magnitudes, exact in any order; x ⊘ d is the IEEE division,
 * rounded to nearest-even, clamped to ±127 and narrowed exactly, so the codes are the scalar
 * loop's. */
AVX512 int64_t wf_quantize_blocks_avx512(const float *x, int64_t start, int64_t n, int8_t *codes,
                                         float *scales) {
    const __m512 lim = _mm512_set1_ps(127.0f), neg = _mm512_set1_ps(-127.0f);
    for (; start + WF_QK <= n; start += WF_QK) {
        const __m512 v0 = _mm512_loadu_ps(x + start), v1 = _mm512_loadu_ps(x + start + 16);
        if (_mm512_cmp_ps_mask(v0, v0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v1, v1, _CMP_UNORD_Q))
            return start;
        const float amax =
            _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
        const float d = amax / 127.0f;
        scales[start / WF_QK] = d;
        if (!(d > 0.0f && d <= 3.402823466e38f)) {
            memset(codes + start, 0, WF_QK);
            continue;
        }
        const __m512 dv = _mm512_set1_ps(d);
        const __m512 r0 = _mm512_roundscale_ps(_mm512_div_ps(v0, dv),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512 r1 = _mm512_roundscale_ps(_mm512_div_ps(v1, dv),
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512i q0 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r0, neg), lim));
        const __m512i q1 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r1, neg), lim));
        _mm_storeu_si128((__m128i *)(codes + start), _mm512_cvtsepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(codes + start + 16), _mm512_cvtsepi32_epi8(q1));
    }
    return start;
}

/* G_Q4 / G_Q8: untiled, 16 rows (untiled16_tile); G_Q4_8 / G_Q8_8: untiled, 8 rows (untiled_tile:
 * decode, and the last 8 rows of a prefill band sequence). */
enum { G_NONE, G_Q4_4X4, G_Q8_8X8, G_Q4, G_Q8, G_Q4_8, G_Q8_8, G_Q8_4X4, G_Q4_8X8L };

static int layout_of(const wf_matrix *m) {
    if (m->group_rows <= 1) return m->kind == WF_W_Q4 ? G_Q4 : m->kind == WF_W_Q8 ? G_Q8 : G_NONE;
    if (m->kind == WF_W_Q4 && m->group_rows == 4 && m->chunk_bytes == 4 && m->xor_mask == 0x88)
        return G_Q4_4X4;
    if (m->kind == WF_W_Q8 && m->group_rows == 8 && m->chunk_bytes == 4 && m->xor_mask == 0)
        return G_Q8_8X8;
    if (m->kind == WF_W_Q8 && m->group_rows == 4 && m->chunk_bytes == 4 && m->xor_mask == 0)
        return G_Q8_4X4;
    if (m->kind == WF_W_Q4 && m->group_rows == 8 && m->chunk_bytes == 8 && m->xor_mask == 0x88)
        return G_Q4_8X8L;
    return G_NONE;
}

/* One tile with a constant token count (so its loops unroll and the accumulators stay in
 * registers). */
AVX512 INLINE void tile(int layout, const wf_matrix *m, int64_t r, const int8_t *xq,
                        const float *xd, const int32_t *xsum8, int64_t t0, const int nt,
                        float *y) {
    switch (layout) {
    case G_Q4_4X4: q4_4x4_tile(m, r, xq, xd, xsum8, t0, nt, y); break;
    case G_Q8_8X8: q8_tiled_tile(m, r, xq, xd, xsum8, t0, nt, 8, y); break;
    case G_Q8_4X4: q8_tiled_tile(m, r, xq, xd, xsum8, t0, nt, 4, y); break;
    case G_Q4_8X8L: q4_8x8l_tile(m, r, xq, xd, xsum8, t0, nt, y); break;
    case G_Q4: untiled16_tile(m, r, xq, xd, xsum8, t0, nt, 1, y); break;
    case G_Q8: untiled16_tile(m, r, xq, xd, xsum8, t0, nt, 0, y); break;
    case G_Q4_8: untiled_tile(m, r, xq, xd, xsum8, t0, nt, 1, y); break;
    default: untiled_tile(m, r, xq, xd, xsum8, t0, nt, 0, y); break;
    }
}

/* One tile of min(n, TILE_TOKENS) tokens, each count a constant of its own copy. */
AVX512 static void tiles(int layout, const wf_matrix *m, int64_t r, const int8_t *xq,
                         const float *xd, const int32_t *xsum8, int64_t t0, int64_t n, float *y) {
    switch (n < TILE_TOKENS ? n : TILE_TOKENS) {
    case 8: tile(layout, m, r, xq, xd, xsum8, t0, 8, y); break;
    case 7: tile(layout, m, r, xq, xd, xsum8, t0, 7, y); break;
    case 6: tile(layout, m, r, xq, xd, xsum8, t0, 6, y); break;
    case 5: tile(layout, m, r, xq, xd, xsum8, t0, 5, y); break;
    case 4: tile(layout, m, r, xq, xd, xsum8, t0, 4, y); break;
    case 3: tile(layout, m, r, xq, xd, xsum8, t0, 3, y); break;
    case 2: tile(layout, m, r, xq, xd, xsum8, t0, 2, y); break;
    default: tile(layout, m, r, xq, xd, xsum8, t0, 1, y); break;
    }
}

/* spec/numerics.md §q8-activation for bands of rows from r0, as many as fit before r1, each
 * starting on a row group of the layout, and every token; returns the first row it left to the
 * caller (r0 itself for other layouts). Bands are 16 rows, except decode on untiled payloads (8)
 * and a last band of 8 untiled rows in prefill. xsum8 is 8·sum(x) of every token's blocks. */
AVX512 int64_t wf_q8_activation_rows_avx512(const wf_matrix *m, int64_t r0, int64_t r1,
                                            const int8_t *xq, const float *xd,
                                            const int32_t *xsum8, int64_t tokens, float *y) {
    const int layout = layout_of(m);
    const int64_t group = m->group_rows > 1 ? m->group_rows : 1;
    if (layout == G_NONE || r0 % group) return r0;
    const int untiled = layout == G_Q4 || layout == G_Q8;
    const int narrow = layout == G_Q4 ? G_Q4_8 : G_Q8_8; /* the 8-row form, untiled only */
    if (tokens == 1) { /* decode: tiles of one token, the next band's weights prefetched */
        const int64_t band = untiled || layout == G_Q8_8X8 ? 8 : 16;
        const int64_t end = r0 + (r1 - r0) / band * band;
        for (int64_t r = r0; r < end; r += band)
            if (layout == G_Q4)
                rows8_one_token_q4_untiled(m, r, xq, xd, xsum8, y);
            else if (layout == G_Q8_8X8)
                rows8_one_token_q8_8x8(m, r, xq, xd, xsum8, y);
            else
                tile(untiled ? narrow : layout, m, r, xq, xd, xsum8, 0, 1, y);
        return end;
    }
    const int64_t bands_end = r0 + (r1 - r0) / 16 * 16;
    const int64_t end = untiled && r1 - bands_end >= 8 ? bands_end + 8 : bands_end;
    /* Tokens in spans whose codes stay in a 256 KiB cache share: every band of the span reads
     * them, so a long prompt must not stream all its codes from memory once per band. */
    int64_t span = (X_SPAN_BYTES / m->cols) / TILE_TOKENS * TILE_TOKENS;
    if (span < TILE_TOKENS) span = TILE_TOKENS;
    for (int64_t s0 = 0; s0 < tokens; s0 += span) {
        const int64_t s1 = s0 + span < tokens ? s0 + span : tokens;
        for (int64_t r = r0; r < bands_end; r += 16)
            for (int64_t t0 = s0; t0 < s1; t0 += TILE_TOKENS)
                tiles(layout, m, r, xq, xd, xsum8, t0, s1 - t0, y);
        if (end > bands_end)
            for (int64_t t0 = s0; t0 < s1; t0 += TILE_TOKENS)
                tiles(narrow, m, bands_end, xq, xd, xsum8, t0, s1 - t0, y);
    }
    return end;
}

#else

int64_t wf_quantize_blocks_avx512(const float *x, int64_t start, int64_t n, int8_t *codes,
                                  float *scales) {
    (void)x, (void)n, (void)codes, (void)scales;
    return start;
}

int64_t wf_q8_activation_rows_avx512(const wf_matrix *m, int64_t r0, int64_t r1,
                                     const int8_t *xq, const float *xd, const int32_t *xsum8,
                                     int64_t tokens, float *y) {
    (void)m, (void)r1, (void)xq, (void)xd, (void)xsum8, (void)tokens, (void)y;
    return r0;
}

#endif
