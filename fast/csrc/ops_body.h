/* The per-layer operations written once over a vector type, included by ops_vec.c once per
 * kernel path (AVX2 on x86-64, NEON on aarch64) with the macros below defined for it.
 *
 * Needs: V (float vector of W lanes, W = 4 or 8), VM (lane mask), ATTR (the path's target
 * attribute), SFX(name) (a per-path name), VLOAD VSTORE VSET1 VZERO VADD VSUB VMUL VDIV VMIN VMAX
 * VGT VLT VISNAN VSEL(m, a, b) (a where m, else b) VBITS(u32) VPOW2(k) (2^k from an integer-valued
 * k in [-126, 127]) VNEG (sign flip).
 *
 * Every vector operation here is one IEEE binary32 operation on independent lanes; the only sums
 * are the spec/numerics.md §lanes lanes, held as NR = 8 / W registers (lane i of register r is the
 * canonical lane r·W + i), combined by the spec/numerics.md §combining-tree tree
 * (wf_combine_lanes).
 */
#define NR (8 / W)

#include "ops_elem_body.h"

/* spec/numerics.md §dot dot of any length: whole groups of 8 in the NR lane registers, then the
 * tail element i into lane i mod 8, as wf_dot_f32. */
ATTR static float SFX(dot)(const float *a, const float *b, int64_t n) {
    V acc[NR];
    for (int r = 0; r < NR; r++) acc[r] = VZERO();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int r = 0; r < NR; r++)
            acc[r] = VADD(acc[r], VMUL(VLOAD(a + i + r * W), VLOAD(b + i + r * W)));
    float l[WF_LANES];
    for (int r = 0; r < NR; r++) VSTORE(l + r * W, acc[r]);
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + a[i] * b[i];
    return wf_combine_lanes(l);
}

/* spec/numerics.md §lanes, §combining-tree sum of any length, as dot with the products left out. */
ATTR static float SFX(sum)(const float *a, int64_t n) {
    V acc[NR];
    for (int r = 0; r < NR; r++) acc[r] = VZERO();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int r = 0; r < NR; r++) acc[r] = VADD(acc[r], VLOAD(a + i + r * W));
    float l[WF_LANES];
    for (int r = 0; r < NR; r++) VSTORE(l + r * W, acc[r]);
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + a[i];
    return wf_combine_lanes(l);
}

/* spec/numerics.md §rmsnorm: ss = dot(x, x); r = 1 / sqrt(ss / n + eps); out_i = (x_i * r) *
 * w_i. */
ATTR static void SFX(rmsnorm_rows)(const float *x, int64_t nrows, int64_t n, const float *w,
                                   float eps, float *out) {
    for (int64_t row = 0; row < nrows; row++) {
        const float *v = x + row * n;
        float *o = out + row * n;
        const float ss = SFX(dot)(v, v, n);
        SFX(scale_row)(v, 1.0f / sqrtf(ss / (float)n + eps), w, n, o);
    }
}

/* spec/numerics.md §softmax in place: p_i = exp(s_i - m) / S, S the canonical sum of the exps. */
ATTR static void SFX(softmax)(float *s, int64_t n) {
    const float m = wf_max_f32(s, n);
    const V mv = VSET1(m);
    int64_t i = 0;
    for (; i + W <= n; i += W) VSTORE(s + i, SFX(exp)(VSUB(VLOAD(s + i), mv)));
    for (; i < n; i++) s[i] = wf_exp(s[i] - m);
    const float total = SFX(sum)(s, n);
    const V tv = VSET1(total);
    for (i = 0; i + W <= n; i += W) VSTORE(s + i, VDIV(VLOAD(s + i), tv));
    for (; i < n; i++) s[i] = s[i] / total;
}

/* One spec/numerics.md §lanes lane block: eight binary32 lanes as a GCC vector (one AVX register,
 * two NEON ones: GCC splits what the target lacks), lane i the canonical lane i. Its + and * are
 * lane-wise IEEE operations, never fused (-ffp-contract=off). Named variables, not arrays, so that
 * the accumulators stay in registers. */
typedef float SFX(l8) __attribute__((vector_size(32), aligned(4)));
#define L8 SFX(l8)
#define LD8(p) (*(const L8 *)(p))

ATTR static inline float SFX(combine8)(L8 acc) {
    float l[WF_LANES];
    memcpy(l, &acc, sizeof l);
    return wf_combine_lanes(l);
}

/* NQ (1, 2) queries' spec/numerics.md §dot dots with NK (1, 4) key rows (n % 8 == 0):
 * out[a * ostride + b] = dot(q_a, k_b), each dot in its own lane block, so each keeps the
 * canonical order; a key load serves NQ queries and a query load NK keys. */
ATTR static inline __attribute__((always_inline)) void
SFX(dot_tile)(const float *q0, const float *q1, const int NQ, const float *k, int64_t kstride,
              const int NK, int64_t n, float *out, int64_t ostride) {
    L8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
    const float *k1 = k + kstride, *k2 = k + 2 * kstride, *k3 = k + 3 * kstride;
    for (int64_t i = 0; i < n; i += 8) {
        const L8 x = LD8(q0 + i), c0 = LD8(k + i);
        a0 += x * c0;
        if (NK == 4) {
            const L8 c1 = LD8(k1 + i), c2 = LD8(k2 + i), c3 = LD8(k3 + i);
            a1 += x * c1, a2 += x * c2, a3 += x * c3;
            if (NQ == 2) {
                const L8 y = LD8(q1 + i);
                b0 += y * c0, b1 += y * c1, b2 += y * c2, b3 += y * c3;
            }
        } else if (NQ == 2) {
            b0 += LD8(q1 + i) * c0;
        }
    }
    out[0] = SFX(combine8)(a0);
    if (NK == 4) out[1] = SFX(combine8)(a1), out[2] = SFX(combine8)(a2), out[3] = SFX(combine8)(a3);
    if (NQ == 2) {
        out[ostride] = SFX(combine8)(b0);
        if (NK == 4)
            out[ostride + 1] = SFX(combine8)(b1), out[ostride + 2] = SFX(combine8)(b2),
                          out[ostride + 3] = SFX(combine8)(b3);
    }
}

