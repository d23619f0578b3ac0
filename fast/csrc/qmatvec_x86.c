/* The spec/numerics.md §q8-activation q8_activation product with AVX2 on x86-64, chosen at run time
 * (spec/numerics.md §q8-activation).
 *
 * The library is built for the baseline x86-64 ISA, so this file compiles its functions with
 * target("avx2,f16c") and qmatvec.c calls them only when the CPU reports both (every AVX2 CPU has
 * F16C, whose binary16 widening is exact like the table). Four rows are done at
 * once: each block's integer dot is exact (maddubs of |w| and x·sign(w), at most 2·128·127 per
 * int16 pair, so never saturating), and lane i of the float32 accumulator is row r+i, which
 * performs exactly the scalar sequence acc = acc + (float)D * (d_w * d_x) in ascending blocks.
 */
#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "x86_common.h"
#include <stdlib.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,f16c")))

/* The 32 codes of row r, block b and its scale bits: Q8 codes as stored, Q4 as the nibbles
 * n in [0, 15] (the caller subtracts 8·sum(x) once for the block: sum((n-8)x) = sum(nx) -
 * 8sum(x)). */
/* Tiled layouts: where 4-byte piece i (bytes 4i..4i+3) of a row's block payload sits, in ints
 * from the row's first chunk: chunk 4i/k, so (4i/k)·kG + 4i%k bytes
 * (spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l). */
AVX2 static __m256i tile_index(const wf_matrix *m) {
    int idx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const int k = m->chunk_bytes, g = m->group_rows;
    if (m->group_rows > 1 && (k == 4 || k == 8))
        for (int i = 0; i < 8; i++) idx[i] = (((4 * i) / k) * k * g + (4 * i) % k) / 4;
    return _mm256_loadu_si256((const __m256i *)idx);
}

AVX2 static inline __m256i load_codes(const wf_matrix *m, int64_t r, int64_t b, uint16_t *d,
                                      __m256i gidx) {
    const int64_t nb = m->cols / WF_QK;
    if (m->group_rows <= 1 && m->kind == WF_W_Q8) {
        const uint8_t *p = wf_group(m, r) + b * 34;
        *d = (uint16_t)(p[0] | (p[1] << 8));
        return _mm256_loadu_si256((const __m256i *)(p + 2));
    }
    if (m->group_rows <= 1) { /* byte j: element j in the low nibble, j + 16 in the high one */
        const uint8_t *p = wf_group(m, r) + b * 18;
        *d = (uint16_t)(p[0] | (p[1] << 8));
        const __m128i q = _mm_loadu_si128((const __m128i *)(p + 2)), low = _mm_set1_epi8(0x0F);
        const __m128i lo = _mm_and_si128(q, low), hi = _mm_and_si128(_mm_srli_epi16(q, 4), low);
        return _mm256_set_m128i(hi, lo);
    }
    if (m->chunk_bytes == 4 || m->chunk_bytes == 8) { /* tiled: gather row m's 4-byte pieces */
        const int64_t g = m->group_rows, k = m->chunk_bytes, mm = r % g;
        const int p = m->kind == WF_W_Q8 ? WF_QK : WF_QK / 2;
        const uint8_t *group = wf_group(m, r / g) + b * g * (2 + p);
        *d = (uint16_t)(group[2 * mm] | (group[2 * mm + 1] << 8));
        const int *row = (const int *)(group + 2 * g + k * mm);
        const __m256i xor_mask = _mm256_set1_epi8((char)m->xor_mask);
        if (m->kind == WF_W_Q8)
            return _mm256_xor_si256(_mm256_i32gather_epi32(row, gidx, 4), xor_mask);
        const __m128i q = _mm_xor_si128(_mm_i32gather_epi32(row, _mm256_castsi256_si128(gidx), 4),
                                        _mm256_castsi256_si128(xor_mask));
        const __m128i low = _mm_set1_epi8(0x0F);
        const __m128i lo = _mm_and_si128(q, low), hi = _mm_and_si128(_mm_srli_epi16(q, 4), low);
        return _mm256_set_m128i(hi, lo);
    }
    int8_t tmp[WF_QK];
    const __m256i codes = _mm256_loadu_si256((const __m256i *)wf_fetch_block(m, r, b, tmp, d));
    return m->kind == WF_W_Q8 ? codes : _mm256_add_epi8(codes, _mm256_set1_epi8(8));
}

