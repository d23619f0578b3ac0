/* CPU detection and the kernel path in use (spec/numerics.md §kernel-paths; declared in cpu.h).
 *
 * On x86-64 the AVX2 and AVX-512 kernels are compiled with target attributes into a baseline
 * build, so whether they may run is asked of the CPU (GCC's __builtin_cpu_supports); on Arm the
 * NEON (and dotprod) code is compiled in by -march, so the build answers. This file calls no other
 * kernel file: the kernels ask it, never the reverse.
 */
#include <stdatomic.h>
#include <stdint.h>

#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
int32_t wf_isa_cpu(int32_t isa) {
    __builtin_cpu_init();
    switch (isa) {
    case WF_ISA_PORTABLE:
        return 1;
    case WF_ISA_AVX2: /* every AVX2 CPU has F16C, but the kernels use both: ask for both */
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case WF_ISA_AVX512: /* what AVX-512 int8 kernels need: F, BW, VL and VNNI (vpdpbusd) */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    default:
        return 0;
    }
}

#else
int32_t wf_isa_cpu(int32_t isa) {
#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
    return isa == WF_ISA_PORTABLE || isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD;
#elif defined(__ARM_NEON)
    return isa == WF_ISA_PORTABLE || isa == WF_ISA_NEON;
#else
    return isa == WF_ISA_PORTABLE;
#endif
}

#endif

/* x86-64 AVX-512: the kernels (qmatvec_avx512.c) leave the rows outside their bands, and the
 * per-layer ops, to the AVX2 ones, so the path needs both instruction sets. */
#if !defined(__ARM_NEON)
static int32_t avx512_cpu(void) { return wf_isa_cpu(WF_ISA_AVX512) && wf_isa_cpu(WF_ISA_AVX2); }
#endif

/* The best path of this build: on Arm the NEON code is compiled in by -march, on x86-64 the AVX2
 * and AVX-512 functions are chosen at run time (qmatvec_x86.c, qmatvec_avx512.c). */
static int32_t best_isa(void) {
#if defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
    return WF_ISA_DOTPROD;
#elif defined(__ARM_NEON)
    return WF_ISA_NEON;
#else
    if (avx512_cpu()) return WF_ISA_AVX512;
    return wf_isa_cpu(WF_ISA_AVX2) ? WF_ISA_AVX2 : WF_ISA_PORTABLE;
#endif
}

/* -1 until first read; written only between calls (wf_set_isa), so workers read a settled value. */
static _Atomic int32_t active_isa = -1;

int32_t wf_isa_usable(int32_t isa) {
    if (isa == WF_ISA_PORTABLE) return 1;
#if defined(__ARM_NEON)
    return isa == WF_ISA_NEON || isa == best_isa();
#else
    return (isa == WF_ISA_AVX2 && wf_isa_cpu(WF_ISA_AVX2)) ||
           (isa == WF_ISA_AVX512 && avx512_cpu());
#endif
}

int32_t wf_isa(void) {
    int32_t isa = atomic_load_explicit(&active_isa, memory_order_relaxed);
    if (isa < 0) {
        isa = best_isa();
        atomic_store(&active_isa, isa);
    }
    return isa;
}

int32_t wf_set_isa(int32_t isa) {
    if (!wf_isa_usable(isa)) return -1;
    atomic_store(&active_isa, isa);
    return 0;
}

int32_t wf_simd_path(void) { return wf_isa(); }
