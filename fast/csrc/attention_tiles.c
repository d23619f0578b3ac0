/* Prefill attention as tiles of queries × cached positions (spec/numerics.md §attention; the body
 * is attention_tiles_body.h): every query head of TILE_TOKENS consecutive tokens that reads one kv
 * head goes through the cache together, a block of positions loaded once for all of them.
 *
 * One body, included once per kernel path: AVX-512 (two queries' 8-lane blocks in one 16-lane
 * vector, eight queries sharing each key load; values weighed 16 outputs a vector), AVX2 and NEON
 * (two queries, 8 lanes). The portable path keeps the
 * per-token kernel (wf_attend_group); every path gives its bits, since nothing in an output's
 * operations depends on which queries are computed together (spec/numerics.md §batch-invariance).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

enum { JB = 32, TILE_QUERIES = WF_TILE_QUERIES };

void wf_exp_array(const float *x, int64_t n, float *out);
void wf_attend_group(const float *q, const float *keys, const float *values, int64_t npos,
                     int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t g,
                     float *scores, float *out);

/* spec/numerics.md §softmax in place: p_i = exp(s_i − m) ⊘ S, S the spec/numerics.md §lanes8-tree
 * sum of the exps (model_ops.c's operations in its order; moe.c's router takes it too). */
void wf_softmax(float *s, int64_t n) {
    const float m = wf_max_f32(s, n);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] - m;
    wf_exp_array(s, n, s);
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t i = 0; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + s[i];
    const float total = wf_combine_lanes(l);
    for (int64_t i = 0; i < n; i++) s[i] = s[i] / total;
}

typedef void (*tile_fn)(const float *const *qs, float *const *os, const int64_t *np, int64_t nq,
                        const float *k, const float *v, int64_t stride, int64_t hd, float *sc);

#if defined(__x86_64__) && defined(__GNUC__)
#define ATTR __attribute__((target("avx512f,avx512vl")))
#define SFX(name) avx512_##name
#define QT 8
#define WIDE16 1
#include "attention_tiles_body.h"
#undef ATTR
#undef SFX
#undef QT
#undef WIDE16
#define WIDE16 0
#define ATTR __attribute__((target("avx2")))
#define SFX(name) avx2_##name
#define QT 2
#include "attention_tiles_body.h"
#undef ATTR
#undef SFX
#undef QT

static tile_fn tile_for(int32_t isa) {
    return isa == WF_ISA_AVX512 ? avx512_tile : isa == WF_ISA_AVX2 ? avx2_tile : NULL;
}
#elif defined(__ARM_NEON)
#define WIDE16 0
#define ATTR
#define SFX(name) neon_##name
#define QT 2
#include "attention_tiles_body.h"
#undef ATTR
#undef SFX
#undef QT

static tile_fn tile_for(int32_t isa) {
    return isa == WF_ISA_NEON || isa == WF_ISA_DOTPROD ? neon_tile : NULL;
}
#else
static tile_fn tile_for(int32_t isa) {
    (void)isa;
    return NULL;
}
#endif

/* Tokens per tile: as many as keep the tile at most 16 queries (at least one token). */
int64_t wf_attend_tile_tokens(int64_t heads, int64_t kv_heads) {
    const int64_t group = heads / kv_heads;
    return group >= 16 ? 1 : 16 / group;
}

/* spec/numerics.md §attention for tokens [t0, t1) (query rows of qd floats from q, outputs att
 * likewise) and the query heads of kv head g; token t reads cache rows 0..slots[t] of keys /
 * values (rows of `stride` floats). `scores` holds (t1 − t0) · (heads / kv_heads) · npos_max
 * floats. Without a SIMD path (or head_dim % 32 != 0), one token at a time. */
void wf_attend_tile(const float *q, int64_t qd, const float *keys, const float *values,
                    int64_t stride, const int64_t *slots, int64_t t0, int64_t t1, int64_t heads,
                    int64_t kv_heads, int64_t head_dim, int64_t g, float *scores, float *att) {
    const int64_t group = heads / kv_heads, nq = (t1 - t0) * group;
    const tile_fn tile = tile_for(wf_isa());
    if (tile == NULL || head_dim % 32 != 0 || nq > TILE_QUERIES) {
        for (int64_t t = t0; t < t1; t++)
            wf_attend_group(q + t * qd, keys, values, slots[t] + 1, stride, heads, kv_heads,
                            head_dim, g, scores, att + t * qd);
        return;
    }
    const float *qs[TILE_QUERIES];
    float *os[TILE_QUERIES];
    int64_t np[TILE_QUERIES];
    for (int64_t t = t0, a = 0; t < t1; t++)
        for (int64_t h = g * group; h < (g + 1) * group; h++, a++) {
            qs[a] = q + t * qd + h * head_dim;
            os[a] = att + t * qd + h * head_dim;
            np[a] = slots[t] + 1;
        }
    tile(qs, os, np, nq, keys + g * head_dim, values + g * head_dim, stride, head_dim, scores);
}

/* spec/numerics.md §attention for nq queries qs[a] that read the same keys / values (rows
 * `stride` floats apart from k / v), query a over their first np[a] rows, outputs os[a]; `sc`
 * holds nq · max(np) floats. The vision tower's tiles (vision.c): the tile kernel when the path
 * has one (head_dim % 8 == 0, nq <= TILE_QUERIES), else one query at a time through the one-head
 * view of wf_attend_group; the same bits either way (spec/numerics.md §batch-invariance). */
void wf_attend_queries(const float *const *qs, float *const *os, const int64_t *np, int64_t nq,
                       const float *k, const float *v, int64_t stride, int64_t hd, float *sc) {
    const tile_fn tile = tile_for(wf_isa());
    if (tile != NULL && hd % 8 == 0 && nq <= TILE_QUERIES) {
        tile(qs, os, np, nq, k, v, stride, hd, sc);
        return;
    }
    for (int64_t a = 0; a < nq; a++)
        wf_attend_group(qs[a], k, v, np[a], stride, 1, 1, hd, 0, sc, os[a]);
}