/* Eight int32 partial sums of the block dot w·x; Q4 nibbles are unsigned already (at most
 * 2·15·127 per int16 pair), Q8 codes go through |w| and x·sign(w). */
AVX2 static inline __m256i partial_dot(__m256i w, __m256i x, int q4) {
    const __m256i pairs = q4 ? _mm256_maddubs_epi16(w, x)
                             : _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

/* D for rows r..r+3 of block b against activation codes x: four exact int32 dots. For Q4,
 * xsum8 = 8·sum(x) of the block. */
AVX2 static inline __m128i block_dots4(const __m256i w[4], __m256i x, int q4, int32_t xsum8) {
    const __m256i h = _mm256_hadd_epi32(
        _mm256_hadd_epi32(partial_dot(w[0], x, q4), partial_dot(w[1], x, q4)),
        _mm256_hadd_epi32(partial_dot(w[2], x, q4), partial_dot(w[3], x, q4)));
    const __m128i d = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    return q4 ? _mm_sub_epi32(d, _mm_set1_epi32(xsum8)) : d;
}


/* Rows r..r+3, block b: codes into w[4], f16 scales widened into a float32x4. */
AVX2 static inline __m128 load_rows4(const wf_matrix *m, int64_t r, int64_t b, __m256i w[4],
                                     const float *f16, __m256i gidx) {
    uint16_t d[4];
    for (int i = 0; i < 4; i++) w[i] = load_codes(m, r + i, b, &d[i], gidx);
    return _mm_set_ps(f16[d[3]], f16[d[2]], f16[d[1]], f16[d[0]]);
}

/* Untiled Q4 / Q8 rows: the 32 codes at p (Q4: nibbles n at p[j] low, p[j] high for j + 16). */
AVX2 static inline __m256i untiled_codes(const uint8_t *p, int q4) {
    if (!q4) return _mm256_loadu_si256((const __m256i *)p);
    const __m128i q = _mm_loadu_si128((const __m128i *)p), low = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), low), _mm_and_si128(q, low));
}

/* One token (decode) on an untiled Q4 payload, rows r..r+3, two blocks per step: one 256-bit
 * register holds the 16 payload bytes of blocks b and b+1, so its low nibbles are elements 0-15
 * of both blocks and its high nibbles elements 16-31; one hadd tree then yields the eight
 * D (4 rows x 2 blocks). Lane i of the float32 accumulator is row r+i and adds block b's
 * product before block b+1's, the contract's ascending order. Returns the blocks it did. */
