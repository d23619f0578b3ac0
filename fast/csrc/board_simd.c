/* The board's products (spec/numerics.md §board-products) with AVX2, AVX-512 + VNNI and NEON,
 * bit for bit board.c's portable rows.
 *
 * A tile's lanes are rows: lane i of every float32 vector is row r + i, and it performs exactly
 * the portable sequence of that row — s = f16(scale) · d_x[b] (one rounding), then fma(D, s, acc)
 * (one rounding: the vector FMA instructions round once like fmaf) or acc + s·D, blocks
 * ascending — so no float sum changes its order. Only the 32-element integer dots D are formed
 * another way, and those are exact in any order for any int8 codes (−128 included): AVX2
 * widens to int16 and uses madd (|products| ≤ 2^14, pairs ≤ 2^15); VNNI's vpdpbusd multiplies
 * w + 128 (unsigned) by x and starts from −128·Σx; NEON multiplies to int16 (vmull) and pairs
 * into int32, or uses sdot. Every partial keeps elements 0–15 (the Q4 decode's `lo` chain) apart
 * from 16–31 (`hi`). The f16 widening (vcvtph2ps, fcvtl) is exact, subnormals included. Rows
 * outside whole tiles are left to the portable loop. x86 bodies are compiled with target
 * attributes and chosen at run time (cpu.h); the NEON body is compiled in by -march.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "cpu.h"

/* A tile reads its rows side by side, 8 (or 4) streams a row apart, which the hardware
 * prefetchers follow poorly (a 2 KiB row is 32 lines: each stream ends before it is learnt); the
 * matrix as a whole is read in order, so each load asks for the same place in the next tile.
 * On the Qwen3-VL-2B lm_head: 3.5 -> 8-16 GB/s, contended (docs/performance.md). A prefetch
 * past the matrix's end is a hint, never a fault. */
#define WFB_NEXT_TILE(ptr, tile_bytes) __builtin_prefetch((const char *)(ptr) + (tile_bytes), 0, 3)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define WFB_AVX2 __attribute__((target("avx2,f16c,fma")))
#define WFB_AVX512 __attribute__((target("avx2,f16c,fma,avx512f,avx512bw,avx512vl,avx512vnni")))

/* Eight rows' partials (lanes 0-3: elements 0-15, lanes 4-7: 16-31) into lane i = row i's
 * element 0-15 sum (*lo) and 16-31 sum (*hi): hadd keeps the 128-bit halves apart. Exact. */
WFB_AVX2 static inline __attribute__((always_inline)) void
wfb_rows8(const __m256i p[8], __m256i *lo, __m256i *hi) {
    const __m256i h03 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i h47 =
        _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    *lo = _mm256_permute2x128_si256(h03, h47, 0x20);
    *hi = _mm256_permute2x128_si256(h03, h47, 0x31);
}

/* One block's float step of the eight rows: the portable loop's body, lane-wise. */
WFB_AVX2 static inline __attribute__((always_inline)) void
wfb_step8(const wfb_mv *p, __m128i sbits, int64_t b, __m256i dlo, __m256i dhi, __m256 *lo,
          __m256 *hi) {
    const __m256 s = _mm256_mul_ps(_mm256_cvtph_ps(sbits), _mm256_set1_ps(p->dx[b]));
    if (p->form == FORM_Q4_DECODE) {
        *lo = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dlo), s, *lo);
        *hi = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dhi), s, *hi);
    } else if (p->form == FORM_SINGLE_CHAIN) {
        *lo = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(dlo, dhi)), s, *lo);
    } else {
        *lo = _mm256_add_ps(*lo, _mm256_mul_ps(s, _mm256_cvtepi32_ps(_mm256_add_epi32(dlo, dhi))));
    }
}

WFB_AVX2 static inline __attribute__((always_inline)) void wfb_store8(const wfb_mv *p, int64_t r,
                                                                      __m256 lo, __m256 hi) {
    _mm256_storeu_ps(p->y + r, p->form == FORM_Q4_DECODE ? _mm256_add_ps(lo, hi) : lo);
}

