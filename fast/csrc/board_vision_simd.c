/* The board vision tower's float operations on the SIMD paths (spec/numerics.md §board-vision):
 * board_vision_body.h included once per path — AVX2 and AVX-512 on x86-64 (target attributes,
 * chosen at run time, cpu.h), NEON on aarch64 (compiled in by -march). Lanes are outputs, so
 * every path gives board_vision.c's portable bits (see the body). The vector FMA instructions
 * round once, as fmaf does; nothing here is contracted (-ffp-contract=off).
 */
#include <stddef.h>
#include <stdint.h>

#include "board_vision.h"
#include "cpu.h"

#define BV_TABLE(name, w, wd)                                                                      \
    static const wfv_simd name = {w,              wd,             SFX(bv_scores),                  \
                                  SFX(bv_weighted_sum), SFX(bv_dense8), SFX(bv_patch),             \
                                  SFX(bv_gelu),         SFX(bv_tanhf_array)}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define ATTR __attribute__((target("avx2,fma")))
#define SFX(name) avx2_##name
#define W 8
#define V __m256
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VADD _mm256_add_ps
#define VMUL _mm256_mul_ps
#define VFMA _mm256_fmadd_ps
#define WD 4
#define VD __m256d
#define VDZERO _mm256_setzero_pd
#define VDSTORE _mm256_storeu_pd
#define VDSET1 _mm256_set1_pd
#define VDFMA _mm256_fmadd_pd
#define VDCVT(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define VSUB _mm256_sub_ps
#define VDIV _mm256_div_ps
#define VNEG(a) _mm256_xor_ps(a, _mm256_set1_ps(-0.0f))
#define VBITS(u) _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(u)))
#define VLT(a, b) _mm256_castps_si256(_mm256_cmp_ps(a, b, _CMP_LT_OQ))
#define VM __m256i
#define VSEL(m, a, b) _mm256_blendv_ps(b, a, _mm256_castsi256_ps(m))
#define VMAND _mm256_and_si256
#define VMOR _mm256_or_si256
#define VMNOT(m) _mm256_xor_si256(m, _mm256_set1_epi32(-1))
#define VI __m256i
#define VISET1 _mm256_set1_epi32
#define VIADD _mm256_add_epi32
#define VISUB _mm256_sub_epi32
#define VIAND _mm256_and_si256
#define VIGT _mm256_cmpgt_epi32
#define VILT(a, b) _mm256_cmpgt_epi32(b, a)
#define VIEQ _mm256_cmpeq_epi32
#define VISEL(m, a, b) _mm256_blendv_epi8(b, a, m)
#define VISHL23(k) _mm256_slli_epi32(k, 23)
#define VISRLV _mm256_srlv_epi32
#define VCVTT _mm256_cvttps_epi32
#define VCVTIF _mm256_cvtepi32_ps
#define VCASTI _mm256_castps_si256
#define VCASTF _mm256_castsi256_ps
#include "board_vision_body.h"
BV_TABLE(avx2_table, W, WD);

#undef ATTR
#undef SFX
#undef W
#undef V
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VADD
#undef VMUL
#undef VFMA
#undef WD
#undef VD
#undef VDZERO
#undef VDSTORE
#undef VDSET1
#undef VDFMA
#undef VDCVT
#undef VSUB
#undef VDIV
#undef VNEG
#undef VBITS
#undef VLT
#undef VM
#undef VSEL
#undef VMAND
#undef VMOR
#undef VMNOT
#undef VI
#undef VISET1
#undef VIADD
#undef VISUB
#undef VIAND
#undef VIGT
#undef VILT
#undef VIEQ
#undef VISEL
#undef VISHL23
#undef VISRLV
#undef VCVTT
#undef VCVTIF
#undef VCASTI
#undef VCASTF