AVX2 static inline int64_t rows4_q4_pairs(const wf_matrix *m, int64_t r, const int8_t *xq,
                                   const float *xd, const int32_t *xsum8, __m128 *acc_out) {
    const int64_t nb = m->cols / WF_QK, row_bytes = wf_stride(m);
    const float *f16 = wf_f16_table();
    const __m256i low = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const uint8_t *p = m->data + r * row_bytes;
    __m128 acc = *acc_out;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, p += 36) {
        const int8_t *x0 = xq + b * WF_QK, *x1 = x0 + WF_QK;
        const __m256i xlo = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)x1),
                                             _mm_loadu_si128((const __m128i *)x0));
        const __m256i xhi = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(x1 + 16)),
                                             _mm_loadu_si128((const __m128i *)(x0 + 16)));
        __m256i part[4];
        float dw[8];
        for (int i = 0; i < 4; i++) {
            const uint8_t *blk = p + i * row_bytes;
            /* The hardware prefetcher loses track of four interleaved row streams: fetch the
             * same blocks of the next four rows (about 2x on a memory-bound matvec here). */
            _mm_prefetch((const char *)(blk + 4 * row_bytes), _MM_HINT_T0);
            dw[i] = f16[blk[0] | (blk[1] << 8)];
            dw[4 + i] = f16[blk[18] | (blk[19] << 8)];
            const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + 20)),
                                               _mm_loadu_si128((const __m128i *)(blk + 2)));
            const __m256i lo = _mm256_and_si256(q, low);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
            const __m256i pairs =  /* at most 2·(2·15·127) in magnitude: no int16 overflow */
                _mm256_add_epi16(_mm256_maddubs_epi16(lo, xlo), _mm256_maddubs_epi16(hi, xhi));
            part[i] = _mm256_madd_epi16(pairs, ones);
        }
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(part[0], part[1]),
                                            _mm256_hadd_epi32(part[2], part[3]));
        const __m256i dots = _mm256_sub_epi32(
            h, _mm256_set_m128i(_mm_set1_epi32(xsum8[b + 1]), _mm_set1_epi32(xsum8[b])));
        const __m256 dx = _mm256_set_m128(_mm_set1_ps(xd[b + 1]), _mm_set1_ps(xd[b]));
        const __m256 prod = _mm256_mul_ps(_mm256_cvtepi32_ps(dots),
                                          _mm256_mul_ps(_mm256_loadu_ps(dw), dx));
        acc = _mm_add_ps(acc, _mm256_castps256_ps128(prod));
        acc = _mm_add_ps(acc, _mm256_extractf128_ps(prod, 1));
    }
    *acc_out = acc;
    return b;
}

/* The scales of the blocks at s + i·row_bytes, i = 0..7, widened by F16C (exact for every
 * binary16, as the table is): lane i is row i's d_w. */
AVX2 static inline __m256 scales8(const uint8_t *s, int64_t row_bytes) {
    return _mm256_cvtph_ps(_mm_setr_epi16(
        scale_bits(s), scale_bits(s + row_bytes), scale_bits(s + 2 * row_bytes),
        scale_bits(s + 3 * row_bytes), scale_bits(s + 4 * row_bytes),
        scale_bits(s + 5 * row_bytes), scale_bits(s + 6 * row_bytes),
        scale_bits(s + 7 * row_bytes)));
}

/* Row i's 8 int32 partial dots of one 256-bit register of Q4 payload bytes q (low half block
 * b, high half block b+1: low nibbles elements 0-15, high nibbles 16-31) against the matching
 * activation halves. At most 2·(2·15·127) per int16 pair: no overflow, every step exact. */
AVX2 static inline __m256i q4_parts(__m256i q, __m256i xlo, __m256i xhi) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i pairs =
        _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(q, low), xlo),
                         _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(q, 4), low), xhi));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

/* Eight rows' partial vectors p[0..7] (low half block b, high half b+1) into the eight D of
 * block b (*db) and of block b+1 (*db1), lane i = row i: two hadd levels leave rows 0-3 and
 * 4-7 of both blocks complete, one cross-lane permute per block regroups them. */
AVX2 static inline void transpose_dots8(const __m256i p[8], __m256i *db, __m256i *db1) {
    const __m256i h03 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]),
                                          _mm256_hadd_epi32(p[2], p[3]));
    const __m256i h47 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]),
                                          _mm256_hadd_epi32(p[6], p[7]));
    *db = _mm256_permute2x128_si256(h03, h47, 0x20);
    *db1 = _mm256_permute2x128_si256(h03, h47, 0x31);
}

/* One token (decode) on an untiled Q4 payload (spec/vqf.md §q4-0 legacy 18-byte blocks), rows
 * r..r+7 with row i in lane i of one float32x8 accumulator: per pair of blocks, each row's payload
 * bytes of both blocks share one register, the eight rows' partial vectors are reduced together,
 * and the accumulator adds block b's (float)D · (d_w · d_x) before block b+1's, the contract's
 * ascending order (spec/numerics.md §q8-activation). An odd last block goes through the same steps
 * with its bytes in both halves, using only block b. */
