/* The scalar spec/numerics.md §exp exp and spec/numerics.md §softmax maximum. The plain C of
 * model_ops.c (the portable path) and the SIMD forms of ops_vec.c (for the elements after their
 * last whole vector) both call them, so they sit below both files.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "wf_kernels.h"

static float f32_of(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* 2^k for an integer-valued k in [-126, 127], from the exponent bits. */
static float pow2(float k) { return f32_of((uint32_t)((int32_t)k + 127) << 23); }

/* spec/numerics.md §exp Cody-Waite reduction, degree-7 Taylor by Horner, exact scaling by two
 * powers of two; the constants are the bit patterns of spec/numerics/constants.py. */
float wf_exp(float x) {
    const float log2e = f32_of(0x3FB8AA3Bu), ln2_hi = f32_of(0x3F317200u),
                ln2_lo = f32_of(0x35BFBE8Eu), x_max = f32_of(0x42B17217u),
                x_min = f32_of(0xC2CFF1B4u);
    static const uint32_t poly[6] = {0x39500D01u, 0x3AB60B61u, 0x3C088889u,
                                     0x3D2AAAABu, 0x3E2AAAABu, 0x3F000000u};
    if (x != x) return x + x; /* NaN in, the same NaN (quieted) out, as NumPy's maximum gives */
    if (x > x_max) return INFINITY;
    if (x < x_min) return 0.0f;
    float k = rintf(x * log2e);
    float hi = x - k * ln2_hi, lo = k * ln2_lo;
    float r = hi - lo;
    float c = (hi - r) - lo;
    float q = f32_of(poly[0]);
    for (int i = 1; i < 6; i++) q = q * r + f32_of(poly[i]);
    float y = 1.0f + (r + (c + (r * r) * q));
    float a = k > 127.0f ? 127.0f : (k < -126.0f ? k + 64.0f : k);
    float b = k > 127.0f ? k - 127.0f : (k < -126.0f ? -64.0f : 0.0f);
    return (y * pow2(a)) * pow2(b);
}

/* spec/numerics.md §softmax maximum: the first NaN if any, else the first largest value. */
float wf_max_f32(const float *v, int64_t n) {
    float best = v[0];
    if (best != best) return best;
    for (int64_t i = 1; i < n; i++) {
        if (v[i] != v[i]) return v[i];
        if (v[i] > best) best = v[i];
    }
    return best;
}