#define ATTR __attribute__((target("avx2,fma,avx512f")))
#define SFX(name) avx512_##name
#define W 16
#define V __m512
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VADD _mm512_add_ps
#define VMUL _mm512_mul_ps
#define VFMA _mm512_fmadd_ps
#define WD 8
#define VD __m512d
#define VDZERO _mm512_setzero_pd
#define VDSTORE _mm512_storeu_pd
#define VDSET1 _mm512_set1_pd
#define VDFMA _mm512_fmadd_pd
#define VDCVT(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define VSUB _mm512_sub_ps
#define VDIV _mm512_div_ps
#define VNEG(a) VCASTF(_mm512_xor_si512(VCASTI(a), _mm512_set1_epi32((int32_t)0x80000000u)))
#define VBITS(u) _mm512_castsi512_ps(_mm512_set1_epi32((int32_t)(u)))
#define VLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VM __mmask16
#define VSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define VMAND(a, b) ((__mmask16)((a) & (b)))
#define VMOR(a, b) ((__mmask16)((a) | (b)))
#define VMNOT(m) ((__mmask16)~(m))
#define VI __m512i
#define VISET1 _mm512_set1_epi32
#define VIADD _mm512_add_epi32
#define VISUB _mm512_sub_epi32
#define VIAND _mm512_and_si512
#define VIGT _mm512_cmpgt_epi32_mask
#define VILT _mm512_cmplt_epi32_mask
#define VIEQ _mm512_cmpeq_epi32_mask
#define VISEL(m, a, b) _mm512_mask_blend_epi32(m, b, a)
#define VISHL23(k) _mm512_slli_epi32(k, 23)
#define VISRLV _mm512_srlv_epi32
#define VCVTT _mm512_cvttps_epi32
#define VCVTIF _mm512_cvtepi32_ps
#define VCASTI _mm512_castps_si512
#define VCASTF _mm512_castsi512_ps
#include "board_vision_body.h"
BV_TABLE(avx512_table, W, WD);

const wfv_simd *wfv_simd_for(int32_t isa) {
    /* the AVX2 path itself does not ask for FMA (cpu.c); these bodies need it */
    if (isa == WF_ISA_AVX2 && !__builtin_cpu_supports("fma")) return NULL;
    return isa == WF_ISA_AVX512 ? &avx512_table : isa == WF_ISA_AVX2 ? &avx2_table : NULL;
}

#elif defined(__ARM_NEON)
#include <arm_neon.h>

#define ATTR
#define SFX(name) neon_##name
#define W 4
#define V float32x4_t
#define VLOAD vld1q_f32
#define VSTORE vst1q_f32
#define VSET1 vdupq_n_f32
#define VZERO() vdupq_n_f32(0.0f)
#define VADD vaddq_f32
#define VMUL vmulq_f32
#define VFMA(a, b, c) vfmaq_f32(c, a, b)
#define WD 2
#define VD float64x2_t
#define VDZERO() vdupq_n_f64(0.0)
#define VDSTORE vst1q_f64
#define VDSET1 vdupq_n_f64
#define VDFMA(a, b, c) vfmaq_f64(c, a, b)
#define VDCVT(p) vcvt_f64_f32(vld1_f32(p))
#define VSUB vsubq_f32
#define VDIV vdivq_f32
#define VNEG vnegq_f32
#define VBITS(u) vreinterpretq_f32_u32(vdupq_n_u32(u))
#define VLT vcltq_f32
#define VM uint32x4_t
#define VSEL(m, a, b) vbslq_f32(m, a, b)
#define VMAND vandq_u32
#define VMOR vorrq_u32
#define VMNOT vmvnq_u32
#define VI int32x4_t
#define VISET1 vdupq_n_s32
#define VIADD vaddq_s32
#define VISUB vsubq_s32
#define VIAND vandq_s32
#define VIGT vcgtq_s32
#define VILT vcltq_s32
#define VIEQ vceqq_s32
#define VISEL(m, a, b) vbslq_s32(m, a, b)
#define VISHL23(k) vshlq_n_s32(k, 23)
#define VISRLV(a, k) vreinterpretq_s32_u32(vshlq_u32(vreinterpretq_u32_s32(a), vnegq_s32(k)))
#define VCVTT vcvtq_s32_f32
#define VCVTIF vcvtq_f32_s32
#define VCASTI vreinterpretq_s32_f32
#define VCASTF vreinterpretq_f32_s32
#include "board_vision_body.h"
BV_TABLE(neon_table, W, WD);

const wfv_simd *wfv_simd_for(int32_t isa) {
    return isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD ? &neon_table : NULL;
}

#else
const wfv_simd *wfv_simd_for(int32_t isa) {
    (void)isa;
    return NULL;
}
#endif