/* AVX2: the codes sign-extended to int16 by unpacking each byte with itself and shifting. */
WFB_AVX2 static void wfb_tile8_avx2(const wfb_mv *p, int64_t r) {
    const int64_t cols = p->cols, nb = cols / WFB_QB;
    const int8_t *w = p->w + r * cols;
    const uint16_t *sb = p->sb + r * nb;
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(p->xc + b * WFB_QB));
        const __m256i xl = _mm256_srai_epi16(_mm256_unpacklo_epi8(xv, xv), 8);
        const __m256i xh = _mm256_srai_epi16(_mm256_unpackhi_epi8(xv, xv), 8);
        __m256i part[8], dlo, dhi;
        uint16_t sbits[8];
        for (int i = 0; i < 8; i++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + i * cols + b * WFB_QB));
            const __m256i wl = _mm256_srai_epi16(_mm256_unpacklo_epi8(wv, wv), 8);
            const __m256i wh = _mm256_srai_epi16(_mm256_unpackhi_epi8(wv, wv), 8);
            part[i] = _mm256_add_epi32(_mm256_madd_epi16(wl, xl), _mm256_madd_epi16(wh, xh));
            WFB_NEXT_TILE(w + i * cols + b * WFB_QB, 8 * cols);
            sbits[i] = sb[i * nb + b];
        }
        wfb_rows8(part, &dlo, &dhi);
        wfb_step8(p, _mm_loadu_si128((const __m128i *)sbits), b, dlo, dhi, &lo, &hi);
    }
    wfb_store8(p, r, lo, hi);
}

/* AVX-512 VNNI: vpdpbusd of w XOR 0x80 = w + 128 and x, from −128·Σx per 4-byte group. Two
 * blocks per 512-bit load (their halves reduced as the AVX2 tile's), an odd last block alone. */
WFB_AVX512 static inline __attribute__((always_inline)) void
wfb_block_vnni(const wfb_mv *p, const int8_t *w, const uint16_t *sb, int64_t b, __m256 *lo,
               __m256 *hi) {
    const int64_t cols = p->cols, nb = cols / WFB_QB;
    const __m256i flip = _mm256_set1_epi8((char)0x80), zero = _mm256_setzero_si256();
    const __m256i x = _mm256_loadu_si256((const __m256i *)(p->xc + b * WFB_QB));
    const __m256i init = _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(zero, flip, x));
    __m256i part[8], dlo, dhi;
    uint16_t sbits[8];
    for (int i = 0; i < 8; i++) {
        const __m256i wv = _mm256_loadu_si256((const __m256i *)(w + i * cols + b * WFB_QB));
        part[i] = _mm256_dpbusd_epi32(init, _mm256_xor_si256(wv, flip), x);
        sbits[i] = sb[i * nb + b];
    }
    wfb_rows8(part, &dlo, &dhi);
    wfb_step8(p, _mm_loadu_si128((const __m128i *)sbits), b, dlo, dhi, lo, hi);
}

WFB_AVX512 static void wfb_tile8_vnni(const wfb_mv *p, int64_t r) {
    const int64_t cols = p->cols, nb = cols / WFB_QB;
    const int8_t *w = p->w + r * cols;
    const uint16_t *sb = p->sb + r * nb;
    const __m512i flip = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const __m512i x = _mm512_loadu_si512(p->xc + b * WFB_QB);
        const __m512i init = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, flip, x));
        __m256i pa[8], pb[8], dlo, dhi;
        uint32_t pair[8]; /* the scale bits of blocks b (low half) and b + 1 (high half) */
        for (int i = 0; i < 8; i++) {
            const int8_t *wb = w + i * cols + b * WFB_QB;
            const __m512i wv = _mm512_xor_si512(_mm512_loadu_si512(wb), flip);
            const __m512i d = _mm512_dpbusd_epi32(init, wv, x);
            pa[i] = _mm512_castsi512_si256(d);
            pb[i] = _mm512_extracti64x4_epi64(d, 1);
            memcpy(&pair[i], sb + i * nb + b, 4);
            WFB_NEXT_TILE(wb, 8 * cols);
        }
        const __m256i both = _mm256_loadu_si256((const __m256i *)pair);
        wfb_rows8(pa, &dlo, &dhi);
        wfb_step8(p, _mm256_cvtepi32_epi16(both), b, dlo, dhi, &lo, &hi);
        wfb_rows8(pb, &dlo, &dhi);
        const __m128i next = _mm256_cvtepi32_epi16(_mm256_srli_epi32(both, 16));
        wfb_step8(p, next, b + 1, dlo, dhi, &lo, &hi);
    }
    if (b < nb) wfb_block_vnni(p, w, sb, b, &lo, &hi);
    wfb_store8(p, r, lo, hi);
}

