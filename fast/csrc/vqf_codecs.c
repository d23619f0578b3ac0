/* VQF Q8_0 / Q4_0 block kernels
 * (spec/vqf.md §q8-0, §q4-0, §quant-q8-0, §quant-q4-0, §quant-q4i8-g256, §f16-rne, §vs-ggml) for
 * weightfile.fast.
 *
 * Scalar C that must equal ref/codecs/vqf/q8_0.py and q4_0.py bit for bit. Build with
 * -O2 -ffp-contract=off and without -ffast-math: every multiply, divide and add rounds
 * separately in binary32, as the engine's `volatile`s force (a fused x*id + 8.5 changes Q4_0
 * codes at exact .5 boundaries). Float-to-int conversions of NaN/Inf are undefined in C, so
 * they are made explicit: NaN -> 0, +-Inf saturate (AArch64 FCVTZS, ref: saturating_trunc).
 *
 * The quantisers return a "maybe non-finite" flag instead of checking their input in a separate
 * pass: an Inf reaches amax, and a NaN makes its own x·id NaN. A NaN from 0·Inf (a subnormal d)
 * raises the flag too; the caller then checks the input and finds nothing to refuse.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { QK = 32, MODE_KESTREL = 0, MODE_KESTREL_LEGACY = 1, MODE_GGML = 2 };

static uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float float_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }

/* f32 -> f16, round to nearest even; NaN -> sign | 0x7E00 (spec/vqf.md §f16-rne). */
static uint16_t f16_rne(float f) {
    uint32_t b = bits_of(f), sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);        /* >= 65520 and Inf */
    if (a >= 0x38800000u) {                                          /* normal f16 result */
        uint32_t t = a - 0x38000000u;
        return (uint16_t)(sign | ((t + 0x0FFFu + ((t >> 13) & 1u)) >> 13));
    }
    uint32_t e8 = a >> 23;
    if (e8 < 102) return (uint16_t)sign;                              /* below 2^-25 */
    uint32_t mant = (a & 0x7FFFFFu) | 0x800000u, shift = 126 - e8;   /* shift in [14, 24] */
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    q += (rem > half) || (rem == half && (q & 1u));
    return (uint16_t)(sign | q);
}

/* f32 -> f16 by truncation with flush to zero (spec/vqf.md §f16). */
static uint16_t f16_trunc_ftz(float f) {
    uint32_t b = bits_of(f), sign = (b >> 16) & 0x8000u;
    int32_t e = (int32_t)((b >> 23) & 0xFFu) - 112;
    if (e <= 0) return (uint16_t)sign;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | ((uint32_t)e << 10) | ((b & 0x7FFFFFu) >> 13));
}

/* Exact f16 -> f32 widening. */
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e5 = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e5 == 0x1F) return float_of(sign | 0x7F800000u | (m << 13));
    if (e5 != 0) return float_of(sign | ((e5 + 112u) << 23) | (m << 13));
    return float_of(sign | bits_of((float)m * 0x1p-24f));
}

/* trunc toward zero clamped to [lo, hi], NaN -> 0 (lo <= 0 <= hi here). Written as selects
 * with the exact semantics of MAXPS/MINPS so that -O2 vectorises it without fast-math. */
static inline int32_t sat(float v, float lo, float hi) {
    v = v == v ? v : 0.0f;
    v = lo > v ? lo : v;
    v = v > hi ? hi : v;
    return (int32_t)v; /* in range, so truncation toward zero is defined */
}

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v & 0xFF); p[1] = (uint8_t)(v >> 8);
}

/* max |x_i| over one block of 32 by a fixed pairwise tree (max is exact in any order). */
static float block_amax(const float *x) {
    float m[QK];
    for (int32_t i = 0; i < QK; i++) m[i] = fabsf(x[i]);
    for (int32_t i = 0; i < 16; i++) m[i] = m[i + 16] > m[i] ? m[i + 16] : m[i];
    for (int32_t i = 0; i < 8; i++) m[i] = m[i + 8] > m[i] ? m[i + 8] : m[i];
    for (int32_t i = 0; i < 4; i++) m[i] = m[i + 4] > m[i] ? m[i + 4] : m[i];
    for (int32_t i = 0; i < 2; i++) m[i] = m[i + 2] > m[i] ? m[i + 2] : m[i];
    return m[1] > m[0] ? m[1] : m[0];
}

static int32_t q8_block_kestrel(const float *x, float inv, int8_t *q) {
    /* v + 0.5 if v >= 0 else v - 0.5: adding copysign(0.5, v) is the same f32 add
     * (v = -0.0 gives -0.5, which truncates to the same code 0). */
    int32_t nan = 0;
    for (int32_t j = 0; j < QK; j++) {
        float v = x[j] * inv;
        nan |= v != v;
        q[j] = (int8_t)sat(v + copysignf(0.5f, v), -127.0f, 127.0f);
    }
    return nan;
}

static int32_t q8_block_legacy(const float *x, float scale, int8_t *q) {
    int32_t nan = 0;
    for (int32_t j = 0; j < QK; j++) {
        float v = x[j] / scale;
        nan |= v != v;
        q[j] = (int8_t)sat(v + 0.5f, -127.0f, 127.0f);
    }
    return nan;
}

static int32_t q8_block_ggml(const float *x, float inv, int8_t *q) {
    int32_t nan = 0;
    for (int32_t j = 0; j < QK; j++) {
        float v = x[j] * inv;
        nan |= v != v;
        q[j] = (int8_t)sat(roundf(v), -127.0f, 127.0f);
    }
    return nan;
}

