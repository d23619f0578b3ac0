/* spec/numerics.md §attention for a tile of queries × cached positions, written once and included
 * by attention_tiles.c per kernel path with ATTR (the path's target attribute), SFX(name) (a
 * per-path name), QT (queries per register tile: 8 on AVX-512, in pairs of 16-lane vectors, else
 * 2) and WIDE16 (1 for the AVX-512 forms over 16-lane vectors) defined.
 *
 * The queries of a tile read the same kv head; a block of JB cached positions is loaded once and
 * serves every query of the tile (the per-token form reads the whole cache once per query). Per
 * output nothing changes: each score is one spec/numerics.md §dot in its own lane block (lane
 * i mod 8, the spec/numerics.md §combining-tree tree), then ⊗ scale; softmax per query over its
 * own positions; each output element o_c starts at +0.0 and adds p_j ⊗ v_j,c for j ascending,
 * block after block. The vectors are GCC vectors of 8 binary32 lanes whose + and * are lane-wise
 * IEEE operations, never fused (-ffp-contract=off).
 */
typedef float SFX(l8) __attribute__((vector_size(32), aligned(4)));
#define L8 SFX(l8)
#define LD8(p) (*(const L8 *)(p))

/* wf_combine_lanes on a vector: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) by three shuffles and
 * adds, each add with the same first operand as the scalar tree (so NaN payloads too). */
ATTR static inline float SFX(combine8)(L8 acc) {
    const L8 a = acc + __builtin_shufflevector(acc, acc, 4, 5, 6, 7, 4, 5, 6, 7);
    const L8 b = a + __builtin_shufflevector(a, a, 2, 3, 2, 3, 2, 3, 2, 3);
    const L8 c = b + __builtin_shufflevector(b, b, 1, 1, 1, 1, 1, 1, 1, 1);
    return c[0];
}

/* NQ queries (q[a]) × NK key rows from k (kstride apart): sc[a * ld + b] = dot(q_a, k_b). Named
 * accumulators, not arrays, so that they stay in registers (NQ, NK constants after inlining). */
#define ACC_ROW(a) L8 a##0 = {0}, a##1 = {0}, a##2 = {0}, a##3 = {0}
#define ACC_ADD(a, x)                                                                              \
    do {                                                                                           \
        a##0 += (x) * c0;                                                                          \
        if (NK == 4) a##1 += (x) * c1, a##2 += (x) * c2, a##3 += (x) * c3;                         \
    } while (0)
