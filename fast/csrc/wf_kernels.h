/* Shared declarations of the forward-pass kernels (qmatvec.c, model_ops.c, wf_common.c, ...;
 * the kernel paths are cpu.h's).
 *
 * Everything follows spec/numerics.md: sums in the canonical 8-lane order with the fixed
 * halving tree (spec/numerics.md §lanes8-tree), no fused multiply-add (build with
 * -ffp-contract=off), quantized products in the spec/numerics.md §q8-activation (q8_activation) or
 * spec/numerics.md §f32-weights (f32_weights) mode.
 */
#ifndef WF_KERNELS_H
#define WF_KERNELS_H

#include <stdint.h>

#include "cpu.h"

enum { WF_QK = 32, WF_LANES = 8 };

/* Weight encodings a matrix can have (spec/vqf.md §encodings). Q8 covers q8_0, g256 and q4i8: all
 * three store 34-byte blocks of an f16 scale and 32 int8 codes. Q4 is the 18-byte nibble block. */
enum { WF_W_Q8 = 0, WF_W_Q4 = 1, WF_W_F32 = 2, WF_W_F16 = 3 };

/* A weight matrix [rows, cols] in its file encoding. group_rows = 1 for untiled payloads; else
 * the spec/vqf.md §q8-tiled, §q4-0, §q4-8x8l tile geometry (G rows per group, k-byte chunks, XOR on
 * payload bytes). group_stride: bytes from one row group's start to the next one's; 0 for a whole
 * matrix (the group's own length), larger for a column band read in place from a wider matrix
 * (spec/vqf.md §text-tensors: an expert's down columns are the same block columns of every row
 * group, so `data` points at the band's first block and each group is `group_stride` further).
 */
typedef struct {
    const uint8_t *data;
    int64_t rows, cols;
    int32_t kind, group_rows, chunk_bytes, xor_mask;
    int64_t group_stride;
} wf_matrix;

/* Bytes of one row group of G rows and cols / 32 blocks (one row of words for F32 / F16). */
static inline int64_t wf_group_bytes(const wf_matrix *m) {
    if (m->kind == WF_W_F32) return m->cols * 4;
    if (m->kind == WF_W_F16) return m->cols * 2;
    const int64_t g = m->group_rows > 1 ? m->group_rows : 1;
    return (m->cols / WF_QK) * g * (2 + (m->kind == WF_W_Q8 ? WF_QK : WF_QK / 2));
}

/* Bytes from one row group's start to the next: the group's own length unless set. */
static inline int64_t wf_stride(const wf_matrix *m) {
    return m->group_stride > 0 ? m->group_stride : wf_group_bytes(m);
}

/* Where row group `g` starts. */
static inline const uint8_t *wf_group(const wf_matrix *m, int64_t g) {
    return m->data + g * wf_stride(m);
}

/* Bytes after the f16 scale in one base block of `kind` (WF_W_Q8 or WF_W_Q4). */
static inline int wf_payload_bytes(int32_t kind) { return kind == WF_W_Q8 ? WF_QK : WF_QK / 2; }

/* Exact binary16 -> binary32 widening (table built once). */
float wf_f16_to_f32(uint16_t h);
const float *wf_f16_table(void);

/* spec/numerics.md §lanes8-tree lanes: combine ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). */
static inline float wf_combine_lanes(const float l[WF_LANES]) {
    float a0 = l[0] + l[4], a1 = l[1] + l[5], a2 = l[2] + l[6], a3 = l[3] + l[7];
    float b0 = a0 + a2, b1 = a1 + a3;
    return b0 + b1;
}

/* spec/numerics.md §dot canonical dot of two float32 vectors. */
float wf_dot_f32(const float *a, const float *b, int64_t n);
void wf_quantize_activation(const float *x, int64_t n, int8_t *codes, float *scales);

/* The thread policy, its one copy (fast/numerics/matrix.py threads_for asks it): `asked`, capped
 * so that each thread gets at least `min_work` of `work` (weight elements x tokens, or
 * multiply-adds), and at least 1. Starting threads costs more than a small product saves; every
 * count gives the same bits (spec/numerics.md §threads), so only speed depends on it. */
int32_t wf_threads_for(int32_t asked, int64_t work, int64_t min_work);

/* Run fn(ctx, begin, end) over [0, n) split into `threads` contiguous parts (pthreads). */
typedef void (*wf_range_fn)(void *ctx, int64_t begin, int64_t end);
void wf_parallel_for(int64_t n, int32_t threads, wf_range_fn fn, void *ctx);

/* Row r, block column b of a quantized matrix: f16 scale bits in *d and 32 signed codes (in
 * place for an untiled Q8 block, else unpacked into tmp). */
const int8_t *wf_fetch_block(const wf_matrix *m, int64_t r, int64_t b, int8_t *tmp, uint16_t *d);