int64_t wfb_mv_rows_simd(const wfb_mv *p, int64_t r0, int64_t r1) {
    const int32_t isa = wf_isa();
    __builtin_cpu_init();
    if ((isa != WF_ISA_AVX2 && isa != WF_ISA_AVX512) || !__builtin_cpu_supports("fma")) return r0;
    int64_t r = r0;
    for (; r + 8 <= r1; r += 8) {
        if (isa == WF_ISA_AVX512)
            wfb_tile8_vnni(p, r);
        else
            wfb_tile8_avx2(p, r);
    }
    return r;
}

#elif defined(__ARM_NEON)
#include <arm_neon.h>

/* Four rows' int32x4 partials into lane i = row i's sum. Exact. */
static inline int32x4_t wfb_rows4(const int32x4_t p[4]) {
    return vpaddq_s32(vpaddq_s32(p[0], p[1]), vpaddq_s32(p[2], p[3]));
}

/* Sixteen codes' dot in four int32 partials: sdot, or int16 products paired into int32. */
static inline int32x4_t wfb_dot16(int8x16_t w, int8x16_t x, int dotprod) {
#if defined(__ARM_FEATURE_DOTPROD)
    if (dotprod) return vdotq_s32(vdupq_n_s32(0), w, x);
#endif
    (void)dotprod;
    return vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x))),
                       vmull_high_s8(w, x));
}

static void wfb_tile4_neon(const wfb_mv *p, int64_t r, int dotprod) {
    const int64_t cols = p->cols, nb = cols / WFB_QB;
    const int8_t *w = p->w + r * cols;
    const uint16_t *sb = p->sb + r * nb;
    float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        const int8x16_t xl = vld1q_s8(p->xc + b * WFB_QB), xh = vld1q_s8(p->xc + b * WFB_QB + 16);
        int32x4_t pl[4], ph[4];
        uint16_t sbits[4];
        for (int i = 0; i < 4; i++) {
            const int8_t *wb = w + i * cols + b * WFB_QB;
            pl[i] = wfb_dot16(vld1q_s8(wb), xl, dotprod);
            ph[i] = wfb_dot16(vld1q_s8(wb + 16), xh, dotprod);
            WFB_NEXT_TILE(wb, 4 * cols);
            sbits[i] = sb[i * nb + b];
        }
        const int32x4_t dlo = wfb_rows4(pl), dhi = wfb_rows4(ph);
        const float32x4_t s = vmulq_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(sbits))),
                                        vdupq_n_f32(p->dx[b]));
        if (p->form == FORM_Q4_DECODE) {
            lo = vfmaq_f32(lo, vcvtq_f32_s32(dlo), s); /* lo + D·s, rounded once */
            hi = vfmaq_f32(hi, vcvtq_f32_s32(dhi), s);
        } else if (p->form == FORM_SINGLE_CHAIN) {
            lo = vfmaq_f32(lo, vcvtq_f32_s32(vaddq_s32(dlo, dhi)), s);
        } else {
            lo = vaddq_f32(lo, vmulq_f32(s, vcvtq_f32_s32(vaddq_s32(dlo, dhi))));
        }
    }
    vst1q_f32(p->y + r, p->form == FORM_Q4_DECODE ? vaddq_f32(lo, hi) : lo);
}

int64_t wfb_mv_rows_simd(const wfb_mv *p, int64_t r0, int64_t r1) {
    const int32_t isa = wf_isa();
    if (isa != WF_ISA_NEON && isa != WF_ISA_DOTPROD) return r0;
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) wfb_tile4_neon(p, r, isa == WF_ISA_DOTPROD);
    return r;
}

#else
int64_t wfb_mv_rows_simd(const wfb_mv *p, int64_t r0, int64_t r1) {
    (void)p;
    (void)r1;
    return r0;
}
#endif
