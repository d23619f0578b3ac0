/* The SIMD forms of the per-layer operations: AVX2 on x86-64 (chosen at run time, target
 * attributes, as qmatvec_x86.c), NEON on aarch64 (compiled in by -march). One body, ops_body.h,
 * is written over a vector type and included once per path, so the paths cannot drift apart;
 * model_ops.c picks the table of the path in use (spec/numerics.md §kernel-paths) and keeps the
 * plain C loops for the portable path. Every path gives the plain C's bits: see ops_body.h.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops_vec.h"
#include "wf_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* a target attribute on every function (not a pragma region, which clang does not honour) */
#define ATTR __attribute__((target("avx2,f16c")))
#define SFX(name) avx2_##name
#define W 8
#define V __m256
#define VM __m256
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VZERO _mm256_setzero_ps
#define VADD _mm256_add_ps
#define VSUB _mm256_sub_ps
#define VMUL _mm256_mul_ps
#define VDIV _mm256_div_ps
#define VMIN _mm256_min_ps
#define VMAX _mm256_max_ps
#define VGT(a, b) _mm256_cmp_ps(a, b, _CMP_GT_OQ)
#define VLT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VISNAN(a) _mm256_cmp_ps(a, a, _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm256_blendv_ps(b, a, m)
#define VBITS(u) _mm256_castsi256_ps(_mm256_set1_epi32((int32_t)(u)))
#define VPOW2(k)                                                                                   \
    _mm256_castsi256_ps(                                                                           \
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(k), _mm256_set1_epi32(127)), 23))
#define VNEG(a) _mm256_xor_ps(a, _mm256_set1_ps(-0.0f))
#include "ops_body.h"

/* The AVX-512 path: the element-wise operations on 16 lanes (ops_elem_body.h), the sums on the
 * AVX2 forms' eight lanes (their order is the contract's, not the register's). */
#undef ATTR
#undef SFX
#undef W
#undef V
#undef VM
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VZERO
#undef VADD
#undef VSUB
#undef VMUL
#undef VDIV
#undef VMIN
#undef VMAX
#undef VGT
#undef VLT
#undef VISNAN
#undef VSEL
#undef VBITS
#undef VPOW2
#undef VNEG
#define ATTR __attribute__((target("avx512f,avx2,f16c")))
#define SFX(name) avx512_##name
#define W 16
#define V __m512
#define VM __mmask16
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VZERO _mm512_setzero_ps
#define VADD _mm512_add_ps
#define VSUB _mm512_sub_ps
#define VMUL _mm512_mul_ps
#define VDIV _mm512_div_ps
#define VMIN _mm512_min_ps
#define VMAX _mm512_max_ps
#define VGT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ)
#define VLT(a, b) _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ)
#define VISNAN(a) _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q)
#define VSEL(m, a, b) _mm512_mask_blend_ps(m, b, a)
#define VBITS(u) _mm512_castsi512_ps(_mm512_set1_epi32((int32_t)(u)))
#define VPOW2(k)                                                                                   \
    _mm512_castsi512_ps(                                                                           \
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(k), _mm512_set1_epi32(127)), 23))
#define VNEG(a)                                                                                    \
    _mm512_castsi512_ps(                                                                           \
        _mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int32_t)0x80000000u)))
#include "ops_elem_body.h"

/* spec/numerics.md §rmsnorm: the sum of squares as the AVX2 form, the scaling 16 lanes wide. */
ATTR static void avx512_rmsnorm_rows(const float *x, int64_t nrows, int64_t n, const float *w,
                                     float eps, float *out) {
    for (int64_t row = 0; row < nrows; row++) {
        const float ss = avx2_dot(x + row * n, x + row * n, n);
        avx512_scale_row(x + row * n, 1.0f / sqrtf(ss / (float)n + eps), w, n, out + row * n);
    }
}

static const wf_vec_ops avx512_ops = {avx512_exp_array, avx512_swiglu, avx512_rmsnorm_rows,
                                      avx512_rotate, avx2_attend_group};

const wf_vec_ops *wf_vec_ops_for(int32_t isa) {
    /* in force only where usable (wf_set_isa) */
    return isa == WF_ISA_AVX512 ? &avx512_ops : isa == WF_ISA_AVX2 ? &avx2_ops : NULL;
}

#elif defined(__ARM_NEON)
#include <arm_neon.h>

#define ATTR
#define SFX(name) neon_##name
#define W 4
#define V float32x4_t
#define VM uint32x4_t
#define VLOAD vld1q_f32
#define VSTORE vst1q_f32
#define VSET1 vdupq_n_f32
#define VZERO() vdupq_n_f32(0.0f)
#define VADD vaddq_f32
#define VSUB vsubq_f32
#define VMUL vmulq_f32
#define VDIV vdivq_f32
#define VMIN vminq_f32
#define VMAX vmaxq_f32
#define VGT vcgtq_f32
#define VLT vcltq_f32
#define VISNAN(a) vmvnq_u32(vceqq_f32(a, a))
#define VSEL(m, a, b) vbslq_f32(m, a, b)
#define VBITS(u) vreinterpretq_f32_u32(vdupq_n_u32(u))
#define VPOW2(k)                                                                                   \
    vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23))
#define VNEG vnegq_f32
#include "ops_body.h"

const wf_vec_ops *wf_vec_ops_for(int32_t isa) {
    return isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD ? &neon_ops : NULL;
}

#else
const wf_vec_ops *wf_vec_ops_for(int32_t isa) {
    (void)isa;
    return NULL;
}
#endif
