/* Helpers shared by the x86-64 SIMD kernel files (qmatvec_x86.c, gemm_x86.c, qmatvec_avx512.c),
 * included only inside their x86-64 blocks. The AVX2-target helper inlines into the AVX-512
 * kernels as well: a callee's target may be a subset of its caller's. */
#ifndef WF_X86_COMMON_H
#define WF_X86_COMMON_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The f16 scale bits that begin a block (little-endian). */
static inline __attribute__((always_inline)) short scale_bits(const uint8_t *blk) {
    uint16_t d;
    memcpy(&d, blk, 2);
    return (short)d;
}

/* Eight rows' partial vectors p[i] (8 int32 each, summing to row i's D) into one vector whose
 * lane i is row i's D: two hadd levels, then the two 128-bit halves added. Integer: exact. */
__attribute__((target("avx2,f16c"))) static inline __attribute__((always_inline)) __m256i
rows_of(const __m256i p[8]) {
    const __m256i h03 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i h47 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(h03, h47, 0x20),
                            _mm256_permute2x128_si256(h03, h47, 0x31));
}

#endif
