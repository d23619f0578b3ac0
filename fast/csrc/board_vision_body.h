/* The board vision tower's float operations with one output a lane
 * (spec/numerics.md §board-vision), written once over a vector type and included once per path
 * by board_vision_simd.c, like ops_body.h.
 *
 * Lane l of every vector is one output — a key's score, an output element, a token, a channel —
 * and performs exactly the portable loop's sequence for that output in board_vision.c: the same
 * products, the same additions in the same order, a vector FMA where the loop calls fmaf (both
 * round once). So no sum is reassociated and the vector width changes no bit; only the number
 * of outputs done at once does. The includer defines
 *   ATTR, SFX(name)            the target attribute and the path's name prefix
 *   W, V, VLOAD, VSTORE, VSET1, VZERO, VADD, VMUL, VFMA(a, b, c) = a·b + c rounded once
 *   WD, VD, VDZERO, VDSTORE, VDSET1, VDFMA, VDCVT(p) = WD floats at p widened to binary64
 *   for the GELU: VSUB, VDIV, VNEG, VBITS(u), VLT; VM a lane mask, VSEL(m, a, b) = m ? a : b,
 *   VMAND, VMOR, VMNOT; VI int32 lanes, VISET1, VIADD, VISUB, VIAND, VIGT, VILT, VIEQ (signed),
 *   VISEL, VISHL23(k) = k << 23, VISRLV(a, k) = a >> k (logical), VCVTT (truncation),
 *   VCVTIF, VCASTI / VCASTF (the bits as int32 / as float)
 */

/* spec/numerics.md §board-vision-attention the scaled scores of W keys: kt is the head's keys
 * transposed and offset to the first key (element e of key j0 + l at kt[e·stride + l]). Per
 * lane: the products q[4i+c]·k[4i+c], the halving tree of widths n/2, n/4, …, 1 over the
 * vectors i (lane c of the engine's 4-lane vectors separately), ((c0 + c1) + c2) + c3, times the
 * scale. The tree's first step is taken as the products are formed: vectors from 2·(n/2) on are
 * never read by any step, as in the portable loop (the engine's defect for n not a power of
 * two). */
ATTR static inline __attribute__((always_inline)) void
SFX(bv_scores_hd)(const float *q, const float *kt, int64_t stride, int64_t hd, float scale,
                  float *s) {
    const int64_t nv = hd / 4, w0 = nv >> 1;
    V part[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        V acc[32]; /* w0 <= 32: hd <= 256 (wfv_attention checks) */
        acc[0] = VMUL(VSET1(q[c]), VLOAD(kt + c * stride)); /* the result when n = 1 */
#pragma GCC unroll 32
        for (int64_t i = 0; i < w0; i++) {
            const int64_t a = 4 * i + c, b = 4 * (i + w0) + c;
            acc[i] = VADD(VMUL(VSET1(q[a]), VLOAD(kt + a * stride)),
                          VMUL(VSET1(q[b]), VLOAD(kt + b * stride)));
        }
        for (int64_t w = w0 >> 1; w >= 1; w >>= 1)
            for (int64_t i = 0; i < w; i++) acc[i] = VADD(acc[i], acc[i + w]);
        part[c] = acc[0];
    }
    VSTORE(s, VMUL(VADD(VADD(VADD(part[0], part[1]), part[2]), part[3]), VSET1(scale)));
}

/* The 2B tower's head_dim 64 and the 8B/32B towers' 72 with the tree's shape known at compile
 * time (its vectors in registers); any other head_dim the same code with loops. */
ATTR static void SFX(bv_scores)(const float *q, const float *kt, int64_t stride, int64_t hd,
                                float scale, float *s) {
    if (hd == 64)
        SFX(bv_scores_hd)(q, kt, stride, 64, scale, s);
    else if (hd == 72)
        SFX(bv_scores_hd)(q, kt, stride, 72, scale, s);
    else
        SFX(bv_scores_hd)(q, kt, stride, hd, scale, s);
}

