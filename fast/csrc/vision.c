/* The Qwen3-VL vision tower's element-wise and per-image kernels (spec/numerics.md §vision).
 *
 * LayerNorm with a bias (spec/numerics.md §vision-layernorm) and bidirectional attention inside
 * each image (spec/numerics.md §vision-attention); the GELUs are gelu.c. They mirror
 * ref/qwen3_vl/numerics.py and ref/qwen3_vl/vision.py operation for operation; sums are the
 * canonical 8-lane sums of spec/numerics.md §lanes8-tree, every other step one IEEE binary32
 * operation (-ffp-contract=off). Rows, and each (query, head) of the attention, are independent,
 * so any thread split or query tiling gives the same bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wf_kernels.h"

/* spec/numerics.md §lanes8-tree: the canonical sum of x (lane i mod 8, ascending, then the fixed
 * tree). */
static float lanes_sum(const float *x, int64_t n) {
    float l[WF_LANES] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int64_t i = 0;
    for (; i + WF_LANES <= n; i += WF_LANES)
        for (int j = 0; j < WF_LANES; j++) l[j] = l[j] + x[i + j];
    for (; i < n; i++) l[i % WF_LANES] = l[i % WF_LANES] + x[i];
    return wf_combine_lanes(l);
}

typedef struct {
    const float *x, *w, *b;
    float *out;
    int64_t n;
    float eps;
} layernorm_job;

/* spec/numerics.md §vision-layernorm mean = Σx ⊘ n; d = x ⊖ mean; var = Σ d⊗d ⊘ n;
 * r = 1 ⊘ sqrt(var ⊕ eps); out = ((d ⊗ r) ⊗ w) ⊕ b. `out` holds d while var is summed. */
static void layernorm_rows(void *ctx, int64_t begin, int64_t end) {
    const layernorm_job *j = ctx;
    const int64_t n = j->n;
    const float fn = (float)n;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        float *o = j->out + r * n;
        const float mean = lanes_sum(x, n) / fn;
        for (int64_t i = 0; i < n; i++) o[i] = x[i] - mean;
        const float var = wf_dot_f32(o, o, n) / fn;
        const float rs = 1.0f / sqrtf(var + j->eps);
        for (int64_t i = 0; i < n; i++) o[i] = ((o[i] * rs) * j->w[i]) + j->b[i];
    }
}

void wf_layernorm_rows(const float *x, int64_t rows, int64_t n, const float *w, const float *b,
                       float eps, float *out, int32_t threads) {
    layernorm_job job = {x, w, b, out, n, eps};
    wf_parallel_for(rows, threads, layernorm_rows, &job);
}

typedef struct {
    const float *x, *cos, *sin;
    float *out;
    int64_t ld, heads, hd;
} rotate_job;

/* spec/numerics.md §rotation per row and head: x'_j = x_j ⊗ c_j ⊖ x_{j+h} ⊗ s_j,
 * x'_{j+h} = x_{j+h} ⊗ c_j ⊕ x_j ⊗ s_j (h = hd/2; each product rounded, then the sum). */
static void rotate_rows(void *ctx, int64_t begin, int64_t end) {
    const rotate_job *j = ctx;
    const int64_t h = j->hd / 2;
    for (int64_t r = begin; r < end; r++) {
        const float *c = j->cos + r * h, *s = j->sin + r * h;
        for (int64_t g = 0; g < j->heads; g++) {
            const float *x = j->x + r * j->ld + g * j->hd;
            float *o = j->out + (r * j->heads + g) * j->hd;
            for (int64_t i = 0; i < h; i++) {
                o[i] = x[i] * c[i] - x[i + h] * s[i];
                o[i + h] = x[i + h] * c[i] + x[i] * s[i];
            }
        }
    }
}

/* spec/numerics.md §vision-rotary: rows of heads·hd values `ld` floats apart (a column range of
 * the fused qkv output, read in place) rotated with per-row cos / sin [rows, hd/2] into out
 * [rows, heads·hd]. */
void wf_rotate_rows(const float *x, int64_t rows, int64_t ld, int64_t heads, int64_t hd,
                    const float *cos, const float *sin, float *out, int32_t threads) {
    rotate_job job = {x, cos, sin, out, ld, heads, hd};
    wf_parallel_for(rows, threads, rotate_rows, &job);
}

/* A tile: query rows [t0, t1), all of one image (the same seg_of and seg_len). */
typedef struct {
    int64_t t0, t1;
} query_tile;

typedef struct {
    const float *q, *kp, *vp; /* kp, vp: keys / values head-major, [heads][tokens][head_dim] */
    float *out;
    const int64_t *seg_of, *seg_len;
    const query_tile *tiles;
    int64_t ntiles, tokens, heads, head_dim;
} attend_job;

