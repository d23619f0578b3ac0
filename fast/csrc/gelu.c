/* The vision tower's GELUs, correctly rounded, all in C (spec/numerics.md §vision-gelu; the
 * reference is ref/qwen3_vl/numerics.py gelu_tanh / gelu_erf).
 *
 * Two stages per element. (1) A binary64 estimate c: for tanh x / (1 + e^(−2u)) with
 * u = √(2/π)(x + 0.044715x³) and this file's own exp (no libm: a degree-13 Taylor polynomial after
 * reduction by ln 2, relative error below 2^-50), a vector of binary64 lanes at a time on a SIMD
 * path (gelu_body.h); for erf ½x·erfc(−x/√2) with the C library's erfc, as the reference's
 * estimate (a few binary64 ulps on glibc and the aarch64 libm alike). The binary32 rounding of c
 * is the answer unless a binary32 midpoint lies within GUARD·|c| (2^-36, the reference's band,
 * far above either estimate's error). (2) The elements the band flags (about 1 in 2900) are
 * evaluated again in double-double arithmetic (about 100 bits: dd_exp, the erf series and the
 * erfc continued fraction below, no libm) and rounded with a band of 2^-72, which leaves more
 * than 2^15 times the double-double error on either side. What is still within that band (none
 * expected: about 2^-48 of random inputs) keeps flag 2 for the caller's multi-precision
 * evaluation (fast/qwen3_vl/numerics.py). The tiny arguments' midpoint rule, NaN and ±∞ are the
 * reference's. Elements are independent, so any thread split gives the same bits.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "wf_kernels.h"

/* the binary64 constants of the estimate: ref/qwen3_vl/numerics.py's math.sqrt(2 / math.pi) and
 * 0.044715, ln 2 split so that k·LN2_HI is exact, 1 / ln 2, 1.5·2^52 (adding it rounds to an
 * integer), and 1/n! for the Taylor polynomial of exp on |r| <= ln2 / 2 */
#define SQRT_2_OVER_PI 0x1.9884533d43651p-1
#define GELU_K 0x1.6e4e26d4801f7p-5
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33
#define INV_LN2 0x1.71547652b82fep+0
#define SHIFTER 0x1.8p52
#define SHIFTER_BITS 0x4338000000000000LL
enum { EXP_DEGREE = 13 };
static const double INV_FACT[EXP_DEGREE + 1] = {
    1.0,         1.0,          1.0 / 2,       1.0 / 6,        1.0 / 24,        1.0 / 120,
    1.0 / 720,   1.0 / 5040,   1.0 / 40320,   1.0 / 362880,   1.0 / 3628800,   1.0 / 39916800,
    1.0 / 479001600, 1.0 / 6227020800};

/* e^a for a in [-708, 709]: k = round(a / ln 2), r = a − k·ln 2 (|r| <= 0.35), the Taylor
 * polynomial by Horner, times 2^k (built in the exponent bits; k in [-1021, 1023]). */