AVX2 static void rows8_one_token_q4_untiled(const wf_matrix *m, int64_t r, const int8_t *xq,
                                            const float *xd, const int32_t *xsum8, float *y) {
    const int64_t nb = m->cols / WF_QK, row_bytes = wf_stride(m);
    const uint8_t *p = m->data + r * row_bytes;
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
        for (int i = 0; i < 8; i++) {
            const uint8_t *blk = p + i * row_bytes;
            /* The hardware prefetcher loses track of eight interleaved row streams: fetch the
             * same bytes of the next eight rows (steps of 36 < 64 bytes reach every line). */
            _mm_prefetch((const char *)(blk + 8 * row_bytes), _MM_HINT_T0);
            const __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(blk + off1 + 2)),
                                               _mm_loadu_si128((const __m128i *)(blk + 2)));
            part[i] = q4_parts(q, xlo, xhi);
        }
        const __m256 dw = scales8(p, row_bytes);
        __m256i db, db1;
        transpose_dots8(part, &db, &db1);
        db = _mm256_sub_epi32(db, _mm256_set1_epi32(xsum8[b]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(db),
                                               _mm256_mul_ps(dw, _mm256_set1_ps(xd[b]))));
        if (!pair) break;
        const __m256 dw1 = scales8(p + 18, row_bytes);
        db1 = _mm256_sub_epi32(db1, _mm256_set1_epi32(xsum8[b1]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(db1),
                                               _mm256_mul_ps(dw1, _mm256_set1_ps(xd[b1]))));
    }
    _mm256_storeu_ps(y + r, acc);
}

/* One token (decode) on an untiled payload, rows r..r+3: row pointers advance block by block
 * and the accumulator stays in a register. */
AVX2 static inline void rows4_one_token_untiled(const wf_matrix *m, int64_t r, const int8_t *xq,
                                         const float *xd, const int32_t *xsum8, float *y) {
    const int64_t nb = m->cols / WF_QK;
    const int q4 = m->kind == WF_W_Q4;
    const int64_t bytes = q4 ? 18 : 34;
    const float *f16 = wf_f16_table();
    __m128 acc = _mm_setzero_ps();
    const int64_t start = q4 ? rows4_q4_pairs(m, r, xq, xd, xsum8, &acc) : 0;
    const uint8_t *p = wf_group(m, r) + start * bytes;
    for (int64_t b = start; b < nb; b++, p += bytes) {
        __m256i w[4];
        float dw[4];
        for (int i = 0; i < 4; i++) {
            const uint8_t *blk = p + i * wf_stride(m);
            _mm_prefetch((const char *)(blk + 4 * wf_stride(m)), _MM_HINT_T0); /* next 4 rows */
            dw[i] = f16[blk[0] | (blk[1] << 8)];
            w[i] = untiled_codes(blk + 2, q4);
        }
        const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + b * WF_QK));
        const __m128i dots = block_dots4(w, x, q4, q4 ? xsum8[b] : 0);
        const __m128 s = _mm_mul_ps(_mm_loadu_ps(dw), _mm_set1_ps(xd[b]));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(dots), s));
    }
    _mm_storeu_ps(y + r, acc);
}

/* One token (decode) on a Q4_0 4x4 payload (spec/vqf.md §q4-0), rows r..r+3 = one row group (r % 4
 * == 0): group block b is 4 f16 scales then 4 chunks of 16 bytes, chunk c holding payload bytes
 * 4c..4c+3 of rows 0..3 (XOR 0x88). Byte 4c+k of a row carries element 4c+k in its low nibble and
 * 16+4c+k in its high one, so against activation codes broadcast per 4-byte piece (permutes of x),
 * each 32-bit lane of a chunk's byte products is one row's partial dot: no transpose and no
 * horizontal adds. The int16 sums stay below 4·2·15·127 = 15240, and every integer step is exact,
 * so D is the same int32 as the scalar loop's. The scales are widened by F16C (exact for every
 * binary16, as the table is). Lane i of the float32 accumulator is row r+i: acc = acc + (float)D *
 * (d_w * d_x) over ascending blocks, the contract's order. */
