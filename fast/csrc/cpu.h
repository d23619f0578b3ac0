/* Kernel paths and CPU detection (spec/numerics.md §kernel-paths), defined in cpu.c.
 *
 * Every path gives the same bits; which one runs is chosen once per process (the best this CPU
 * and build have) and can be forced by wf_set_isa. cpu.c calls no other kernel file, so every
 * kernel can ask it which path is in use without an include or call cycle.
 */
#ifndef WF_CPU_H
#define WF_CPU_H

#include <stdint.h>

enum { WF_ISA_PORTABLE = 0, WF_ISA_NEON = 1, WF_ISA_DOTPROD = 2, WF_ISA_AVX2 = 3, WF_ISA_AVX512 = 4
}; /* 1 when this CPU has the instructions of `isa` (asked at run time on x86-64, compile time on
 * Arm). */
int32_t wf_isa_cpu(int32_t isa);
/* 1 when this build has kernels for `isa` and the CPU can run them. */
int32_t wf_isa_usable(int32_t isa);
/* Make `isa` the path every later call takes; 0 on success, -1 (nothing changed) when unusable.
 * Call it between products, never during one. */
int32_t wf_set_isa(int32_t isa);
/* The path in use. */
int32_t wf_isa(void);
/* The path the kernels take: WF_ISA_* (0 portable C, 1 NEON, 2 NEON + dotprod, 3 x86 AVX2,
 * 4 x86 AVX-512 + VNNI). */
int32_t wf_simd_path(void);

#endif