/* Units u = h · ntiles + i: head h of tile i (consecutive units share a head's keys and values). */
static void attend_units(void *ctx, int64_t begin, int64_t end) {
    const attend_job *j = ctx;
    const int64_t w = j->heads * j->head_dim, hd = j->head_dim;
    int64_t most = 1;
    for (int64_t i = 0; i < j->ntiles; i++)
        most = j->seg_len[j->tiles[i].t0] > most ? j->seg_len[j->tiles[i].t0] : most;
    float *scores = malloc(sizeof(float) * (size_t)(WF_TILE_QUERIES * most));
    if (scores == NULL) abort(); /* nothing sensible to return from a worker */
    const float *qs[WF_TILE_QUERIES];
    float *os[WF_TILE_QUERIES];
    int64_t np[WF_TILE_QUERIES];
    for (int64_t u = begin; u < end; u++) {
        const int64_t h = u / j->ntiles;
        const query_tile tl = j->tiles[u % j->ntiles];
        for (int64_t t = tl.t0; t < tl.t1; t++) {
            qs[t - tl.t0] = j->q + t * w + h * hd;
            os[t - tl.t0] = j->out + t * w + h * hd;
            np[t - tl.t0] = j->seg_len[t];
        }
        const int64_t first = (h * j->tokens + j->seg_of[tl.t0]) * hd;
        wf_attend_queries(qs, os, np, tl.t1 - tl.t0, j->kp + first, j->vp + first, hd, hd, scores);
    }
    free(scores);
}

typedef struct {
    const float *k, *v;
    float *kp, *vp;
    int64_t tokens, heads, head_dim;
} pack_job;

/* Rows [begin, end) of k and v copied head-major, so that one head's keys are contiguous (rows
 * `width` floats apart would map onto few cache sets). */
static void pack_rows(void *ctx, int64_t begin, int64_t end) {
    const pack_job *j = ctx;
    const int64_t hd = j->head_dim, w = j->heads * hd;
    for (int64_t t = begin; t < end; t++)
        for (int64_t h = 0; h < j->heads; h++) {
            const int64_t to = (h * j->tokens + t) * hd, from = t * w + h * hd;
            memcpy(j->kp + to, j->k + from, sizeof(float) * (size_t)hd);
            memcpy(j->vp + to, j->v + from, sizeof(float) * (size_t)hd);
        }
}

/* Runs of tokens with the same image, cut into tiles of at most WF_TILE_QUERIES (even sizes);
 * returns the count written to `tiles` (room for tokens entries). */
static int64_t query_tiles(const int64_t *seg_of, const int64_t *seg_len, int64_t tokens,
                           query_tile *tiles) {
    int64_t n = 0;
    for (int64_t t0 = 0; t0 < tokens;) {
        int64_t t1 = t0 + 1;
        while (t1 < tokens && seg_of[t1] == seg_of[t0] && seg_len[t1] == seg_len[t0]) t1++;
        const int64_t parts = (t1 - t0 + WF_TILE_QUERIES - 1) / WF_TILE_QUERIES;
        const int64_t size = (t1 - t0 + parts - 1) / parts;
        for (int64_t a = t0; a < t1; a += size)
            tiles[n++] = (query_tile){a, a + size < t1 ? a + size : t1};
        t0 = t1;
    }
    return n;
}

/* spec/numerics.md §vision-attention: token t's heads attend to the seg_len[t] rows from seg_of[t]
 * of k and v (its image), all [tokens, width] with width = heads·head_dim;
 * spec/numerics.md §attention per head and query. The queries of an image go through its keys in
 * tiles of up to WF_TILE_QUERIES (wf_attend_queries), threads over (head, tile) units; each
 * output's operations are those of one query alone, so any tiling and thread count give its
 * bits. */
void wf_attend_segments(const float *q, const float *k, const float *v, int64_t tokens,
                        int64_t heads, int64_t head_dim, const int64_t *seg_of,
                        const int64_t *seg_len, float *out, int32_t threads) {
    if (tokens <= 0) return;
    const size_t size = sizeof(float) * (size_t)(tokens * heads * head_dim);
    float *kp = malloc(size), *vp = malloc(size);
    query_tile *tiles = malloc(sizeof(query_tile) * (size_t)tokens);
    if (kp == NULL || vp == NULL || tiles == NULL) abort();
    pack_job pj = {k, v, kp, vp, tokens, heads, head_dim};
    wf_parallel_for(tokens, threads, pack_rows, &pj);
    const int64_t ntiles = query_tiles(seg_of, seg_len, tokens, tiles);
    attend_job job = {q, kp, vp, out, seg_of, seg_len, tiles, ntiles, tokens, heads, head_dim};
    wf_parallel_for(ntiles * heads, threads, attend_units, &job);
    free(kp), free(vp), free(tiles);
}