AVX2 static inline void rows4_one_token_q4_4x4(const wf_matrix *m, int64_t r, const int8_t *xq,
                                               const float *xd, const int32_t *xsum8, float *y) {
    const int64_t nb = m->cols / WF_QK;
    const __m256i mask = _mm256_set1_epi8((char)0x88), low = _mm256_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i lo01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i lo23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
    const __m256i hi01 = _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5);
    const __m256i hi23 = _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7);
    const uint8_t *g = wf_group(m, r / 4);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += 72) {
        _mm_prefetch((const char *)(g + wf_stride(m)), _MM_HINT_T0); /* the next row group */
        _mm_prefetch((const char *)(g + wf_stride(m) + 64), _MM_HINT_T0);
        const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + b * WF_QK));
        const __m256i w01 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(g + 8)), mask);
        const __m256i w23 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(g + 40)), mask);
        __m256i pairs = _mm256_maddubs_epi16(_mm256_and_si256(w01, low),
                                             _mm256_permutevar8x32_epi32(x, lo01));
        pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(_mm256_and_si256(w23, low),
                                                             _mm256_permutevar8x32_epi32(x, lo23)));
        pairs = _mm256_add_epi16(
            pairs, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w01, 4), low),
                                        _mm256_permutevar8x32_epi32(x, hi01)));
        pairs = _mm256_add_epi16(
            pairs, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w23, 4), low),
                                        _mm256_permutevar8x32_epi32(x, hi23)));
        const __m256i sums = _mm256_madd_epi16(pairs, ones);
        const __m128i dots = _mm_sub_epi32(
            _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1)),
            _mm_set1_epi32(xsum8[b]));
        const __m128 dw = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)g));
        const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(xd[b]));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(dots), s));
    }
    _mm_storeu_ps(y + r, acc);
}

/* One token (decode) on a Q8_0 8x8 payload (spec/vqf.md §q8-tiled), rows r..r+7 = one row group (r
 * % 8 == 0): group block b is 8 f16 scales then 8 chunks of 32 bytes, chunk c holding payload bytes
 * 4c..4c+3 of rows 0..7 (no XOR). Against the activation piece 4c..4c+3 broadcast to every lane,
 * 32-bit lane i of a chunk's products is row i's partial dot: maddubs of |w| and x·sign(w) (at most
 * 2·128·127 per int16 pair), widened to int32 at once and summed over the chunks, so D is exact.
 * Lane i of the float32 accumulator is row r+i: acc = acc + (float)D * (d_w * d_x) over ascending
 * blocks, the contract's order. */
AVX2 static void rows8_one_token_q8_8x8(const wf_matrix *m, int64_t r, const int8_t *xq,
                                        const float *xd, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK);
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *g = wf_group(m, r / 8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        for (int i = 0; i < 5; i++) /* the next row group's block: 272 bytes, 5 lines */
            _mm_prefetch((const char *)(g + wf_stride(m) + 64 * i), _MM_HINT_T0);
        const int8_t *x = xq + b * WF_QK;
        __m256i dots = _mm256_setzero_si256();
        for (int c = 0; c < 8; c++) {
            int32_t piece;
            memcpy(&piece, x + 4 * c, 4);
            const __m256i w = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
            const __m256i xb = _mm256_set1_epi32(piece);
            const __m256i pairs =
                _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(xb, w));
            dots = _mm256_add_epi32(dots, _mm256_madd_epi16(pairs, ones));
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));
        const __m256 s = _mm256_mul_ps(dw, _mm256_set1_ps(xd[b]));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_cvtepi32_ps(dots), s));
    }
    _mm256_storeu_ps(y + r, acc);
}