/* Q8_0 over groups of `group` elements (32 for Q8_0, 256 for G256), group/32 blocks each.
 * Returns the "maybe non-finite" flag. */
int32_t vqf_q8_0_quantize(const float *x, int64_t ngroups, int32_t group, int32_t mode,
                          uint8_t *out) {
    const int32_t nb = group / QK;
    int32_t flag = 0;
    for (int64_t g = 0; g < ngroups; g++) {
        const float *xs = x + g * group;
        float amax = 0.0f;
        for (int32_t b = 0; b < nb; b++) {
            float m = block_amax(xs + b * QK);
            amax = m > amax ? m : amax;
        }
        flag |= !(amax <= 3.40282347e38f); /* Inf, or a NaN the tree kept */
        if (mode != MODE_GGML && !(amax > 1e-10f)) amax = 1e-10f; /* running max from 1e-10 */
        float scale = amax / 127.0f, inv;
        uint16_t d;
        if (mode == MODE_GGML) {
            inv = scale != 0.0f ? 1.0f / scale : 0.0f;
            d = f16_rne(scale);
        } else {
            if (scale < 1e-10f) scale = 1e-10f;
            inv = 1.0f / scale;
            d = mode == MODE_KESTREL ? f16_rne(scale) : f16_trunc_ftz(scale);
        }
        for (int32_t b = 0; b < nb; b++) {
            uint8_t *blk = out + (g * nb + b) * (2 + QK);
            int8_t *q = (int8_t *)(blk + 2);
            put_u16(blk, d);
            if (mode == MODE_KESTREL) flag |= q8_block_kestrel(xs + b * QK, inv, q);
            else if (mode == MODE_KESTREL_LEGACY) flag |= q8_block_legacy(xs + b * QK, scale, q);
            else flag |= q8_block_ggml(xs + b * QK, inv, q);
        }
    }
    return flag;
}

/* Q4_0 (or, with as_int8, Q4I8 in 34 B Q8_0 blocks) over nblocks blocks of 32.
 * Returns the "maybe non-finite" flag. */
int32_t vqf_q4_0_quantize(const float *x, int64_t nblocks, int32_t mode, int32_t as_int8,
                          uint8_t *out) {
    int32_t flag = 0;
    for (int64_t i = 0; i < nblocks; i++) {
        const float *xs = x + i * QK;
        /* maxv: the first value with the strictly largest |x|; +0.0 when all are zero. */
        float amax = block_amax(xs), maxv = 0.0f;
        flag |= !(amax <= 3.40282347e38f);
        if (amax > 0.0f) { /* x_j is +amax or -amax there: whichever sign comes first wins */
            int32_t first_pos = QK, first_neg = QK;
            for (int32_t j = 0; j < QK; j++) {
                int32_t jp = xs[j] == amax ? j : QK, jn = xs[j] == -amax ? j : QK;
                first_pos = jp < first_pos ? jp : first_pos;
                first_neg = jn < first_neg ? jn : first_neg;
            }
            maxv = first_neg < first_pos ? -amax : amax;
        }
        float d = maxv / -8.0f, inv;
        if (mode == MODE_GGML) {
            inv = d != 0.0f ? 1.0f / d : 0.0f;
        } else {
            if (d == 0.0f) d = 1.0f;
            inv = 1.0f / d;
        }
        uint16_t dh = mode == MODE_KESTREL_LEGACY ? f16_trunc_ftz(d) : f16_rne(d);
        uint8_t q[QK];
        for (int32_t j = 0; j < QK; j++) {
            float v = xs[j] * inv;
            v = v + 8.5f; /* a separate rounding: never fused with the multiply */
            flag |= v != v;
            q[j] = (uint8_t)sat(v, 0.0f, 15.0f);
        }
        if (as_int8) {
            uint8_t *blk = out + i * (2 + QK);
            put_u16(blk, dh);
            int8_t codes[QK];
            for (int32_t j = 0; j < QK; j++) codes[j] = (int8_t)(q[j] - 8);
            memcpy(blk + 2, codes, QK);
        } else {
            uint8_t *blk = out + i * (2 + QK / 2);
            put_u16(blk, dh);
            uint8_t qs[QK / 2];
            for (int32_t j = 0; j < QK / 2; j++) qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
            memcpy(blk + 2, qs, QK / 2);
        }
    }
    return flag;
}

/* value = code * d for nblocks 34 B blocks. */
void vqf_q8_0_dequantize(const uint8_t *p, int64_t nblocks, float *out) {
    for (int64_t i = 0; i < nblocks; i++) {
        const uint8_t *blk = p + i * (2 + QK);
        float d = f16_to_f32((uint16_t)(blk[0] | (blk[1] << 8)));
        for (int32_t j = 0; j < QK; j++) out[i * QK + j] = (float)(int8_t)blk[2 + j] * d;
    }
}

/* value = (nibble - 8) * d for nblocks 18 B blocks. */
void vqf_q4_0_dequantize(const uint8_t *p, int64_t nblocks, float *out) {
    for (int64_t i = 0; i < nblocks; i++) {
        const uint8_t *blk = p + i * (2 + QK / 2);
        float d = f16_to_f32((uint16_t)(blk[0] | (blk[1] << 8)));
        for (int32_t j = 0; j < QK / 2; j++) {
            out[i * QK + j] = (float)((blk[2 + j] & 0x0F) - 8) * d;
            out[i * QK + j + 16] = (float)((blk[2 + j] >> 4) - 8) * d;
        }
    }
}
