/* The canonical numerics profile in plain C (spec/numerics.md §lanes8-tree, §exp), written from the
 * contract alone, to show an independent implementation reproduces the reference bit for bit.
 * Build with -ffp-contract=off (spec/numerics.md §no-fma); tools/c_check.py builds it both ways and
 * compares. */
#include <stdint.h>
#include <string.h>
#include <math.h>

static float from_bits(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

static float pow2i(int k) { /* 2^k for k in [-126, 127] from exponent bits */
    return from_bits((uint32_t)(k + 127) << 23);
}

/* spec/numerics.md §exp exp: Cody-Waite reduction, degree-7 Taylor, two-step scaling. */
float wf_exp(float x) {
    const float log2e = from_bits(0x3FB8AA3Bu), ln2_hi = from_bits(0x3F317200u),
                ln2_lo = from_bits(0x35BFBE8Eu), x_max = from_bits(0x42B17217u),
                x_min = from_bits(0xC2CFF1B4u);
    static const uint32_t poly[6] = {0x39500D01u, 0x3AB60B61u, 0x3C088889u,
                                     0x3D2AAAABu, 0x3E2AAAABu, 0x3F000000u};
    if (x != x) return x;
    if (x > x_max) return INFINITY;
    if (x < x_min) return 0.0f;
    float k = rintf(x * log2e);           /* ties to even under the default rounding mode */
    float hi = x - k * ln2_hi;
    float lo = k * ln2_lo;
    float r = hi - lo;
    float c = (hi - r) - lo;
    float q = from_bits(poly[0]);
    for (int j = 1; j < 6; j++) q = q * r + from_bits(poly[j]);
    float y = 1.0f + (r + (c + (r * r) * q));
    int ki = (int)k, a = ki, b = 0;
    if (ki > 127) { a = 127; b = ki - 127; }
    else if (ki < -126) { a = ki + 64; b = -64; }
    return (y * pow2i(a)) * pow2i(b);
}

void wf_exp_array(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = wf_exp(x[i]);
}

/* spec/numerics.md §lanes8-tree dot: lane i mod 8, ascending; tree ((l0+l4)+(l2+l6)) +
 * ((l1+l5)+(l3+l7)). */
float wf_dot(const float *a, const float *b, int64_t n) {
    float l[8] = {0};
    for (int64_t i = 0; i < n; i++) l[i % 8] = l[i % 8] + a[i] * b[i];
    for (int w = 4; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) l[j] = l[j] + l[j + w];
    return l[0];
}