/* SFX(weigh) for the 8 outputs i..i+7 of each query (a head_dim that is not a multiple of 32,
 * such as the Qwen3.5 vision tower's 72: its last 8-column pieces). */
ATTR static inline __attribute__((always_inline)) void
SFX(weigh8)(const float *p, const int NQ, const float *values, int64_t npos, int64_t stride,
            int64_t head_dim, int64_t i, float *o) {
    L8 a0 = {0}, b0 = {0};
    for (int64_t j = 0; j < npos; j++) {
        const L8 v0 = LD8(values + j * stride + i);
        a0 += p[j] * v0;
        if (NQ == 2) b0 += p[npos + j] * v0;
    }
    memcpy(o + i, &a0, 32);
    if (NQ == 2) memcpy(o + head_dim + i, &b0, 32);
}

/* spec/numerics.md §attention step 4 for NQ (1, 2) queries (probabilities p_a = p + a * npos):
 * o_a,c = o_a,c + p_a,j * v_j,c over j = 0..npos-1 in order, from +0, 32 outputs of each query
 * in registers across the positions, then the 8-output pieces past the last 32 (head_dim % 8 ==
 * 0); a value load serves NQ queries. */
ATTR static inline __attribute__((always_inline)) void
SFX(weigh)(const float *p, const int NQ, const float *values, int64_t npos, int64_t stride,
           int64_t head_dim, float *o) {
    for (int64_t i = head_dim - head_dim % 32; i < head_dim; i += 8)
        SFX(weigh8)(p, NQ, values, npos, stride, head_dim, i, o);
    for (int64_t i = 0; i + 32 <= head_dim; i += 32) {
        L8 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, b0 = {0}, b1 = {0}, b2 = {0}, b3 = {0};
        for (int64_t j = 0; j < npos; j++) {
            const float *v = values + j * stride + i;
            const L8 v0 = LD8(v), v1 = LD8(v + 8), v2 = LD8(v + 16), v3 = LD8(v + 24);
            const float pj = p[j];
            a0 += pj * v0, a1 += pj * v1, a2 += pj * v2, a3 += pj * v3;
            if (NQ == 2) {
                const float qj = p[npos + j];
                b0 += qj * v0, b1 += qj * v1, b2 += qj * v2, b3 += qj * v3;
            }
        }
        memcpy(o + i, &a0, 32), memcpy(o + i + 8, &a1, 32);
        memcpy(o + i + 16, &a2, 32), memcpy(o + i + 24, &a3, 32);
        if (NQ == 2) {
            float *o2 = o + head_dim + i;
            memcpy(o2, &b0, 32), memcpy(o2 + 8, &b1, 32);
            memcpy(o2 + 16, &b2, 32), memcpy(o2 + 24, &b3, 32);
        }
    }
}

/* NQ (1 or 2) consecutive query heads q0.. reading the same kv head (keys / values already at
 * its columns): scores [NQ, npos] = dot * scale, four positions at a time, softmax per query,
 * then the weighted values into o [NQ, head_dim]. */
ATTR static inline __attribute__((always_inline)) void
SFX(attend_queries)(const float *q0, const int NQ, const float *k, const float *values,
                    int64_t npos, int64_t stride, int64_t head_dim, float scale, float *sc,
                    float *o) {
    const float *q1 = q0 + head_dim;
    int64_t j = 0;
    for (; j + 4 <= npos; j += 4) SFX(dot_tile)(q0, q1, NQ, k + j * stride, stride, 4, head_dim,
                                               sc + j, npos);
    for (; j < npos; j++) SFX(dot_tile)(q0, q1, NQ, k + j * stride, stride, 1, head_dim, sc + j,
                                       npos);
    for (int a = 0; a < NQ; a++) {
        float *s = sc + a * npos;
        for (j = 0; j < npos; j++) s[j] = s[j] * scale;
        SFX(softmax)(s, npos);
    }
    SFX(weigh)(sc, NQ, values, npos, stride, head_dim, o);
}

ATTR static void SFX(attend_group)(const float *q, const float *keys, const float *values,
                                   int64_t npos, int64_t stride, int64_t heads, int64_t kv_heads,
                                   int64_t head_dim, int64_t g, float *scores, float *out) {
    const float scale = 1.0f / sqrtf((float)head_dim);
    const int64_t group = heads / kv_heads, kv = g * head_dim;
    for (int64_t a = 0; a < group; a += 2) {
        const int64_t h = g * group + a;
        const float *qh = q + h * head_dim;
        float *o = out + h * head_dim;
        if (a + 2 <= group)
            SFX(attend_queries)(qh, 2, keys + kv, values + kv, npos, stride, head_dim, scale,
                                scores, o);
        else
            SFX(attend_queries)(qh, 1, keys + kv, values + kv, npos, stride, head_dim, scale,
                                scores, o);
    }
}

static const wf_vec_ops SFX(ops) = {SFX(exp_array), SFX(swiglu), SFX(rmsnorm_rows), SFX(rotate),
                                    SFX(attend_group)};

#undef NR
#undef L8
#undef LD8