/* spec/numerics.md §board-vision-attention o[d] = fma(e[j]·inv, v[j][d], o[d]) over the keys j
 * ascending from o[d] = 0, for the elements d of whole vectors (lane = d); returns the first
 * element left to the caller. Four vectors at a time: four chains in flight. */
ATTR static int64_t SFX(bv_weighted_sum)(const float *e, float inv, const float *v, int64_t n,
                                         int64_t hd, float *o) {
    int64_t d = 0;
    for (; d + 4 * W <= hd; d += 4 * W) {
        V o0 = VZERO(), o1 = VZERO(), o2 = VZERO(), o3 = VZERO();
        for (int64_t j = 0; j < n; j++) {
            const V w = VSET1(e[j] * inv);
            const float *r = v + j * hd + d;
            o0 = VFMA(w, VLOAD(r), o0);
            o1 = VFMA(w, VLOAD(r + W), o1);
            o2 = VFMA(w, VLOAD(r + 2 * W), o2);
            o3 = VFMA(w, VLOAD(r + 3 * W), o3);
        }
        VSTORE(o + d, o0), VSTORE(o + d + W, o1), VSTORE(o + d + 2 * W, o2);
        VSTORE(o + d + 3 * W, o3);
    }
    for (; d + W <= hd; d += W) {
        V o0 = VZERO();
        for (int64_t j = 0; j < n; j++) o0 = VFMA(VSET1(e[j] * inv), VLOAD(v + j * hd + d), o0);
        VSTORE(o + d, o0);
    }
    return d;
}

/* spec/numerics.md §board-vision-mergers eight rows of an F32 linear for WD tokens: acc[r·WD + l]
 * = Σ_i x_l[i]·w_r[i] in binary64, i ascending from 0. xg holds the tokens' inputs interleaved
 * (xg[i·WD + l]); w is the first row, rows k apart. A binary64 product of two binary32 values is
 * exact, so the FMA's one rounding is the portable loop's rounding of the sum. */
ATTR static void SFX(bv_dense8)(const float *xg, const float *w, int64_t k, double *acc) {
    VD a0 = VDZERO(), a1 = VDZERO(), a2 = VDZERO(), a3 = VDZERO();
    VD a4 = VDZERO(), a5 = VDZERO(), a6 = VDZERO(), a7 = VDZERO();
    for (int64_t i = 0; i < k; i++) {
        const VD x = VDCVT(xg + i * WD);
        a0 = VDFMA(x, VDSET1((double)w[i]), a0);
        a1 = VDFMA(x, VDSET1((double)w[k + i]), a1);
        a2 = VDFMA(x, VDSET1((double)w[2 * k + i]), a2);
        a3 = VDFMA(x, VDSET1((double)w[3 * k + i]), a3);
        a4 = VDFMA(x, VDSET1((double)w[4 * k + i]), a4);
        a5 = VDFMA(x, VDSET1((double)w[5 * k + i]), a5);
        a6 = VDFMA(x, VDSET1((double)w[6 * k + i]), a6);
        a7 = VDFMA(x, VDSET1((double)w[7 * k + i]), a7);
    }
    VDSTORE(acc, a0), VDSTORE(acc + WD, a1), VDSTORE(acc + 2 * WD, a2);
    VDSTORE(acc + 3 * WD, a3), VDSTORE(acc + 4 * WD, a4), VDSTORE(acc + 5 * WD, a5);
    VDSTORE(acc + 6 * WD, a6), VDSTORE(acc + 7 * WD, a7);
}

/* spec/numerics.md §board-vision-patch W output channels of one patch: wt is the weight
 * transposed and offset to the first channel (wt[i·stride + l]). Per lane the 4-lane FMA chain
 * l_c = fma(x[i+c], w[i+c], l_c), (l0 + l1) + (l2 + l3), the scalar tail's FMAs, + bias. */
