/* The element-wise per-layer operations written once over a vector type of W independent lanes
 * (W = 4, 8 or 16): included by ops_body.h for every kernel path, and alone by ops_vec.c for the
 * AVX-512 one, whose sums keep the 8-lane AVX2 forms (a spec/numerics.md §lanes8-tree sum has
 * eight lanes, whatever the register width). Needs the macros ops_body.h lists. Each vector
 * operation is one IEEE binary32 operation per lane, and a lane is one output, so the width
 * never changes a bit.
 */
/* spec/numerics.md §exp, wf_exp's operations in its order on every lane: the step 1 clamped input
 * (as ref/numerics/exp.py), out-of-range and NaN lanes replaced at the end. rint(t) is
 * (t + 1.5·2^23) - 1.5·2^23, which rounds to the nearest integer, ties to even, for |t| < 2^22
 * (here |t| <= 151); only the sign of a zero k can differ from rintf, and a zero k gives
 * y = 1 + (±0) = 1 and the factors 2^0 either way. */
ATTR static inline V SFX(exp)(V x) {
    const V x_max = VBITS(0x42B17217u), x_min = VBITS(0xC2CFF1B4u), shift = VSET1(12582912.0f);
    const V xc = VMIN(x_max, VMAX(x_min, x)); /* a NaN lane is replaced at the end */
    const V k = VSUB(VADD(VMUL(xc, VBITS(0x3FB8AA3Bu)), shift), shift);
    const V hi = VSUB(xc, VMUL(k, VBITS(0x3F317200u))), lo = VMUL(k, VBITS(0x35BFBE8Eu));
    const V r = VSUB(hi, lo);
    const V c = VSUB(VSUB(hi, r), lo);
    V q = VBITS(0x39500D01u);
    q = VADD(VMUL(q, r), VBITS(0x3AB60B61u));
    q = VADD(VMUL(q, r), VBITS(0x3C088889u));
    q = VADD(VMUL(q, r), VBITS(0x3D2AAAABu));
    q = VADD(VMUL(q, r), VBITS(0x3E2AAAABu));
    q = VADD(VMUL(q, r), VBITS(0x3F000000u));
    V y = VADD(VSET1(1.0f), VADD(r, VADD(c, VMUL(VMUL(r, r), q))));
    const V c127 = VSET1(127.0f);
    const VM big = VGT(k, c127), small = VLT(k, VSET1(-126.0f));
    V a = VSEL(small, VADD(k, VSET1(64.0f)), k), b = VSEL(small, VSET1(-64.0f), VZERO());
    a = VSEL(big, c127, a);
    b = VSEL(big, VSUB(k, c127), b);
    y = VMUL(VMUL(y, VPOW2(a)), VPOW2(b));
    y = VSEL(VGT(x, x_max), VSET1(INFINITY), y);
    y = VSEL(VLT(x, x_min), VZERO(), y);
    return VSEL(VISNAN(x), VADD(x, x), y); /* NaN in, the same NaN (quieted) out, as wf_exp */
}

ATTR static int64_t SFX(exp_array)(const float *x, int64_t n, float *out) {
    int64_t i = 0;
    for (; i + W <= n; i += W) VSTORE(out + i, SFX(exp)(VLOAD(x + i)));
    return i;
}

/* spec/numerics.md §silu: out_i = (g_i / (1 + exp(-g_i))) * u_i, two independent chains at a time
 * (exp is latency-bound); -g is a sign flip, as C's unary minus. */
ATTR static int64_t SFX(swiglu)(const float *g, const float *u, int64_t n, float *out) {
    const V one = VSET1(1.0f);
    int64_t i = 0;
    for (; i + 2 * W <= n; i += 2 * W) {
        const V g0 = VLOAD(g + i), g1 = VLOAD(g + i + W);
        const V e0 = SFX(exp)(VNEG(g0)), e1 = SFX(exp)(VNEG(g1));
        VSTORE(out + i, VMUL(VDIV(g0, VADD(one, e0)), VLOAD(u + i)));
        VSTORE(out + i + W, VMUL(VDIV(g1, VADD(one, e1)), VLOAD(u + i + W)));
    }
    for (; i + W <= n; i += W) {
        const V gi = VLOAD(g + i);
        VSTORE(out + i, VMUL(VDIV(gi, VADD(one, SFX(exp)(VNEG(gi)))), VLOAD(u + i)));
    }
    return i;
}

/* spec/numerics.md §rotation: o_j = v_j c_j - v_{j+h} s_j, o_{j+h} = v_{j+h} c_j + v_j s_j. */
ATTR static void SFX(rotate)(const float *v, const float *c, const float *s, int64_t h, float *o) {
    int64_t j = 0;
    for (; j + W <= h; j += W) {
        const V a = VLOAD(v + j), b = VLOAD(v + j + h), cj = VLOAD(c + j), sj = VLOAD(s + j);
        VSTORE(o + j, VSUB(VMUL(a, cj), VMUL(b, sj)));
        VSTORE(o + j + h, VADD(VMUL(b, cj), VMUL(a, sj)));
    }
    for (; j < h; j++) {
        o[j] = v[j] * c[j] - v[j + h] * s[j];
        o[j + h] = v[j + h] * c[j] + v[j] * s[j];
    }
}

/* spec/numerics.md §rmsnorm's last step on one row: out_i = (x_i * r) * w_i. */
ATTR static void SFX(scale_row)(const float *v, float r, const float *w, int64_t n, float *o) {
    const V rv = VSET1(r);
    int64_t i = 0;
    for (; i + W <= n; i += W) VSTORE(o + i, VMUL(VMUL(VLOAD(v + i), rv), VLOAD(w + i)));
    for (; i < n; i++) o[i] = (v[i] * r) * w[i];
}