/* Several tokens (prefill) on a Q4_0 4x4 payload, rows r..r+3 = one row group: the steps of
 * rows4_one_token_q4_4x4 for every token, with each group block's nibbles unpacked once and
 * reused by all tokens (a rows x tokens tile, weights read once per call). Token t's lane i is
 * row r+i: acc = acc + (float)D * (d_w * d_x) over ascending blocks, as the contract fixes. */
AVX2 static void rows4_tokens_q4_4x4(const wf_matrix *m, int64_t r, const int8_t *xq,
                                     const float *xd, const int32_t *xsum8, int64_t tokens,
                                     float *y) {
    const int64_t nb = m->cols / WF_QK;
    const __m256i mask = _mm256_set1_epi8((char)0x88), low = _mm256_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i lo01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i lo23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
    const __m256i hi01 = _mm256_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5);
    const __m256i hi23 = _mm256_setr_epi32(6, 6, 6, 6, 7, 7, 7, 7);
    const uint8_t *g = wf_group(m, r / 4);
    __m128 stack_acc[64], *acc = tokens <= 64 ? stack_acc : malloc(sizeof(__m128) * tokens);
    if (acc == NULL) return; /* y stays NaN-filled: the failure cannot pass unnoticed */
    for (int64_t t = 0; t < tokens; t++) acc[t] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += 72) {
        const __m256i w01 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(g + 8)), mask);
        const __m256i w23 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(g + 40)), mask);
        const __m256i l01 = _mm256_and_si256(w01, low), l23 = _mm256_and_si256(w23, low);
        const __m256i h01 = _mm256_and_si256(_mm256_srli_epi16(w01, 4), low);
        const __m256i h23 = _mm256_and_si256(_mm256_srli_epi16(w23, 4), low);
        const __m128 dw = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)g));
        for (int64_t t = 0; t < tokens; t++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + t * m->cols + b * WF_QK));
            __m256i pairs = _mm256_maddubs_epi16(l01, _mm256_permutevar8x32_epi32(x, lo01));
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(l23, _mm256_permutevar8x32_epi32(x, lo23)));
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(h01, _mm256_permutevar8x32_epi32(x, hi01)));
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(h23, _mm256_permutevar8x32_epi32(x, hi23)));
            const __m256i sums = _mm256_madd_epi16(pairs, ones);
            const __m128i dots = _mm_sub_epi32(
                _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1)),
                _mm_set1_epi32(xsum8[t * nb + b]));
            const __m128 sc = _mm_mul_ps(dw, _mm_set1_ps(xd[t * nb + b]));
            acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(dots), sc));
        }
    }
    for (int64_t t = 0; t < tokens; t++) _mm_storeu_ps(y + t * m->rows + r, acc[t]);
    if (acc != stack_acc) free(acc);
}

/* Several tokens (prefill) on a Q8_0 8x8 payload, rows r..r+7 = one row group: the steps of
 * rows8_one_token_q8_8x8 for every token, |w| of each group block made once for all tokens. */
AVX2 static void rows8_tokens_q8_8x8(const wf_matrix *m, int64_t r, const int8_t *xq,
                                     const float *xd, int64_t tokens, float *y) {
    const int64_t nb = m->cols / WF_QK, step = 8 * (2 + WF_QK);
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *g = wf_group(m, r / 8);
    /* __m256 needs 32-byte alignment, more than malloc promises */
    __m256 stack_acc[64],
        *acc = tokens <= 64 ? stack_acc : aligned_alloc(32, sizeof(__m256) * (size_t)tokens);
    if (acc == NULL) return;
    for (int64_t t = 0; t < tokens; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, g += step) {
        __m256i w[8], aw[8];
        for (int c = 0; c < 8; c++) {
            w[c] = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * c));
            aw[c] = _mm256_sign_epi8(w[c], w[c]);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)g));
        for (int64_t t = 0; t < tokens; t++) {
            const int8_t *x = xq + t * m->cols + b * WF_QK;
            __m256i dots = _mm256_setzero_si256();
            for (int c = 0; c < 8; c++) {
                int32_t piece;
                memcpy(&piece, x + 4 * c, 4);
                const __m256i pairs = _mm256_maddubs_epi16(
                    aw[c], _mm256_sign_epi8(_mm256_set1_epi32(piece), w[c]));
                dots = _mm256_add_epi32(dots, _mm256_madd_epi16(pairs, ones));
            }
            const __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(xd[t * nb + b]));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_cvtepi32_ps(dots), sc));
        }
    }
    for (int64_t t = 0; t < tokens; t++) _mm256_storeu_ps(y + t * m->rows + r, acc[t]);
    if (acc != stack_acc) free(acc);
}