/* x86-64: the AVX2 spec/numerics.md §q8-activation kernel for the whole groups of four rows in [r0,
 * r1), which the avx2 path and the avx512 one (for the rows its bands do not cover) take
 * (qmatvec_x86.c); returns the first row it left to the caller. */
int64_t wf_q8_activation_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                                   const float *xd, const int32_t *xsum8, int64_t tokens,
                                   float *y);

/* x86-64: spec/numerics.md §q8-activation steps 1-2 on the blocks from `start` with AVX2, up to the
 * first block holding a NaN (left to the scalar loop); returns where it stopped. */
int64_t wf_quantize_blocks_avx2(const float *x, int64_t start, int64_t n, int8_t *codes,
                                float *scales);
/* ... and its AVX-512 form, the same operations on 16 lanes (qmatvec_avx512.c). */
int64_t wf_quantize_blocks_avx512(const float *x, int64_t start, int64_t n, int8_t *codes,
                                  float *scales);

/* Dense F32 rows r0.. (`ld` floats apart) in bands of 4 (fast/csrc/f32_x86.c) on the AVX2 or
 * AVX-512 path; returns the first row left to the caller (r0 on any other path). */
int64_t wf_f32_rows_x86(const float *w, int64_t ld, int64_t cols, int64_t rows, int64_t r0,
                        int64_t r1, const float *x, int64_t tokens, float *y, int32_t isa);
/* x86-64 prefill (gemm_x86.c): spec/numerics.md §q8-activation for bands of 8 rows from r0 and
 * every token in tiles of 8 rows x 3 tokens (Q4_0 4x4, Q8_0 8x8 and untiled Q4_0 / Q8_0); returns
 * the first row it left to the caller (r0 itself for other layouts). */
int64_t wf_gemm_rows_avx2(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                          const float *xd, const int32_t *xsum8, int64_t tokens, float *y);

/* x86-64 (qmatvec_avx512.c): spec/numerics.md §q8-activation with AVX-512 + VNNI for bands of 16
 * rows (some of 8 on untiled payloads) from r0 and every token (every tiled layout, untiled Q4_0 /
 * Q8_0); returns the first row it left to the caller (r0 itself for other encodings). */
int64_t wf_q8_activation_rows_avx512(const wf_matrix *m, int64_t r0, int64_t r1, const int8_t *xq,
                                     const float *xd, const int32_t *xsum8, int64_t tokens,
                                     float *y);

/* scalar_ops.c: the scalar spec/numerics.md §exp exp and the spec/numerics.md §softmax maximum (the
 * first NaN if any, else the first largest value). */
float wf_exp(float x);
float wf_max_f32(const float *v, int64_t n);

/* spec/numerics.md §attention one token's attention over npos rows of stride floats
 * (model_ops.c). */
void wf_attend(const float *q, const float *keys, const float *values, int64_t npos,
               int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, float *scores,
               float *out);
/* ... its query head h alone (wf_attend is this for h = 0..heads-1). */
void wf_attend_head(const float *q, const float *keys, const float *values, int64_t npos,
                    int64_t stride, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t h,
                    float *scores, float *out);
/* wf_attend on one layer of a cache that keeps each kv head's rows together: keys / values
 * [kv_heads, capacity, head_dim] (model_ops.c). */
void wf_attend_planes(const float *q, const float *keys, const float *values, int64_t npos,
                      int64_t capacity, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      float *scores, float *out);

/* attention_tiles.c: spec/numerics.md §attention for up to WF_TILE_QUERIES queries reading the same
 * key / value rows (query a over the first np[a] rows), one tile on a SIMD path; `sc` holds
 * nq · max(np) floats. */
enum { WF_TILE_QUERIES = 64 };
void wf_attend_queries(const float *const *qs, float *const *os, const int64_t *np, int64_t nq,
                       const float *k, const float *v, int64_t stride, int64_t hd, float *sc);

/* vision.c and gelu.c (spec/numerics.md §vision): LayerNorm with a bias over rows of n; the
 * GELUs (kind 0 tanh, 1 erf), correctly rounded, flags 0 / 1 / 2 (the binary64 estimate, the
 * double-double path, left to the caller's multi-precision evaluation), and one element's
 * double-double value for tests; the 2-D rotary of rows `ld` floats apart; bidirectional
 * attention of each token over its image's rows [seg_of[t], seg_of[t] + seg_len[t]). */
void wf_layernorm_rows(const float *x, int64_t rows, int64_t n, const float *w, const float *b,
                       float eps, float *out, int32_t threads);
int64_t wf_gelu(const float *x, int64_t n, int32_t kind, double guard, float *out, uint8_t *flags,
                int32_t threads);
void wf_gelu_dd(float x, int32_t kind, double *hi_lo);
void wf_rotate_rows(const float *x, int64_t rows, int64_t ld, int64_t heads, int64_t hd,
                    const float *cos, const float *sin, float *out, int32_t threads);
