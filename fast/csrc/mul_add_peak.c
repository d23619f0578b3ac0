/* The separate multiply-then-add peak of one core, the bound of every F32 product under the
 * numerics contract (spec/numerics.md §no-fma, §dot): each term is a rounded product added to
 * its lane, one mul and one add, never a fused multiply-add. `weightfile bench` reports it beside
 * the Qwen3.5 vision tower's encode (weightfile/bench/vision35.py), whose linears are F32
 * products: their GFLOP/s cannot pass it, whatever the tiling.
 *
 * The instruction mix of fast/csrc/f32_x86.c's tiles with the operands held in registers: a tile
 * of 4 weight vectors by NX activation vectors, each of the 4 * NX accumulators adding its own
 * product per step (AVX-512: NX = 5 of 16 lanes, AVX2: 2 of 8; a 4 x 6 tile all in registers would
 * need 34 of the 32 and spill; no probe
 * elsewhere). The asm barriers make every w and x unknown to the compiler each step, so no product
 * is shared or folded and no chain merges with another. With w = 0.5, x = 1 every lane ends at 0.5 * steps exactly (below 2^24 steps), and the
 * return value, the sum of all lanes, is 0.5 * lanes * steps: a caller reads the work done
 * (2 * that many lane products and adds) from it. 0 when no vector path runs.
 */
#include <stdint.h>

#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define DEFINE_PROBE(NAME, ATTR, VEC, NX, LANES, SET1, MUL, ADD, STORE)                          \
    ATTR static double NAME(int64_t steps) {                                                    \
        VEC acc[BAND][NX], w[BAND], x[NX];                                                       \
        _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++) w[a] = SET1(0.5f);               \
        _Pragma("GCC unroll 8") for (int t = 0; t < NX; t++) x[t] = SET1(1.0f);                 \
        _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                                   \
            _Pragma("GCC unroll 8") for (int t = 0; t < NX; t++) acc[a][t] = SET1(0.0f);        \
        for (int64_t s = 0; s < steps; s++) {                                                    \
            _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                               \
                __asm__ volatile("" : "+v"(w[a]));                                               \
            _Pragma("GCC unroll 8") for (int t = 0; t < NX; t++)                                 \
                __asm__ volatile("" : "+v"(x[t]));                                               \
            _Pragma("GCC unroll 8") for (int a = 0; a < BAND; a++)                               \
                _Pragma("GCC unroll 8") for (int t = 0; t < NX; t++)                             \
                    acc[a][t] = ADD(acc[a][t], MUL(w[a], x[t]));                                 \
        }                                                                                        \
        double sum = 0;                                                                          \
        for (int a = 0; a < BAND; a++)                                                           \
            for (int t = 0; t < NX; t++) {                                                       \
                float l[LANES];                                                                  \
                STORE(l, acc[a][t]);                                                             \
                for (int j = 0; j < LANES; j++) sum += l[j];                                     \
            }                                                                                    \
        return sum;                                                                              \
    }

enum { BAND = 4 };
DEFINE_PROBE(probe_avx512, __attribute__((target("avx512f"))), __m512, 5, 16, _mm512_set1_ps,
             _mm512_mul_ps, _mm512_add_ps, _mm512_storeu_ps)
DEFINE_PROBE(probe_avx2, __attribute__((target("avx2"))), __m256, 2, 8, _mm256_set1_ps,
             _mm256_mul_ps, _mm256_add_ps, _mm256_storeu_ps)

double wf_mul_add_peak(int64_t steps) {
    if (wf_isa() == WF_ISA_AVX512) return probe_avx512(steps);
    if (wf_isa() == WF_ISA_AVX2) return probe_avx2(steps);
    return 0.0;
}

#else

double wf_mul_add_peak(int64_t steps) {
    (void)steps;
    return 0.0;
}

#endif