static int is_q4_4x4(const wf_matrix *m) {
    return m->kind == WF_W_Q4 && m->group_rows == 4 && m->chunk_bytes == 4 &&
           m->xor_mask == 0x88;
}

static int is_q8_8x8(const wf_matrix *m) {
    return m->kind == WF_W_Q8 && m->group_rows == 8 && m->chunk_bytes == 4 && m->xor_mask == 0;
}

/* One token (decode): the accumulator stays in a register. */
AVX2 static inline void rows4_one_token(const wf_matrix *m, int64_t r, const int8_t *xq, const float
*xd,
                                 const int32_t *xsum8, float *y) {
    if (m->group_rows <= 1) {
        rows4_one_token_untiled(m, r, xq, xd, xsum8, y);
        return;
    }
    if (m->kind == WF_W_Q4 && m->group_rows == 4 && m->chunk_bytes == 4 && m->xor_mask == 0x88 &&
        r % 4 == 0) {
        rows4_one_token_q4_4x4(m, r, xq, xd, xsum8, y);
        return;
    }
    const int64_t nb = m->cols / WF_QK;
    const float *f16 = wf_f16_table();
    const int q4 = m->kind == WF_W_Q4;
    const __m256i gidx = tile_index(m);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i w[4];
        const __m128 dw = load_rows4(m, r, b, w, f16, gidx);
        const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + b * WF_QK));
        const __m128i dots = block_dots4(w, x, q4, q4 ? xsum8[b] : 0);
        const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(xd[b]));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(dots), s));
    }
    _mm_storeu_ps(y + r, acc);
}

AVX2 static void rows4(const wf_matrix *m, int64_t r, const int8_t *xq, const float *xd,
                       const int32_t *xsum8, int64_t tokens, float *y) {
    if (tokens == 1) {
        rows4_one_token(m, r, xq, xd, xsum8, y);
        return;
    }
    const int64_t nb = m->cols / WF_QK;
    const int q4 = m->kind == WF_W_Q4;
    const __m256i gidx = tile_index(m);
    const float *f16 = wf_f16_table();
    __m128 stack_acc[16], *acc = tokens <= 16 ? stack_acc : malloc(sizeof(__m128) * tokens);
    if (acc == NULL) return;
    for (int64_t t = 0; t < tokens; t++) acc[t] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i w[4];
        const __m128 dw = load_rows4(m, r, b, w, f16, gidx);
        for (int64_t t = 0; t < tokens; t++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(xq + t * m->cols + b * WF_QK));
            const __m128i dots = block_dots4(w, x, q4, q4 ? xsum8[t * nb + b] : 0);
            const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(xd[t * nb + b]));
            acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(dots), s));
        }
    }
    for (int64_t t = 0; t < tokens; t++) {
        float out[4];
        _mm_storeu_ps(out, acc[t]);
        for (int i = 0; i < 4; i++) y[t * m->rows + r + i] = out[i];
    }
    if (acc != stack_acc) free(acc);
}

/* spec/numerics.md §q8-activation steps 1-2 for the 32-element blocks [start, n) with AVX2; returns
 * the first block start it left to the caller (a block holding a NaN: the scalar loop keeps the
 * first NaN's bits as amax). amax is a maximum of non-NaN magnitudes, exact in any order; x ⊘ d is
 * the IEEE division and rounding to nearest-even is rintf's (default rounding mode), so the codes
 * are the scalar loop's. */