static double exp_estimate(double a) {
    const double t = a * INV_LN2 + SHIFTER;
    const double kd = t - SHIFTER;
    const double r = (a - kd * LN2_HI) - kd * LN2_LO;
    double p = INV_FACT[EXP_DEGREE];
    for (int n = EXP_DEGREE - 1; n >= 0; n--) p = p * r + INV_FACT[n];
    int64_t k, bits;
    memcpy(&k, &t, sizeof k);
    bits = (k - SHIFTER_BITS + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* The tanh estimate x / (1 + e^(−2u)) (no cancellation for x < 0), e^(−2u) clamped to
 * [e^-708, e^709] (beyond either end the quotient is x or far below the binary32 range). */
static double tanh_estimate(double v) {
    const double u = SQRT_2_OVER_PI * (v + GELU_K * (v * v * v));
    double e = -2.0 * u;
    e = e > 709.0 ? 709.0 : e;
    e = e < -708.0 ? -708.0 : e;
    return v / (1.0 + exp_estimate(e));
}

/* 1 when a binary32 rounding midpoint lies within guard·|c| of c or c's rounding f is not finite
 * (the test of gelu_body.h on one element); *f gets c's binary32 rounding. */
static int guard_flag(double c, double guard, float *f) {
    *f = (float)c;
    uint32_t b;
    memcpy(&b, f, sizeof b);
    b &= 0x7fffffffu;
    if (b >= 0x7f800000u) return 1;
    const uint32_t ub = b + 1, db = b - 1;
    float m, u, d;
    memcpy(&m, &b, sizeof m), memcpy(&u, &ub, sizeof u), memcpy(&d, &db, sizeof d);
    const double ac = fabs(c);
    const double near_up = ((double)m + (double)u) / 2.0 - ac;
    double near = near_up;
    if (b != 0) {
        const double near_down = ac - ((double)m + (double)d) / 2.0;
        near = near_down < near_up ? near_down : near_up;
    }
    return !(near > guard * ac);
}

typedef int64_t (*tanh_range_fn)(const float *x, int64_t n, double guard, float *out,
                                 uint8_t *flags);

#if defined(__x86_64__) && defined(__GNUC__)
#define ATTR __attribute__((target("avx512f,avx512vl")))
#define SFX(name) avx512_##name
#define GW 8
#include "gelu_body.h"
#undef ATTR
#undef SFX
#undef GW
#define ATTR __attribute__((target("avx2")))
#define SFX(name) avx2_##name
#define GW 4
#include "gelu_body.h"
#undef ATTR
#undef SFX
#undef GW
static tanh_range_fn range_for(int32_t isa) {
    return isa == WF_ISA_AVX512 ? avx512_tanh_range : isa == WF_ISA_AVX2 ? avx2_tanh_range : NULL;
}
#elif defined(__ARM_NEON)
#define ATTR
#define SFX(name) neon_##name
#define GW 2
#include "gelu_body.h"
#undef ATTR
#undef SFX
#undef GW
static tanh_range_fn range_for(int32_t isa) {
    return isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD ? neon_tanh_range : NULL;
}
#else
static tanh_range_fn range_for(int32_t isa) {
    (void)isa;
    return NULL;
}
#endif

/* ---- stage 2: double-double arithmetic (hi + lo, |lo| <= ulp(hi) / 2), no FMA, no libm ---- */
typedef struct {
    double hi, lo;
} dd;

static const dd DD_SQRT_2_OVER_PI = {0x1.9884533d43651p-1, -0x1.cbc0d30ebfd15p-55};
static const dd DD_GELU_K = {0x1.6e4e26d4801f7p-5, 0x1.441355475a31ap-59}; /* 0.044715 */
static const dd DD_LN2 = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56};
static const dd DD_INV_SQRT2 = {0x1.6a09e667f3bcdp-1, -0x1.bdd3413b26456p-55};
static const dd DD_TWO_OVER_SQRTPI = {0x1.20dd750429b6dp+0, 0x1.1ae3a914fed80p-56};
static const dd DD_INV_SQRTPI = {0x1.20dd750429b6dp-1, 0x1.1ae3a914fed80p-57};

static dd two_sum(double a, double b) {
    const double s = a + b, bb = s - a;
    return (dd){s, (a - (s - bb)) + (b - bb)};
}

static dd quick_two_sum(double a, double b) {
    const double s = a + b;
    return (dd){s, b - (s - a)};
}

/* a·b exactly as hi + lo (Dekker's splitting; |a|, |b| far below 2^996 here). */
static dd two_prod(double a, double b) {
    const double p = a * b, ta = 134217729.0 * a, tb = 134217729.0 * b;
    const double ah = ta - (ta - a), al = a - ah, bh = tb - (tb - b), bl = b - bh;
    return (dd){p, ((ah * bh - p) + ah * bl + al * bh) + al * bl};
}

static dd dd_add(dd a, dd b) {
    dd s = two_sum(a.hi, b.hi);
    const dd t = two_sum(a.lo, b.lo);
    s = quick_two_sum(s.hi, s.lo + t.hi);
    return quick_two_sum(s.hi, s.lo + t.lo);
}

static dd dd_neg(dd a) { return (dd){-a.hi, -a.lo}; }

static dd dd_mul(dd a, dd b) {
    const dd p = two_prod(a.hi, b.hi);
    return quick_two_sum(p.hi, p.lo + (a.hi * b.lo + a.lo * b.hi));
}

static dd dd_mul_d(dd a, double b) {
    const dd p = two_prod(a.hi, b);
    return quick_two_sum(p.hi, p.lo + a.lo * b);
}

/* a / b by three quotient digits (long division with exact remainders up to the last). */
static dd dd_div(dd a, dd b) {
    const double q1 = a.hi / b.hi;
    dd r = dd_add(a, dd_neg(dd_mul_d(b, q1)));
    const double q2 = r.hi / b.hi;
    r = dd_add(r, dd_neg(dd_mul_d(b, q2)));
    const double q3 = r.hi / b.hi;
    return dd_add(quick_two_sum(q1, q2), (dd){q3, 0.0});
}

/* e^a for a.hi in [-708, 708]: r = (a − k·ln 2) / 256, exp(r) by its Taylor series to r^10 (the
 * first omitted term below 2^-116 relative), squared 8 times, times 2^k. About 2^-94 relative:
 * the reduction's 2^-95 absolute, the squarings' factor 256 on the series' ~2^-104. */
static dd dd_exp(dd a) {
    const double kd = (a.hi * INV_LN2 + SHIFTER) - SHIFTER;
    dd r = dd_add(a, dd_mul_d(DD_LN2, -kd));
    r.hi *= 0x1p-8, r.lo *= 0x1p-8;
    dd p = {1.0, 0.0};
    for (int n = 10; n >= 1; n--) p = dd_add((dd){1.0, 0.0}, dd_div(dd_mul(p, r), (dd){n, 0}));
    for (int s = 0; s < 8; s++) p = dd_mul(p, p);
    const int64_t bits = ((int64_t)kd + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    return (dd){p.hi * scale, p.lo * scale};
}

/* gelu_tanh(v) = v / (1 + e^(−2u)), u = √(2/π)(v + 0.044715·v³): v² is exact in binary64, v³
 * exact as a double-double. */
static dd tanh_dd(double v) {
    const dd cube = two_prod(v * v, v);
    const dd u = dd_mul(DD_SQRT_2_OVER_PI, dd_add((dd){v, 0.0}, dd_mul(DD_GELU_K, cube)));
    const dd a = {-2.0 * u.hi, -2.0 * u.lo};
    /* a > 300 needs |v| > 15.4, and then |v| / (1 + e^a) < 2^-420, far below binary32's range
     * (and e^a near the top of binary64 would overflow the division's splitting) */
    if (a.hi > 300.0) return (dd){copysign(0x1p-1000, v), 0.0};
    if (a.hi < -700.0) return (dd){v, 0.0}; /* v·(1 − e^a), e^a < 2^-1000 */
    return dd_div((dd){v, 0.0}, dd_add((dd){1.0, 0.0}, dd_exp(a)));
}

/* erf(z) for |z| < 2.5 = (2/√π)·e^(−z²)·Σ z·(2z²)^n / (1·3·…·(2n+1)): every term has z's sign,
 * so the sum cancels nothing; stops when a term is below 2^-110 of the sum. */
static dd erf_series(dd z) {
    const dd z2 = dd_mul(z, z), two_z2 = {2.0 * z2.hi, 2.0 * z2.lo};
    dd term = z, sum = {0.0, 0.0};
    for (int n = 0; n < 400 && fabs(term.hi) >= 0x1p-110 * fabs(sum.hi); n++) {
        sum = dd_add(sum, term);
        term = dd_div(dd_mul(term, two_z2), (dd){2.0 * n + 3.0, 0.0});
    }
    return dd_mul(dd_mul(DD_TWO_OVER_SQRTPI, dd_exp(dd_neg(z2))), sum);
}

/* erfc(z) for z >= 2.5 = e^(−z²)/√π · 1/(z + (1/2)/(z + (2/2)/(z + (3/2)/(z + …)))), 200 levels
 * evaluated from the bottom (below 2^-130 relative at z = 2.5, checked against mpmath). */
static dd erfc_fraction(dd z) {
    if (z.hi > 26.0) return (dd){0.0, 0.0}; /* e^(−z²) < 2^-975 */
    dd t = z;
    for (int n = 200; n >= 1; n--) t = dd_add(z, dd_div((dd){0.5 * n, 0.0}, t));
    return dd_div(dd_mul(dd_exp(dd_neg(dd_mul(z, z))), DD_INV_SQRTPI), t);
}

/* gelu_erf(v) = ½v·erfc(z), z = −v/√2: erfc by the fraction for |z| >= 2.5 (2 − erfc(−z) below
 * −2.5), else 1 − erf(z) (at most 12 bits cancel at z = 2.5: erfc(2.5) > 2^-12). */
static dd erf_gelu_dd(double v) {
    const dd z = dd_mul_d(DD_INV_SQRT2, -v);
    dd e;
    if (z.hi >= 2.5)
        e = erfc_fraction(z);
    else if (z.hi <= -2.5)
        e = dd_add((dd){2.0, 0.0}, dd_neg(erfc_fraction(dd_neg(z))));
    else
        e = dd_add((dd){1.0, 0.0}, dd_neg(erf_series(z)));
    return dd_mul_d(e, 0.5 * v);
}

/* The binary32 nearest to r when no midpoint lies within guard·|r| of it, else *unsettled = 1. */
static float round_dd(dd r, double guard, int *unsettled) {
    float f = (float)r.hi;
    for (int step = 0; step < 2; step++) {
        const double up = ((double)f + (double)nextafterf(f, INFINITY)) / 2.0;
        const double down = ((double)f + (double)nextafterf(f, -INFINITY)) / 2.0;
        const double above = (r.hi - up) + r.lo, below = (r.hi - down) + r.lo;
        if (above > 0.0)
            f = nextafterf(f, INFINITY);
        else if (below < 0.0)
            f = nextafterf(f, -INFINITY);
        else {
            const double near = fabs(above) < fabs(below) ? fabs(above) : fabs(below);
            *unsettled = !(near > guard * fabs(r.hi));
            return f;
        }
    }
    *unsettled = 1;
    return f;
}

/* spec/numerics.md §vision-gelu 0 < |x| < 2^-60: x/2 when binary32 holds it, else the binary32
 * just above the midpoint x/2 (ref/qwen3_vl/numerics.py _tiny). */
static float tiny_gelu(float x) {
    const double half = (double)x / 2.0;
    const float f = (float)half;
    if ((double)f == half) return f;
    const float below = (double)f < half ? f : nextafterf(f, -INFINITY);
    return nextafterf(below, INFINITY);
}

/* The exact path of one element; *unsettled = 1 when even the double-double value is too near a
 * midpoint. NaN gives x; +∞ the largest binary32 and −∞ NaN, as the reference's multi-precision
 * rounding gives them. */
static float gelu_exact(float x, int32_t kind, int *unsettled) {
    *unsettled = 0;
    if (x != x || x == 0.0f) return x;
    if (isinf(x)) {
        const uint32_t bits = x > 0 ? 0x7f7fffffu : 0xffc00000u;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    if (fabsf(x) < 0x1p-60f) return tiny_gelu(x);
    const dd r = kind == 0 ? tanh_dd((double)x) : erf_gelu_dd((double)x);
    return round_dd(r, 0x1p-72, unsettled);
}

typedef struct {
    const float *x;
    float *out;
    uint8_t *flags;
    int32_t kind;
    double guard;
} gelu_job;

/* Stage 1 on [begin, end) (whole blocks on a SIMD path, the scalar form for the rest), then
 * stage 2 on the flagged elements: flags 0 (estimate), 1 (double-double), 2 (unsettled). */
static void gelu_range(void *ctx, int64_t begin, int64_t end) {
    const gelu_job *j = ctx;
    const tanh_range_fn range = j->kind == 0 ? range_for(wf_isa()) : NULL;
    int64_t i = begin;
    if (range != NULL)
        i += range(j->x + begin, end - begin, j->guard, j->out + begin, j->flags + begin);
    for (; i < end; i++) {
        const double v = (double)j->x[i];
        const double c = j->kind == 0 ? tanh_estimate(v) : 0.5 * v * erfc(-v / sqrt(2.0));
        j->flags[i] = (uint8_t)guard_flag(c, j->guard, &j->out[i]);
    }
    for (i = begin; i < end; i++)
        if (j->flags[i]) {
            int unsettled;
            j->out[i] = gelu_exact(j->x[i], j->kind, &unsettled);
            j->flags[i] = (uint8_t)(1 + unsettled);
        }
}

/* spec/numerics.md §vision-gelu of n floats (kind 0 tanh, 1 erf): flags[i] 0 where the binary64
 * estimate settled out[i], 1 where the double-double evaluation did, 2 where out[i] must be
 * replaced by a multi-precision evaluation. Returns the count of 2s. */
int64_t wf_gelu(const float *x, int64_t n, int32_t kind, double guard, float *out, uint8_t *flags,
                int32_t threads) {
    gelu_job job = {x, out, flags, kind, guard};
    wf_parallel_for(n, threads, gelu_range, &job);
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) count += flags[i] == 2;
    return count;
}

/* The double-double value of one element (kind 0 tanh, 1 erf) as hi_lo[0] + hi_lo[1], for the
 * tests of its error bound (finite x, |x| >= 2^-60). */
void wf_gelu_dd(float x, int32_t kind, double *hi_lo) {
    const dd r = kind == 0 ? tanh_dd((double)x) : erf_gelu_dd((double)x);
    hi_lo[0] = r.hi, hi_lo[1] = r.lo;
}