ATTR static void SFX(bv_patch)(const float *x, const float *wt, int64_t stride, int64_t k,
                               const float *b, float *y) {
    V l0 = VZERO(), l1 = VZERO(), l2 = VZERO(), l3 = VZERO();
    const int64_t whole = k - k % 4;
    for (int64_t i = 0; i < whole; i += 4) {
        l0 = VFMA(VSET1(x[i]), VLOAD(wt + i * stride), l0);
        l1 = VFMA(VSET1(x[i + 1]), VLOAD(wt + (i + 1) * stride), l1);
        l2 = VFMA(VSET1(x[i + 2]), VLOAD(wt + (i + 2) * stride), l2);
        l3 = VFMA(VSET1(x[i + 3]), VLOAD(wt + (i + 3) * stride), l3);
    }
    V acc = VADD(VADD(l0, l1), VADD(l2, l3));
    for (int64_t i = whole; i < k; i++) acc = VFMA(VSET1(x[i]), VLOAD(wt + i * stride), acc);
    VSTORE(y, VADD(acc, VLOAD(b)));
}

/* spec/numerics.md §board-vision-tanhf board_vision.c's board_expm1f on W lanes: every branch
 * is computed and each lane takes the one its own conditions select, in the scalar code's order
 * of precedence (so a lane never sees another lane's branch). */
ATTR static inline V SFX(bv_expm1f)(V x) {
    const VI bits = VCASTI(x), hx = VIAND(bits, VISET1(0x7fffffff));
    const VM negative = VILT(bits, VISET1(0)), reduce = VIGT(hx, VISET1(0x3eb17218));
    const VM one = VILT(hx, VISET1(0x3f851592)); /* with reduce: k = ±1 */
    const V ln2_hi = VBITS(0x3f317180u), ln2_lo = VBITS(0x3717f7d1u);
    const VI kn =
        VCVTT(VADD(VSEL(negative, VSET1(-0.5f), VSET1(0.5f)), VMUL(x, VBITS(0x3fb8aa3bu))));
    const V tn = VCVTIF(kn);
    const V hi =
        VSEL(one, VSEL(negative, VADD(x, ln2_hi), VSUB(x, ln2_hi)), VFMA(VNEG(tn), ln2_hi, x));
    const V lo = VSEL(one, VSEL(negative, VNEG(ln2_lo), ln2_lo), VMUL(tn, ln2_lo));
    const VI k = VISEL(reduce, VISEL(one, VISEL(negative, VISET1(-1), VISET1(1)), kn), VISET1(0));
    const V xr = VSEL(reduce, VSUB(hi, lo), x);
    const V c = VSEL(reduce, VSUB(VSUB(hi, xr), lo), VZERO());
    const V hfx = VMUL(xr, VSET1(0.5f)), hxs = VMUL(xr, hfx);
    V r1 = VFMA(hxs, VBITS(0xb457edbbu), VBITS(0x36867e54u));
    r1 = VFMA(r1, hxs, VBITS(0xb8a670cdu));
    r1 = VFMA(r1, hxs, VBITS(0x3ad00d01u));
    r1 = VFMA(r1, hxs, VBITS(0xbd088889u));
    r1 = VFMA(r1, hxs, VSET1(1.0f));
    const V t = VFMA(VNEG(hfx), r1, VSET1(3.0f));
    const V e0 = VMUL(VDIV(VSUB(r1, t), VFMA(VNEG(xr), t, VSET1(6.0f))), hxs);
    const V e = VSUB(VFMA(VSUB(e0, c), xr, VNEG(c)), hxs); /* expm1f_tail's e */
    const VI k23 = VISHL23(k);
#define BV_ADD_EXPONENT(y) VCASTF(VIADD(VCASTI(y), k23))
    V r = BV_ADD_EXPONENT(
        VSUB(VCASTF(VISUB(VISET1(0x3f800000), VISRLV(VISET1(0x1000000), k))), VSUB(e, xr)));
    r = VSEL(VIGT(k, VISET1(22)),
             BV_ADD_EXPONENT(VADD(VSUB(xr, VADD(e, VCASTF(VISHL23(VISUB(VISET1(0x7f), k))))),
                                  VSET1(1.0f))),
             r);
    r = VSEL(VMOR(VILT(k, VISET1(-1)), VIGT(k, VISET1(56))),
             VSUB(BV_ADD_EXPONENT(VSUB(VSET1(1.0f), VSUB(e, xr))), VSET1(1.0f)), r);
#undef BV_ADD_EXPONENT
    r = VSEL(VIEQ(k, VISET1(1)),
             VSEL(VLT(xr, VSET1(-0.25f)), VMUL(VSUB(e, VADD(xr, VSET1(0.5f))), VSET1(-2.0f)),
                  VFMA(VSUB(xr, e), VSET1(2.0f), VSET1(1.0f))),
             r);
    r = VSEL(VIEQ(k, VISET1(-1)), VFMA(VSUB(xr, e), VSET1(0.5f), VSET1(-0.5f)), r);
    r = VSEL(VIEQ(k, VISET1(0)), VSUB(xr, VFMA(xr, e0, VNEG(hxs))), r);
    r = VSEL(VMAND(VMNOT(reduce), VILT(hx, VISET1(0x33000000))), x, r);
    return VSEL(VMAND(VIGT(hx, VISET1(0x4195b843)), negative), VSET1(-1.0f), r);
}