#define ACC_OUT(a, row)                                                                            \
    do {                                                                                           \
        sc[(row) * ld] = SFX(combine8)(a##0);                                                      \
        if (NK == 4)                                                                               \
            sc[(row) * ld + 1] = SFX(combine8)(a##1), sc[(row) * ld + 2] = SFX(combine8)(a##2),   \
                            sc[(row) * ld + 3] = SFX(combine8)(a##3);                              \
    } while (0)
ATTR static inline __attribute__((always_inline)) void
SFX(dots)(const float *const *q, const int NQ, const float *k, int64_t kstride, const int NK,
          int64_t n, float *sc, int64_t ld) {
    ACC_ROW(p);
    ACC_ROW(r);
    ACC_ROW(s);
    ACC_ROW(u);
    const float *k1 = k + kstride, *k2 = k + 2 * kstride, *k3 = k + 3 * kstride;
    for (int64_t i = 0; i < n; i += 8) {
        const L8 c0 = LD8(k + i);
        L8 c1 = {0}, c2 = {0}, c3 = {0};
        if (NK == 4) c1 = LD8(k1 + i), c2 = LD8(k2 + i), c3 = LD8(k3 + i);
        ACC_ADD(p, LD8(q[0] + i));
        if (NQ >= 2) ACC_ADD(r, LD8(q[1] + i));
        if (NQ >= 3) ACC_ADD(s, LD8(q[2] + i));
        if (NQ >= 4) ACC_ADD(u, LD8(q[3] + i));
    }
    ACC_OUT(p, 0);
    if (NQ >= 2) ACC_OUT(r, 1);
    if (NQ >= 3) ACC_OUT(s, 2);
    if (NQ >= 4) ACC_OUT(u, 3);
}
#undef ACC_ROW
#undef ACC_ADD
#undef ACC_OUT

/* Scores of queries qs[a0 .. a0 + NQ) over positions [j0, j1) (each within every query's range). */
ATTR static inline __attribute__((always_inline)) void
SFX(score_span)(const float *const *qs, const int NQ, const float *k, int64_t stride, int64_t j0,
                int64_t j1, int64_t hd, float *sc, int64_t ld) {
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) SFX(dots)(qs, NQ, k + j * stride, stride, 4, hd, sc + j, ld);
    for (; j < j1; j++) SFX(dots)(qs, NQ, k + j * stride, stride, 1, hd, sc + j, ld);
}

#if WIDE16
/* The AVX-512 form of a QT = 8 group: queries packed in pairs (16 lanes: query 2p's 8 lanes of a
 * piece, then query 2p+1's), each key piece broadcast to both halves, so one 16-lane operation
 * advances two dots, each in its own 8 lanes in the canonical order. */
typedef float SFX(w16) __attribute__((vector_size(64), aligned(4)));
#define W16 SFX(w16)
#define ACC_ROW(a) W16 a##0 = {0}, a##1 = {0}, a##2 = {0}, a##3 = {0}
#define ACC_ADD(a, x)                                                                              \
    do {                                                                                           \
        const W16 xv = (x);                                                                        \
        a##0 += xv * c0;                                                                           \
        if (NK == 4) a##1 += xv * c1, a##2 += xv * c2, a##3 += xv * c3;                            \
    } while (0)
/* the two dots' lane trees side by side (combine8's shuffles in each half of 8 lanes) */
#define ACC_OUT1(acc, row, b)                                                                      \
    do {                                                                                           \
        const W16 a_ = acc + __builtin_shufflevector(acc, acc, 4, 5, 6, 7, 4, 5, 6, 7, 12, 13, 14, \
                                                     15, 12, 13, 14, 15);                          \
        const W16 b_ = a_ + __builtin_shufflevector(a_, a_, 2, 3, 2, 3, 2, 3, 2, 3, 10, 11, 10,    \
                                                    11, 10, 11, 10, 11);                           \
        const W16 c_ = b_ + __builtin_shufflevector(b_, b_, 1, 1, 1, 1, 1, 1, 1, 1, 9, 9, 9, 9, 9, \
                                                    9, 9, 9);                                      \
        sc[(row) * ld + (b)] = c_[0];                                                              \
        sc[((row) + 1) * ld + (b)] = c_[8];                                                        \
    } while (0)
#define ACC_OUT(a, row)                                                                            \
    do {                                                                                           \
        ACC_OUT1(a##0, row, 0);                                                                    \
        if (NK == 4) {                                                                             \
            ACC_OUT1(a##1, row, 1);                                                                \
            ACC_OUT1(a##2, row, 2);                                                                \
            ACC_OUT1(a##3, row, 3);                                                                \
        }                                                                                          \
    } while (0)
#define BCAST(p) __builtin_shufflevector(LD8(p), LD8(p), 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, \
                                         5, 6, 7)
ATTR static inline __attribute__((always_inline)) void
SFX(dots_paired)(const float *pk, const float *k, int64_t kstride, const int NK, int64_t n,
                 float *sc, int64_t ld) {
    ACC_ROW(p);
    ACC_ROW(r);
    ACC_ROW(s);
    ACC_ROW(u);
    const float *k1 = k + kstride, *k2 = k + 2 * kstride, *k3 = k + 3 * kstride;
    for (int64_t i = 0; i < n; i += 8) {
        const W16 c0 = BCAST(k + i);
        W16 c1 = {0}, c2 = {0}, c3 = {0};
        if (NK == 4) c1 = BCAST(k1 + i), c2 = BCAST(k2 + i), c3 = BCAST(k3 + i);
        const float *x = pk + 2 * i;
        ACC_ADD(p, *(const W16 *)x);
        ACC_ADD(r, *(const W16 *)(x + 2 * n));
        ACC_ADD(s, *(const W16 *)(x + 4 * n));
        ACC_ADD(u, *(const W16 *)(x + 6 * n));
    }
    ACC_OUT(p, 0);
    ACC_OUT(r, 2);
    ACC_OUT(s, 4);
    ACC_OUT(u, 6);
}
#undef ACC_ROW
#undef ACC_ADD
#undef ACC_OUT1
#undef ACC_OUT
#undef BCAST

/* Queries qs[0..8) packed for dots_paired: pair p at pk + 2·p·n, piece i as 8 lanes of query 2p
 * then 8 of query 2p+1. */
ATTR static void SFX(pack8)(const float *const *qs, int64_t n, float *pk) {
    for (int p = 0; p < 4; p++)
        for (int64_t i = 0; i < n; i += 8) {
            memcpy(pk + 2 * p * n + 2 * i, qs[2 * p] + i, 32);
            memcpy(pk + 2 * p * n + 2 * i + 8, qs[2 * p + 1] + i, 32);
        }
}

ATTR static void SFX(score_span8)(const float *const *qs, const float *k, int64_t stride,
                                  int64_t j0, int64_t j1, int64_t hd, float *sc, int64_t ld) {
    float pk[8 * 256];
    if (hd > 256) {
        SFX(score_span)(qs, 4, k, stride, j0, j1, hd, sc, ld);
        SFX(score_span)(qs + 4, 4, k, stride, j0, j1, hd, sc + 4 * ld, ld);
        return;
    }
    SFX(pack8)(qs, hd, pk);
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) SFX(dots_paired)(pk, k + j * stride, stride, 4, hd, sc + j, ld);
    for (; j < j1; j++) SFX(dots_paired)(pk, k + j * stride, stride, 1, hd, sc + j, ld);
}
#undef W16
#define SCORE_GROUP(qs, k, stride, j0, j1, hd, sc, ld)                                            \
    SFX(score_span8)(qs, k, stride, j0, j1, hd, sc, ld)
#else
#define SCORE_GROUP(qs, k, stride, j0, j1, hd, sc, ld)                                            \
    SFX(score_span)(qs, QT, k, stride, j0, j1, hd, sc, ld)
#endif

/* Step 2 for every query: sc[a * ld + j] = dot(q_a, k_j) for j < np[a], position block by
 * position block, QT queries at a time while all of them reach, one at a time past that. */
ATTR static void SFX(scores)(const float *const *qs, const int64_t *np, int64_t nq, const float *k,
                             int64_t stride, int64_t hd, int64_t most, float *sc, int64_t ld) {
    for (int64_t j0 = 0; j0 < most; j0 += JB) {
        const int64_t jend = j0 + JB < most ? j0 + JB : most;
        for (int64_t a = 0; a < nq; a += QT) {
            const int64_t n = nq - a < QT ? nq - a : QT;
            int64_t common = jend;
            for (int64_t b = a; b < a + n; b++) common = np[b] < common ? np[b] : common;
            if (n == QT && common > j0)
                SCORE_GROUP(qs + a, k, stride, j0, common, hd, sc + a * ld, ld);
            else
                common = j0;
            for (int64_t b = a; b < a + n; b++) {
                const int64_t lim = np[b] < jend ? np[b] : jend;
                if (lim > common)
                    SFX(score_span)(qs + b, 1, k, stride, common, lim, hd, sc + b * ld, ld);
            }
        }
    }
}

/* Step 4 for queries a, a+1 (NQ 2) or a (NQ 1) over positions [j0, j1) of a block, 32 outputs
 * at a time: o ← o ⊕ p_j ⊗ v_j in ascending j, the accumulators loaded from and stored to o. */

/* The outputs [c0, hd) past the last whole 32 (hd a multiple of 8: the Qwen3.5 tower's 72), 8 at
 * a time, query by query: each output the same operations in the same order. */
ATTR static inline __attribute__((always_inline)) void
SFX(weigh_tail)(const float *const *ps, float *const *os, const int NQ, const float *v,
                int64_t stride, int64_t j0, int64_t j1, int64_t c0, int64_t hd) {
    for (int64_t c = c0; c < hd; c += 8)
        for (int q = 0; q < NQ; q++) {
            L8 a = LD8(os[q] + c);
            for (int64_t j = j0; j < j1; j++) a += ps[q][j] * LD8(v + j * stride + c);
            memcpy(os[q] + c, &a, 32);
        }
}
#if WIDE16
/* The AVX-512 form: 32 outputs in two 16-lane vectors (each output its own lane, so the same
 * operations as the 8-lane form, half the instructions). */
typedef float SFX(l16) __attribute__((vector_size(64), aligned(4)));
#define L16 SFX(l16)
#define LD16(p) (*(const L16 *)(p))
ATTR static inline __attribute__((always_inline)) void
SFX(weigh_span)(const float *const *ps, float *const *os, const int NQ, const float *v,
                int64_t stride, int64_t j0, int64_t j1, int64_t hd) {
    const float *pa = ps[0], *pb = NQ == 2 ? ps[1] : ps[0];
    int64_t c = 0;
    for (; c + 32 <= hd; c += 32) {
        float *oa = os[0] + c, *ob = (NQ == 2 ? os[1] : os[0]) + c;
        L16 a0 = LD16(oa), a1 = LD16(oa + 16), b0 = LD16(ob), b1 = LD16(ob + 16);
        for (int64_t j = j0; j < j1; j++) {
            const float *row = v + j * stride + c;
            const L16 v0 = LD16(row), v1 = LD16(row + 16);
            const float x = pa[j];
            a0 += x * v0, a1 += x * v1;
            if (NQ == 2) {
                const float y = pb[j];
                b0 += y * v0, b1 += y * v1;
            }
        }
        memcpy(oa, &a0, 64), memcpy(oa + 16, &a1, 64);
        if (NQ == 2) memcpy(ob, &b0, 64), memcpy(ob + 16, &b1, 64);
    }
    SFX(weigh_tail)(ps, os, NQ, v, stride, j0, j1, c, hd);
}
/* Four queries a..a+3 over [j0, j1): each query's 32 outputs in its own two accumulators, eight
 * independent add chains (the two-query form's four leave the adds waiting on each other). */
ATTR static void SFX(weigh_span4)(const float *const *ps, float *const *os, const float *v,
                                  int64_t stride, int64_t j0, int64_t j1, int64_t hd) {
    const float *p0 = ps[0], *p1 = ps[1], *p2 = ps[2], *p3 = ps[3];
    int64_t c = 0;
    for (; c + 32 <= hd; c += 32) {
        float *o0 = os[0] + c, *o1 = os[1] + c, *o2 = os[2] + c, *o3 = os[3] + c;
        L16 a0 = LD16(o0), a1 = LD16(o0 + 16), b0 = LD16(o1), b1 = LD16(o1 + 16);
        L16 d0 = LD16(o2), d1 = LD16(o2 + 16), e0 = LD16(o3), e1 = LD16(o3 + 16);
        for (int64_t j = j0; j < j1; j++) {
            const float *row = v + j * stride + c;
            const L16 v0 = LD16(row), v1 = LD16(row + 16);
            const float x0 = p0[j], x1 = p1[j], x2 = p2[j], x3 = p3[j];
            a0 += x0 * v0, a1 += x0 * v1, b0 += x1 * v0, b1 += x1 * v1;
            d0 += x2 * v0, d1 += x2 * v1, e0 += x3 * v0, e1 += x3 * v1;
        }
        memcpy(o0, &a0, 64), memcpy(o0 + 16, &a1, 64), memcpy(o1, &b0, 64);
        memcpy(o1 + 16, &b1, 64), memcpy(o2, &d0, 64), memcpy(o2 + 16, &d1, 64);
        memcpy(o3, &e0, 64), memcpy(o3 + 16, &e1, 64);
    }
    SFX(weigh_tail)(ps, os, 4, v, stride, j0, j1, c, hd);
}
#define WEIGH_GROUP 4
#undef L16
#undef LD16
#else
#define WEIGH_GROUP 2
ATTR static inline __attribute__((always_inline)) void
SFX(weigh_span)(const float *const *ps, float *const *os, const int NQ, const float *v,
                int64_t stride, int64_t j0, int64_t j1, int64_t hd) {
    const float *pa = ps[0], *pb = NQ == 2 ? ps[1] : ps[0];
    int64_t c = 0;
    for (; c + 32 <= hd; c += 32) {
        float *oa = os[0] + c, *ob = (NQ == 2 ? os[1] : os[0]) + c;
        L8 a0 = LD8(oa), a1 = LD8(oa + 8), a2 = LD8(oa + 16), a3 = LD8(oa + 24);
        L8 b0 = LD8(ob), b1 = LD8(ob + 8), b2 = LD8(ob + 16), b3 = LD8(ob + 24);
        for (int64_t j = j0; j < j1; j++) {
            const float *row = v + j * stride + c;
            const L8 v0 = LD8(row), v1 = LD8(row + 8), v2 = LD8(row + 16), v3 = LD8(row + 24);
            const float x = pa[j];
            a0 += x * v0, a1 += x * v1, a2 += x * v2, a3 += x * v3;
            if (NQ == 2) {
                const float y = pb[j];
                b0 += y * v0, b1 += y * v1, b2 += y * v2, b3 += y * v3;
            }
        }
        memcpy(oa, &a0, 32), memcpy(oa + 8, &a1, 32), memcpy(oa + 16, &a2, 32);
        memcpy(oa + 24, &a3, 32);
        if (NQ == 2) {
            memcpy(ob, &b0, 32), memcpy(ob + 8, &b1, 32), memcpy(ob + 16, &b2, 32);
            memcpy(ob + 24, &b3, 32);
        }
    }
    SFX(weigh_tail)(ps, os, NQ, v, stride, j0, j1, c, hd);
}
#endif

ATTR static void SFX(weigh)(const float *const *ps, float *const *os, const int64_t *np,
                            int64_t nq, const float *v, int64_t stride, int64_t hd, int64_t most) {
    for (int64_t a = 0; a < nq; a++) memset(os[a], 0, sizeof(float) * (size_t)hd); /* +0.0 */
    for (int64_t j0 = 0; j0 < most; j0 += JB) {
        const int64_t jend = j0 + JB < most ? j0 + JB : most;
        int64_t a = 0;
#if WEIGH_GROUP == 4
        for (; a + 4 <= nq; a += 4) { /* four at once over the span all of them reach */
            int64_t common = jend;
            for (int64_t b = a; b < a + 4; b++) common = np[b] < common ? np[b] : common;
            if (common > j0) SFX(weigh_span4)(ps + a, os + a, v, stride, j0, common, hd);
            const int64_t from = common > j0 ? common : j0;
            for (int64_t b = a; b < a + 4; b++) {
                const int64_t lim = np[b] < jend ? np[b] : jend;
                if (lim > from) SFX(weigh_span)(ps + b, os + b, 1, v, stride, from, lim, hd);
            }
        }
#endif
        for (; a < nq; a += 2) {
            const int64_t la = np[a] < jend ? np[a] : jend;
            const int64_t lb = a + 1 < nq ? (np[a + 1] < jend ? np[a + 1] : jend) : j0;
            const int64_t common = la < lb ? la : lb;
            if (common > j0) SFX(weigh_span)(ps + a, os + a, 2, v, stride, j0, common, hd);
            const int64_t from = common > j0 ? common : j0;
            if (la > from) SFX(weigh_span)(ps + a, os + a, 1, v, stride, from, la, hd);
            if (lb > from) SFX(weigh_span)(ps + a + 1, os + a + 1, 1, v, stride, from, lb, hd);
        }
    }
}

/* wf_max_f32 (the first NaN if any, else the first largest value) with vectors of 8 lanes: a
 * lane keeps its largest; any NaN, or a largest value of 0 (where +0 and −0 tie and the first of
 * them decides the sign), is left to the scalar form. */
typedef int32_t SFX(m8) __attribute__((vector_size(32), aligned(4)));
ATTR static float SFX(max)(const float *s, int64_t n) {
    if (n < 2 * WF_LANES) return wf_max_f32(s, n);
    L8 best = LD8(s);
    SFX(m8) nan = best != best;
    int64_t i = WF_LANES;
    for (; i + WF_LANES <= n; i += WF_LANES) {
        const L8 v = LD8(s + i);
        const SFX(m8) up = v > best;
        nan |= v != v;
        best = (L8)(((SFX(m8))v & up) | ((SFX(m8))best & ~up));
    }
    float m = best[0];
    for (int l = 0; l < WF_LANES; l++) {
        if (nan[l]) return wf_max_f32(s, n);
        m = best[l] > m ? best[l] : m;
    }
    for (; i < n; i++) m = s[i] > m || s[i] != s[i] ? s[i] : m;
    return m == 0.0f || m != m ? wf_max_f32(s, n) : m;
}

/* spec/numerics.md §attention steps 1-3 on one query's scores: s_j ⊗ scale, then
 * spec/numerics.md §softmax (wf_softmax's operations in its order: the maximum, s_j ⊖ m, exp, the
 * lanes8-tree sum — lane j mod 8 ascending, a vector of 8 lanes at a time — and ⊘ total), the
 * element-wise steps as this path's vectors. */
ATTR static void SFX(softmax)(float *s, int64_t n, float scale) {
    for (int64_t j = 0; j < n; j++) s[j] = s[j] * scale;
    const float m = SFX(max)(s, n);
    for (int64_t j = 0; j < n; j++) s[j] = s[j] - m;
    wf_exp_array(s, n, s);
    L8 acc = {0};
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES) acc += LD8(s + i);
    float l[WF_LANES];
    memcpy(l, &acc, sizeof l);
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + s[i];
    const float total = wf_combine_lanes(l);
    for (int64_t j = 0; j < n; j++) s[j] = s[j] / total;
}

/* The tile: queries qs[a] (np[a] positions each) of one kv head whose keys / values start at k
 * / v (rows `stride` floats apart), outputs os[a]; sc holds nq · most floats. */
ATTR static void SFX(tile)(const float *const *qs, float *const *os, const int64_t *np, int64_t nq,
                           const float *k, const float *v, int64_t stride, int64_t hd, float *sc) {
    int64_t most = 0;
    for (int64_t a = 0; a < nq; a++) most = np[a] > most ? np[a] : most;
    SFX(scores)(qs, np, nq, k, stride, hd, most, sc, most);
    const float scale = 1.0f / sqrtf((float)hd);
    const float *ps[TILE_QUERIES];
    for (int64_t a = 0; a < nq; a++) {
        SFX(softmax)(sc + a * most, np[a], scale);
        ps[a] = sc + a * most;
    }
    SFX(weigh)(ps, os, np, nq, v, stride, hd, most);
}

#undef SCORE_GROUP
#undef WEIGH_GROUP
#undef L8
#undef LD8
