/* The tanh GELU's binary64 estimate and its guard test (spec/numerics.md §vision-gelu) on GW
 * elements at a time, written once and included by gelu.c per kernel path with ATTR (the path's
 * target attribute), SFX(name) (a per-path name) and GW (binary64 lanes) defined.
 *
 * Lane by lane these are the operations of gelu.c's scalar tanh_estimate and guard_flag, in the
 * same order (GCC vector + - * / are lane-wise IEEE operations, never fused: -ffp-contract=off),
 * so every path computes the same estimate and flags the same elements.
 */
typedef double SFX(vd) __attribute__((vector_size(8 * GW), aligned(8)));
typedef int64_t SFX(vl) __attribute__((vector_size(8 * GW), aligned(8)));
typedef float SFX(vf) __attribute__((vector_size(4 * GW), aligned(4)));
typedef int32_t SFX(vw) __attribute__((vector_size(4 * GW), aligned(4)));
#define VD SFX(vd)
#define VL SFX(vl)
#define VF SFX(vf)
#define VW SFX(vw)

/* Lanes of a where m (all ones), else of b. */
ATTR static inline VD SFX(select)(VL m, VD a, VD b) {
    return (VD)(((VL)a & m) | ((VL)b & ~m));
}

/* exp_estimate (gelu.c) lane-wise: a in [-708, 709]. */
ATTR static inline VD SFX(vexp)(VD a) {
    const VD t = a * INV_LN2 + SHIFTER;
    const VD kd = t - SHIFTER;
    const VD r = (a - kd * LN2_HI) - kd * LN2_LO;
    VD p = (VD){0} + INV_FACT[EXP_DEGREE];
    for (int n = EXP_DEGREE - 1; n >= 0; n--) p = p * r + INV_FACT[n];
    const VL k = (VL)t - SHIFTER_BITS;
    return p * (VD)((k + 1023) << 52);
}

/* tanh_estimate then guard_flag on x[0..GW): out the estimate's binary32 rounding, flags 1 where
 * a binary32 midpoint lies within guard·|c| of the estimate c (or c is not finite). */
ATTR static inline __attribute__((always_inline)) void SFX(tanh_block)(const float *x, double guard,
                                                                      float *out, uint8_t *flags) {
    VF xf;
    memcpy(&xf, x, sizeof xf);
    const VD v = __builtin_convertvector(xf, VD);
    const VD u = SQRT_2_OVER_PI * (v + GELU_K * (v * v * v));
    VD e = -2.0 * u;
    e = SFX(select)(e > 709.0, (VD){0} + 709.0, e);
    e = SFX(select)(e < -708.0, (VD){0} - 708.0, e);
    const VD c = v / (1.0 + SFX(vexp)(e));
    const VF f = __builtin_convertvector(c, VF);
    const VW b = (VW)f & 0x7fffffff;
    const VD mag = __builtin_convertvector((VF)b, VD);
    const VD up = __builtin_convertvector((VF)(b + 1), VD);
    const VD down = __builtin_convertvector((VF)(b - 1), VD);
    const VD ac = (VD)((VL)c & 0x7fffffffffffffffLL);
    const VD near_up = (mag + up) / 2.0 - ac;
    const VD near_down = ac - (mag + down) / 2.0;
    const VL zero = __builtin_convertvector(b == 0, VL);
    VD near = SFX(select)(near_down < near_up, near_down, near_up);
    near = SFX(select)(zero, near_up, near);
    const VL ok = (near > guard * ac) & __builtin_convertvector(b < 0x7f800000, VL);
    memcpy(out, &f, sizeof f);
    for (int l = 0; l < GW; l++) flags[l] = ok[l] == 0;
}

/* Whole blocks of [0, n) (two at a time, so that two polynomial chains overlap); returns the
 * first element left to the scalar form. */
ATTR static int64_t SFX(tanh_range)(const float *x, int64_t n, double guard, float *out,
                                    uint8_t *flags) {
    int64_t i = 0;
    for (; i + 2 * GW <= n; i += 2 * GW) {
        SFX(tanh_block)(x + i, guard, out + i, flags + i);
        SFX(tanh_block)(x + i + GW, guard, out + i + GW, flags + i + GW);
    }
    for (; i + GW <= n; i += GW) SFX(tanh_block)(x + i, guard, out + i, flags + i);
    return i;
}

#undef VD
#undef VL
#undef VF
#undef VW