/* spec/numerics.md §board-vision-tanhf board_tanhf on W lanes, the same way. */
ATTR static inline V SFX(bv_tanhf)(V x) {
    const VI jx = VCASTI(x), ix = VIAND(jx, VISET1(0x7fffffff));
    const VM negative = VILT(jx, VISET1(0)), wide = VIGT(ix, VISET1(0x3f7fffff));
    const V a = VCASTF(ix), two = VSET1(2.0f), one = VSET1(1.0f);
    const V t = SFX(bv_expm1f)(VSEL(wide, VADD(a, a), VMUL(a, VSET1(-2.0f))));
    V z = VSEL(wide, VSUB(one, VDIV(two, VADD(t, two))), VDIV(VNEG(t), VADD(t, two)));
    z = VSEL(VIGT(ix, VISET1(0x41afffff)), VSUB(one, VBITS(0x0da24260u)), z);
    V r = VSEL(negative, VNEG(z), z);
    r = VSEL(VILT(ix, VISET1(0x24000000)), VMUL(VADD(x, one), x), r);
    r = VSEL(VIEQ(ix, VISET1(0)), x, r);
    const V inv = VDIV(one, x);
    return VSEL(VIGT(ix, VISET1(0x7f7fffff)), VSEL(negative, VSUB(inv, one), VADD(inv, one)), r);
}

/* spec/numerics.md §board-vision-tanhf on the whole vectors of x; returns the elements done. */
ATTR static int64_t SFX(bv_tanhf_array)(const float *x, int64_t n, float *y) {
    int64_t i = 0;
    for (; i + W <= n; i += W) VSTORE(y + i, SFX(bv_tanhf)(VLOAD(x + i)));
    return i;
}

/* spec/numerics.md §board-vision-gelu on the whole vectors of x; returns the elements done. */
ATTR static int64_t SFX(bv_gelu)(const float *x, int64_t n, float *y) {
    int64_t i = 0;
    for (; i + W <= n; i += W) {
        const V v = VLOAD(x + i);
        const V inner = VMUL(VSET1(0.7978845608f),
                             VADD(v, VMUL(VSET1(0.044715f), VMUL(VMUL(v, v), v))));
        VSTORE(y + i, VMUL(VMUL(VSET1(0.5f), v), VADD(VSET1(1.0f), SFX(bv_tanhf)(inner))));
    }
    return i;
}