void wf_attend_segments(const float *q, const float *k, const float *v, int64_t tokens,
                        int64_t heads, int64_t head_dim, const int64_t *seg_of,
                        const int64_t *seg_len, float *out, int32_t threads);

/* ninfer.c: payload kinds of wf_nf_matrix (fast/qwen35/matrix.py NF_KINDS mirrors them). */
enum { WF_NF_ROW_SPLIT = 0, WF_NF_BF16 = 1, WF_NF_FP32 = 2, WF_NF_FP8_ROW = 3 };

/* Rows [row0, row0 + rows) of one `.ninfer` object [N, cols]. Row split
 * (spec/ninfer3.md §row-split): per row `gpr` groups of `group` lanes, base plane fields of
 * base_bits bits (lowest first), high plane fields of code_bits − 4 bits (shifted up by 4), one
 * f16 scale word per group.
 * fp8 row scale (spec/ninfer3.md §row-scale): byte codes row-major, one bf16 scale word per row, the
 * code values in `lut` (256 floats). */
typedef struct {
    const uint8_t *data;
    const float *lut;
    int64_t row0, rows, cols;
    int32_t kind, code_bits, group, base_bytes, high_bytes, base_bits;
    int64_t gpr, high_offset, scale_offset;
} wf_nf_matrix;

/* ninfer.c: y[t * ldy + r] = the spec/numerics.md §dot of decoded row row0 + r with x[t]; the
 * delta rule of one token over every value head (spec/numerics.md §gdn-gates). */
void wf_nf_matmat(const wf_nf_matrix *m, const float *x, int64_t tokens, float *y, int64_t ldy,
                  int32_t threads);
/* ninfer.c: wf_nf_matmat of count matrices of one width with the same x, y[i] of stride ldy[i],
 * their rows one range on the pool. */
void wf_nf_matmat_set(const wf_nf_matrix *const *m, int64_t count, const float *x,
                      int64_t tokens, float *const *y, const int64_t *ldy, int32_t threads);
/* ninfer_x86.c: one token's rows [r0, r1) of a q8 row-split or bf16 matrix with the decode fused
 * into the dot (AVX2 / AVX-512 paths); returns the first row it left (r0 on other paths/kinds). */
int64_t wf_nf_fused_rows(const wf_nf_matrix *m, int64_t r0, int64_t r1, const float *x, float *y,
                         int32_t isa);
/* ninfer_x86.c (AVX-512 only): four decoded rows w [4][n] with tokens a and b, whose whole
 * 8-chunks x2 holds interleaved (chunk c of a, then of b); out_a, out_b [4]. */
void wf_nf_dot4_pair(const float *w, const float *x2, const float *a, const float *b, int64_t n,
                     float *out_a, float *out_b);
/* ninfer_x86.c (AVX-512 only): the same for tokens tok[0..3] (two interleaved pairs in x2, the
 * second at x2 + 2 · (n / 8) · 8); out[u] [4] for token u. */
void wf_nf_dot4_quad(const float *w, const float *x2, const float *const *tok, int64_t n,
                     float *const *out);
/* ninfer_x86.c (AVX-512 only): one value head's delta rule 16 columns at a time, dv % 16 == 0. */
void wf_delta_rule_cols_avx512(float *S, const float *q, const float *k, const float *v,
                               float decay, float beta, int64_t dk, int64_t dv, float *o);
void wf_lanes8_rows(const float *x, int64_t rows, int64_t n, float *out);
/* ninfer.c: spec/numerics.md §softplus element-wise (the reference's log, log1p, exp). */
void wf_softplus_array(const float *x, int64_t n, float *out);
/* ninfer.c: the causal convolution's tap sums of T tokens, seq [T + kernel − 1, C], w [kernel, C]. */
void wf_gdn_conv(const float *seq, const float *w, int64_t T, int64_t C, int64_t kernel,
                 float *out);
/* ninfer.c: the delta rule of T consecutive tokens of one sequence, value heads on the pool. */
int32_t wf_gdn_steps(float *states, const float *q, const float *k, const float *v,
                     const float *decay, const float *beta, int64_t T, int64_t hv, int64_t hk,
                     int64_t dk, int64_t dv, float *out, int32_t threads);
/* layers.c: attention of T tokens of one sequence on the pool (fast/qwen35/attention.py). */
void wf_attend_tokens(const float *qr, int64_t qd, const float *keys, const float *values,
                      int64_t kvd, const int64_t *slots, int64_t T, int64_t heads,
                      int64_t kv_heads, int64_t head_dim, float *att, int32_t threads);
int32_t wf_gdn_step(float *states, const float *q, const float *k, const float *v,
                    const float *decay, const float *beta, int64_t hv, int64_t hk, int64_t dk,
                    int64_t dv, float *out);

#endif