AVX2 int64_t wf_quantize_blocks_avx2(const float *x, int64_t start, int64_t n, int8_t *codes,
                                     float *scales) {
    const __m256 sign = _mm256_set1_ps(-0.0f), lim = _mm256_set1_ps(127.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; start + WF_QK <= n; start += WF_QK) {
        __m256 v[4], amax = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
        for (int i = 0; i < 4; i++) {
            v[i] = _mm256_loadu_ps(x + start + 8 * i);
            nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[i], v[i], _CMP_UNORD_Q));
            amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[i]));
        }
        if (_mm256_movemask_ps(nan)) return start;
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
        const float d = _mm_cvtss_f32(m4) / 127.0f;
        scales[start / WF_QK] = d;
        if (!(d > 0.0f && d <= 3.402823466e38f)) {
            memset(codes + start, 0, WF_QK);
            continue;
        }
        const __m256 dv = _mm256_set1_ps(d);
        __m256i q[4];
        for (int i = 0; i < 4; i++) {
            __m256 r = _mm256_round_ps(_mm256_div_ps(v[i], dv),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            r = _mm256_min_ps(_mm256_max_ps(r, _mm256_sub_ps(_mm256_setzero_ps(), lim)), lim);
            q[i] = _mm256_cvtps_epi32(r);
        }
        /* packs work per 128-bit half: the permute puts the 32 bytes back in element order */
        const __m256i p16a = _mm256_packs_epi32(q[0], q[1]), p16b = _mm256_packs_epi32(q[2], q[3]);
        const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
        _mm256_storeu_si256((__m256i *)(codes + start), _mm256_permutevar8x32_epi32(p8, order));
    }
    return start;
}

/* Rows r0.. in whole groups of four (as many as fit before r1); returns the first row left. */
AVX2 int64_t wf_q8_activation_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1,
                                        const int8_t *xq, const float *xd, const int32_t *xsum8,
                                        int64_t tokens, float *y) {
    const int q8_8x8 = tokens == 1 && is_q8_8x8(m);
    const int q4_rows8 = tokens == 1 && m->kind == WF_W_Q4 && m->group_rows <= 1;
    const int tiles_q8 = tokens > 1 && is_q8_8x8(m), tiles_q4 = tokens > 1 && is_q4_4x4(m);
    if (tokens > 1) /* prefill: bands of 8 rows x tiles of tokens (gemm_x86.c) */
        r0 = wf_gemm_rows_avx2(m, r0, r1, xq, xd, xsum8, tokens, y);
    while (r0 + 4 <= r1) {
        if (tiles_q8 && r0 % 8 == 0 && r0 + 8 <= r1) {
            rows8_tokens_q8_8x8(m, r0, xq, xd, tokens, y);
            r0 += 8;
        } else if (tiles_q4 && r0 % 4 == 0) {
            rows4_tokens_q4_4x4(m, r0, xq, xd, xsum8, tokens, y);
            r0 += 4;
        } else if (q8_8x8 && r0 % 8 == 0 && r0 + 8 <= r1) {
            rows8_one_token_q8_8x8(m, r0, xq, xd, y);
            r0 += 8;
        } else if (q4_rows8 && r0 + 8 <= r1) {
            rows8_one_token_q4_untiled(m, r0, xq, xd, xsum8, y);
            r0 += 8;
        } else {
            rows4(m, r0, xq, xd, xsum8, tokens, y);
            r0 += 4;
        }
    }
    return r0;
}

#else

int64_t wf_q8_activation_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                                   const float *xd, const int32_t *xsum8, int64_t tokens,
                                   float *y) {
    (void)m, (void)r1, (void)xq, (void)xd, (void)xsum8, (void)tokens, (void)y;
    return r0;
}

int64_t wf_quantize_blocks_avx2(const float *x, int64_t start, int64_t n, int8_t *codes,
                                float *scales) {
    (void)x, (void)n, (void)codes, (void)scales;
    return start;
}

#endif
