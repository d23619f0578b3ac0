/* spec/numerics.md §attention for a tile of queries × cached positions, written once and included
 * by attention_tiles.c per kernel path with ATTR (the path's target attribute), SFX(name) (a
 * per-path name) and QT (queries per register tile: 4 where 32 vector registers hold the
 * accumulators, else 2) defined.
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

ATTR static inline float SFX(combine8)(L8 acc) {
    float l[WF_LANES];
    memcpy(l, &acc, sizeof l);
    return wf_combine_lanes(l);
}

/* NQ queries (q[a]) × NK key rows from k (kstride apart): sc[a * ld + b] = dot(q_a, k_b). */
ATTR static inline __attribute__((always_inline)) void
SFX(dots)(const float *const *q, const int NQ, const float *k, int64_t kstride, const int NK,
          int64_t n, float *sc, int64_t ld) {
    L8 acc[4][4];
    for (int a = 0; a < NQ; a++)
        for (int b = 0; b < NK; b++) acc[a][b] = (L8){0};
    for (int64_t i = 0; i < n; i += 8) {
        L8 c[4];
        for (int b = 0; b < NK; b++) c[b] = LD8(k + b * kstride + i);
        for (int a = 0; a < NQ; a++) {
            const L8 x = LD8(q[a] + i);
            for (int b = 0; b < NK; b++) acc[a][b] += x * c[b];
        }
    }
    for (int a = 0; a < NQ; a++)
        for (int b = 0; b < NK; b++) sc[a * ld + b] = SFX(combine8)(acc[a][b]);
}

/* Scores of queries qs[a0 .. a0 + NQ) over positions [j0, j1) (each within every query's range). */
ATTR static inline __attribute__((always_inline)) void
SFX(score_span)(const float *const *qs, const int NQ, const float *k, int64_t stride, int64_t j0,
                int64_t j1, int64_t hd, float *sc, int64_t ld) {
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) SFX(dots)(qs, NQ, k + j * stride, stride, 4, hd, sc + j, ld);
    for (; j < j1; j++) SFX(dots)(qs, NQ, k + j * stride, stride, 1, hd, sc + j, ld);
}

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
                SFX(score_span)(qs + a, QT, k, stride, j0, common, hd, sc + a * ld, ld);
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
ATTR static inline __attribute__((always_inline)) void
SFX(weigh_span)(const float *const *ps, float *const *os, const int NQ, const float *v,
                int64_t stride, int64_t j0, int64_t j1, int64_t hd) {
    for (int64_t c = 0; c < hd; c += 32) {
        L8 acc[2][4];
        for (int a = 0; a < NQ; a++)
            for (int r = 0; r < 4; r++) memcpy(&acc[a][r], os[a] + c + 8 * r, 32);
        for (int64_t j = j0; j < j1; j++) {
            const float *row = v + j * stride + c;
            const L8 v0 = LD8(row), v1 = LD8(row + 8), v2 = LD8(row + 16), v3 = LD8(row + 24);
            for (int a = 0; a < NQ; a++) {
                const float p = ps[a][j];
                acc[a][0] += p * v0, acc[a][1] += p * v1, acc[a][2] += p * v2, acc[a][3] += p * v3;
            }
        }
        for (int a = 0; a < NQ; a++)
            for (int r = 0; r < 4; r++) memcpy(os[a] + c + 8 * r, &acc[a][r], 32);
    }
}

ATTR static void SFX(weigh)(const float *const *ps, float *const *os, const int64_t *np,
                            int64_t nq, const float *v, int64_t stride, int64_t hd, int64_t most) {
    for (int64_t a = 0; a < nq; a++) memset(os[a], 0, sizeof(float) * (size_t)hd); /* +0.0 */
    for (int64_t j0 = 0; j0 < most; j0 += JB) {
        const int64_t jend = j0 + JB < most ? j0 + JB : most;
        for (int64_t a = 0; a < nq; a += 2) {
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
        float *s = sc + a * most;
        for (int64_t j = 0; j < np[a]; j++) s[j] = s[j] * scale;
        wf_softmax(s, np[a]);
        ps[a] = s;
    }
    SFX(weigh)(ps, os, np, nq, v, stride, hd, most);
}

#undef L8
#undef LD8
