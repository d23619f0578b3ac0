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
    static const wfv_simd name = {w,                      wd,                                      \
                                  SFX(bv_scores),         SFX(bv_weighted_sum),                    \
                                  SFX(bv_dense8),         SFX(bv_patch)}

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
