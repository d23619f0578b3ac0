/* A conformance adapter for the two containers and their codecs, written from
 * conformance/README.md, spec/vqf.md and spec/ninfer3.md alone (no Python was read to write the
 * checks or the codecs).
 *
 *   cc -O2 -ffp-contract=off -std=c11 -o conform conform.c
 *   conform kinds                      -> {"kinds": [...], "unsupported": {"vqf-protected": "..."}}
 *   conform vqf-container PATH         -> description on stdout, exit 0
 *   conform ninfer3-container PATH        or "ErrorClass: rule: text" on stderr, exit 1
 *   conform vqf-codec CASE_DIR         -> {"encoded_sha256", "words", "values"}, exit 0; or
 *   conform ninfer3-codec CASE_DIR        "unsupported: why" on stderr, exit 3
 *
 * VQF, kind "vqf-container": the engine's load chain of spec/vqf.md §loader-chain (steps 1-5, 8
 * with the trailer compared whenever it is non-zero, 12 and 13), then every strict check of
 * spec/vqf.md §strict-checks. No key is ever given to these cases and the adapter has no SM4, SM3
 * or SM2, so an ENC or SIGNED file is rejected as unverifiable (vqf.enc.no_key, vqf.sig.no_key).
 *
 * .ninfer: the whole open-time validation of spec/ninfer3.md §validation, then every object's
 * deferred checks, then every continuation volume (spec/ninfer3.md §header-checks step 6), with a
 * small strict JSON parser.
 *
 * Codecs: every VQF layout (spec/vqf.md §encodings) and every .ninfer (format, layout) pair
 * (spec/ninfer3.md §formats, §layouts) decoded to words and float32 values by bit manipulation
 * (f16, bf16, E4M3FN and E2M1 widened exactly; one binary32 product per element, and compiled
 * with -ffp-contract=off so no product is fused); the canonical encoders:
 * spec/vqf.md §quantisation "kestrel" and spec/vqf.md §f16-rne "rne"; bf16_rne, exact, verbatim,
 * spec/ninfer3.md §grouped-absmax and spec/ninfer3.md §fp8-row-maxabs. An encoder's refusal
 * (a NaN or Inf input, a scale that overflows) is a rejection with its rule. The VQF modes
 * kestrel_legacy and trunc_ftz are there too; mode ggml answers "unsupported". Decoding assumes
 * valid words: the strict payload checks of the codecs (spec/vqf.md §encodings "Payload rules",
 * spec/ninfer3.md §grouped-formats) are not made.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 448u
#define ENTRY_BYTES 64u
#define DIR_OFFSET 448u
#define MAGIC 0x57465146u
#define FLAG_ENC (1u << 7)
#define FLAG_SIGNED (1u << 8)
#define FLAG_MOE (1u << 9)

static const unsigned char *file;
static uint64_t file_size;

static uint32_t u32(uint64_t at) {
    const unsigned char *p = file + at;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64(uint64_t at) { return (uint64_t)u32(at) | (uint64_t)u32(at + 4) << 32; }

static int reject(const char *cls, const char *rule, const char *text) {
    fprintf(stderr, "%s: %s: %s\n", cls, rule, text);
    return 1;
}

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------------ */

static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *b) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t s1 = ror(v[4], 6) ^ ror(v[4], 11) ^ ror(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + ch + K256[i] + w[i];
        uint32_t s0 = ror(v[0], 2) ^ ror(v[0], 13) ^ ror(v[0], 22);
        uint32_t mj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + s0 + mj;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
}

static void sha256_hex(const unsigned char *data, uint64_t len, char out[65]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char tail[128] = {0};
    uint64_t whole = len / 64 * 64, rest = len - whole;
    for (uint64_t i = 0; i < whole; i += 64) sha256_block(h, data + i);
    memcpy(tail, data + whole, rest);
    tail[rest] = 0x80;
    uint64_t tail_len = rest < 56 ? 64 : 128, bits = len * 8;
    for (int i = 0; i < 8; i++) tail[tail_len - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha256_block(h, tail);
    if (tail_len == 128) sha256_block(h, tail + 64);
    for (int i = 0; i < 8; i++) sprintf(out + 8 * i, "%08x", h[i]);
}

/* ---- FNV-1a-64 (spec/vqf.md §fnv-trailer) ---------------------------------------------------- */

static uint64_t fnv1a64(uint64_t h, const unsigned char *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

/* ---- the header (spec/vqf.md §header-layout, §legacy-header) --------------------------------- */

/* Arch fields in header order (spec/vqf.md §header-layout): 'u' u32, 'f' f32 bits, 'a' int32[4]. */
static const struct { const char *name; char type; } ARCH[] = {
    {"dim", 'u'}, {"n_layers", 'u'}, {"n_heads", 'u'}, {"n_kv_heads", 'u'}, {"head_dim", 'u'},
    {"ffn_dim", 'u'}, {"vocab_size", 'u'}, {"max_seq_len", 'u'}, {"rope_theta", 'f'},
    {"norm_eps", 'f'}, {"bos_id", 'u'}, {"eos_id", 'u'}, {"has_q_norm", 'u'},
    {"has_mrope", 'u'}, {"head_dim_full", 'u'}, {"kv_lora_rank", 'u'}, {"has_vision", 'u'},
    {"vis_depth", 'u'}, {"vis_hidden", 'u'}, {"vis_heads", 'u'}, {"vis_ffn", 'u'},
    {"vis_patch", 'u'}, {"vis_temporal", 'u'}, {"vis_merge", 'u'}, {"vis_out_dim", 'u'},
    {"vis_in_chan", 'u'}, {"vis_max_pos", 'u'}, {"vis_ds_count", 'u'}, {"mrope_n_sec", 'u'},
    {"vis_ds_idx", 'a'}, {"mrope_sections", 'a'}, {"vision_start_id", 'u'},
    {"vision_end_id", 'u'}, {"image_token_id", 'u'}, {"video_token_id", 'u'},
    {"n_experts", 'u'}, {"moe_ffn", 'u'}, {"top_k", 'u'}, {"shared_experts", 'u'},
};
#define N_ARCH (sizeof ARCH / sizeof ARCH[0])
#define MOE_TAIL_WORD 41 /* the four MoE words start at arch word 41 (absent in legacy) */

static int arch_word_of(size_t field) { /* word index of field `field` (arrays take 4) */
    int w = 0;
    for (size_t i = 0; i < field; i++) w += ARCH[i].type == 'a' ? 4 : 1;
    return w;
}

/* spec/vqf.md §legacy-header step 3: is (d, f) a valid (data_offset, file_len) pair for this
 * file? */
static int candidate_ok(uint64_t d, uint64_t f, uint64_t dir_end, uint64_t tag_len) {
    return d != 0 && f != 0 && d % 64 == 0 && d >= dir_end && d < file_size &&
           f <= UINT64_MAX - tag_len && f + tag_len == file_size && f > d;
}

/* A directory name is the bytes of the 32-byte field before its first NUL (spec/vqf.md §entry). */
static size_t name_len(const unsigned char *field) {
    size_t len = 0;
    while (len < 32 && field[len]) len++;
    return len;
}

static int has_tensor(uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *field = file + DIR_OFFSET + (uint64_t)ENTRY_BYTES * i;
        if (name_len(field) == strlen(name) && memcmp(field, name, strlen(name)) == 0) return 1;
    }
    return 0;
}

static void print_name(const unsigned char *field) {
    putchar('"');
    for (int i = 0; i < 32 && field[i]; i++) {
        unsigned char c = field[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c > 0x7e) printf("\\\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
}

/* The description of an accepted VQF file (README, "want.json"). */
static void describe_vqf(int legacy, uint32_t version, uint32_t flags, uint32_t n,
                         uint64_t data_offset, uint64_t file_len, uint64_t stored) {
    printf("{\"format\": \"vqf\", \"header\": {\"layout\": \"%s\", \"version\": \"%u\", "
           "\"flags\": \"%u\", \"n_tensors\": \"%u\", \"data_offset\": \"%llu\", "
           "\"file_len\": \"%llu\", \"fnv1a64\": \"%016llx\"}, \"arch\": {",
           legacy ? "legacy" : "current", version, flags, n, (unsigned long long)data_offset,
           (unsigned long long)file_len, (unsigned long long)stored);
    for (size_t i = 0; i < N_ARCH; i++) {
        int w = arch_word_of(i);
        uint64_t at = 16 + 4 * (uint64_t)w;
        int absent = legacy && w >= MOE_TAIL_WORD;
        printf("%s\"%s\": ", i ? ", " : "", ARCH[i].name);
        if (ARCH[i].type == 'a')
            printf("[\"%d\", \"%d\", \"%d\", \"%d\"]", (int32_t)u32(at), (int32_t)u32(at + 4),
                   (int32_t)u32(at + 8), (int32_t)u32(at + 12));
        else if (ARCH[i].type == 'f') printf("\"%08x\"", u32(at));
        else printf("\"%u\"", absent ? 0u : u32(at));
    }
    printf("}, \"tensors\": [");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = DIR_OFFSET + (uint64_t)ENTRY_BYTES * i, off = u64(e + 48), len = u64(e + 56);
        char digest[65];
        sha256_hex(file + off, len, digest);
        printf("%s{\"name\": ", i ? ", " : "");
        print_name(file + e);
        printf(", \"qtype\": \"%u\", \"rows\": \"%u\", \"cols\": \"%u\", \"offset\": \"%llu\", "
               "\"bytes\": \"%llu\", \"sha256\": \"%s\"}",
               u32(e + 32), u32(e + 36), u32(e + 40), (unsigned long long)off,
               (unsigned long long)len, digest);
    }
    printf("]}\n");
}

/* ---- the strict checks (spec/vqf.md §strict-checks) ------------------------------------------ */

#define FLAG_Q8_8X8 0x001u
#define FLAG_Q4_4X4 0x002u
#define FLAG_X8 0x004u
#define FLAG_Q8BUF_Q4 0x008u
#define FLAG_EMB_F16 0x020u
#define FLAG_VISION 0x040u

/* spec/vqf.md §directory-order, then the spec/vqf.md §vision-tensors table: every known name,
 * in order. */
static const char *const ORDER[] = {
    "token_embed", "final_norm", "attn_norm", "ffn_norm", "q_norm", "k_norm", "moe_router",
    "q8_q", "q8_k", "q8_v", "q8_o", "q8_gate", "q8_up", "q8_down", "q8_lm",
    "q4_q", "q4_k", "q4_v", "q4_o", "q4_gate", "q4_up", "q4_down", "q4_lm",
    "x8_q", "x8_k", "x8_v", "x8_o", "x8_gate", "x8_up", "x8_down",
    "v_q8_qkv", "v_q8_proj", "v_q8_fc1", "v_q8_fc2", "v_patch_embed", "v_patch_bias",
    "v_pos_embed", "v_qkv_bias", "v_proj_bias", "v_norm1_w", "v_norm1_b", "v_norm2_w",
    "v_norm2_b", "v_fc1_bias", "v_fc2_bias", "v_merger_nw", "v_merger_nb", "v_merger_f1w",
    "v_merger_f1b", "v_merger_f2w", "v_merger_f2b", "v_ds_nw", "v_ds_nb", "v_ds_f1w",
    "v_ds_f1b", "v_ds_f2w", "v_ds_f2b",
};
#define N_ORDER (int)(sizeof ORDER / sizeof ORDER[0])
#define FIRST_VISION 30

static int order_index(const unsigned char *field) {
    size_t len = name_len(field);
    for (int i = 0; i < N_ORDER; i++)
        if (strlen(ORDER[i]) == len && !memcmp(ORDER[i], field, len)) return i;
    return -1;
}

/* The arch words a strict check needs (spec/vqf.md §inventory symbols). */
typedef struct {
    uint64_t d, nl, hd, qo, ko, ff, v, ne, vh, vd, vf, vfp, vp, vt, mi, vo, ds, vmp;
} geometry;

static geometry arch_geometry(int legacy) {
    geometry g;
    uint64_t a[45];
    for (int i = 0; i < 45; i++) /* the MoE tail reads as 0 in legacy files */
        a[i] = legacy && i >= MOE_TAIL_WORD ? 0 : u32(16 + 4 * (uint64_t)i);
    g.d = a[0], g.nl = a[1], g.hd = a[4], g.qo = a[2] * a[4], g.ko = a[3] * a[4], g.v = a[6];
    g.ne = a[41];
    g.ff = a[5]; /* = n_experts·moe_ffn in MoE files, which vqf.arch.moe_ffn checks */
    g.vd = a[17], g.vh = a[18], g.vf = a[20], g.vfp = (a[20] + 31) / 32 * 32, g.vp = a[21];
    g.vt = a[22], g.mi = a[18] * a[23] * a[23], g.vo = a[24], g.ds = a[27], g.vmp = a[26];
    return g;
}

/* Elements (rows·cols) the arch implies for known name `i` (spec/vqf.md §text-tensors,
 * spec/vqf.md §vision-tensors), and its physical per-layer matrix [R, C] for the tilings. */
static uint64_t implied_elements(int i, const geometry *g, uint64_t *r, uint64_t *c) {
    static const char *const proj[] = {"q", "k", "v", "o", "gate", "up", "down", "lm"};
    *r = 0, *c = 0;
    if (i >= 7 && i < 30) {
        const char *p = ORDER[i] + 3;
        int k = 0;
        while (strcmp(proj[k], p)) k++;
        uint64_t out[] = {g->qo, g->ko, g->ko, g->d, g->ff, g->ff, g->d, g->v};
        uint64_t in[] = {g->d, g->d, g->d, g->qo, g->d, g->d, g->ff, g->d};
        *r = out[k], *c = in[k];
        return (k == 7 ? 1 : g->nl) * out[k] * in[k];
    }
    uint64_t vh = g->vh, vd = g->vd, mi = g->mi, vo = g->vo, ds = g->ds;
    uint64_t e[] = {
        g->v * g->d, g->d, g->nl * g->d, g->nl * g->d, g->nl * g->hd, g->nl * g->hd,
        g->nl * g->ne * g->d, [30] = vd * 3 * vh * vh, vd * vh * vh, vd * g->vf * vh,
        vd * vh * g->vfp, vh * 3 * g->vt * g->vp * g->vp, vh, g->vmp * vh, vd * 3 * vh, vd * vh,
        vd * vh, vd * vh, vd * vh, vd * vh, vd * g->vf, vd * vh, vh, vh, mi * mi, mi, mi * vo, vo,
        ds * mi, ds * mi, ds * mi * mi, ds * mi, ds * mi * vo, ds * vo,
    };
    return e[i];
}

/* The directory rows of known name `i` as writers record them (spec/vqf.md §text-tensors,
 * spec/vqf.md §vision-tensors, spec/vqf.md §geometry): q/k/v/o nl·in × out, gate/up/down
 * nl·out × in, lm V × d; cols are the implied elements over rows. 0 when the arch implies none. */
static uint64_t directory_rows(int i, const geometry *g) {
    if (i >= 7 && i < 30) {
        uint64_t r, c;
        implied_elements(i, g, &r, &c);
        const char *p = ORDER[i] + 3;
        if (!strcmp(p, "lm")) return r;
        int out_major = !strcmp(p, "gate") || !strcmp(p, "up") || !strcmp(p, "down");
        return g->nl * (out_major ? r : c);
    }
    uint64_t vd = g->vd, ds = g->ds;
    uint64_t rows[] = {
        g->v, g->d, g->nl * g->d, g->nl * g->d, g->nl * g->hd, g->nl * g->hd, g->nl * g->ne,
        [30] = vd, vd, vd, vd, 1, 1, 1, vd, vd, vd, vd, vd, vd, vd, vd, 1, 1, 1, 1, 1, 1,
        ds, ds, ds, ds, ds, ds,
    };
    return rows[i];
}

/* Allowed qtypes (bit q) of known name `i` (spec/vqf.md §text-tensors, §vision-tensors). */
static unsigned allowed_qtypes(int i) {
    if (i == 0) return 1u << 5 | 1u << 1;
    if (i >= 7 && i < 15) return 1u << 2;
    if (i >= 15 && i < 23) return 1u << 3;
    if (i >= 23 && i < 30) return 1u << 4;
    if (i >= 30 && i < 34) return 1u << 2;
    return 1u << 1;
}

static uint64_t size_of(uint32_t qtype, uint64_t n) {
    return qtype == 1 ? 4 * n : qtype == 5 ? 2 * n : qtype == 2 ? (n + 31) / 32 * 34
                                                                : (n + 31) / 32 * 18;
}

static int all_zero(uint64_t at, uint64_t len) {
    for (uint64_t i = 0; i < len; i++)
        if (file[at + i]) return 0;
    return 1;
}

#define STRICT(rule, text) return reject("InvalidError", rule, text)

/* Header, reserved fields and the arch (spec/vqf.md §header-layout, §legacy-header, §flags,
 * spec/vqf.md §arch-semantics). */
static int strict_header(int legacy, uint32_t version, uint32_t flags) {
    uint64_t shift = legacy ? 16 : 0;
    if (flags >> 10) STRICT("vqf.header.unknown_flags", "flag bits 10-31 set");
    if (!all_zero(196 - shift, 4) || (legacy && !all_zero(432, 16)))
        STRICT("vqf.header.padding", "header padding not zero");
    if (!all_zero(232 - shift, 16)) STRICT("vqf.header.enc_rsvd", "enc_rsvd not zero");
    if (!(flags & FLAG_ENC) && !all_zero(216 - shift, 16))
        STRICT("vqf.header.enc_iv", "enc_iv not zero without ENC");
    if (!(flags & FLAG_SIGNED) && !all_zero(248 - shift, 200))
        STRICT("vqf.header.sig", "sig block not zero without SIGNED");
    if (u32(72) != u32(32) || u32(76) != 0)
        STRICT("vqf.arch.reserved", "head_dim_full != head_dim or kv_lora_rank != 0");
    int moe = (flags & FLAG_MOE) || version == 3;
    uint64_t ne = legacy ? 0 : u32(180), mf = legacy ? 0 : u32(184);
    uint64_t tk = legacy ? 0 : u32(188), sh = legacy ? 0 : u32(192);
    /* n_experts alone in a dense file is vqf.flags.moe's business, not this rule's */
    if (moe ? (uint64_t)u32(36) != ne * mf : (mf | tk | sh) != 0)
        STRICT("vqf.arch.moe_ffn", "ffn_dim / MoE fields inconsistent");
    uint32_t nsec = u32(128);
    int64_t sum = 0;
    int bad = nsec > 4;
    for (uint32_t i = 0; i < 4; i++) {
        int32_t s = (int32_t)u32(148 + 4 * (uint64_t)i);
        if (i >= nsec && s != 0) bad = 1;
        sum += s;
    }
    if (bad || (u32(68) && 2 * sum != (int64_t)u32(32)))
        STRICT("vqf.arch.mrope_sections", "mrope sections inconsistent");
    return 0;
}

/* Placement and every pad byte (spec/vqf.md §placement). */
static int strict_placement(uint32_t n, uint64_t data_offset, uint64_t file_len) {
    uint64_t dir_end = DIR_OFFSET + (uint64_t)ENTRY_BYTES * n;
    if (data_offset != (dir_end + 4095) / 4096 * 4096)
        STRICT("vqf.header.data_offset", "data_offset != round_up(448 + 64n, 4096)");
    uint64_t want = data_offset, end = data_offset;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = DIR_OFFSET + (uint64_t)ENTRY_BYTES * i, off = u64(e + 48);
        if (off != want) STRICT("vqf.directory.offset", "offset breaks the placement chain");
        end = off + u64(e + 56);
        want = (end + 63) / 64 * 64;
    }
    if (file_len != (end + 63) / 64 * 64)
        STRICT("vqf.header.file_len", "file_len != round_up(end of last tensor, 64)");
    if (!all_zero(dir_end, data_offset - dir_end)) STRICT("vqf.file.gap", "gap not zero");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = DIR_OFFSET + (uint64_t)ENTRY_BYTES * i, stop = u64(e + 48) + u64(e + 56);
        uint64_t next = i + 1 < n ? u64(e + ENTRY_BYTES + 48) : file_len;
        if (!all_zero(stop, next - stop)) STRICT("vqf.data.padding", "pad byte not zero");
    }
    return 0;
}

/* Every entry against spec/vqf.md §entry, §qtype-codes, §size-function, §inventory. */
static int strict_entries(uint32_t n, const geometry *g) {
    int last = -1;
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *f = file + DIR_OFFSET + (uint64_t)ENTRY_BYTES * i;
        size_t len = name_len(f);
        if (len == 32) STRICT("vqf.directory.name_terminated", "no NUL within 32 bytes");
        for (size_t k = len; k < 32; k++)
            if (f[k]) STRICT("vqf.directory.name_padding", "byte after the NUL not zero");
        if (u32(DIR_OFFSET + (uint64_t)ENTRY_BYTES * i + 44))
            STRICT("vqf.directory.entry_padding", "entry pad not zero");
        for (uint32_t j = 0; j < i; j++) {
            const unsigned char *o = file + DIR_OFFSET + (uint64_t)ENTRY_BYTES * j;
            if (name_len(o) == len && !memcmp(o, f, len))
                STRICT("vqf.directory.name_unique", "name used twice");
        }
        int k = order_index(f);
        if (k < 0) STRICT("vqf.directory.name_known", "name not in the inventory");
        uint32_t qtype = u32((uint64_t)(f - file) + 32);
        uint64_t rows = u32((uint64_t)(f - file) + 36), cols = u32((uint64_t)(f - file) + 40);
        if (qtype < 1 || qtype > 5) STRICT("vqf.directory.qtype_known", "qtype not registered");
        if (!(allowed_qtypes(k) >> qtype & 1))
            STRICT("vqf.directory.qtype_family", "qtype not allowed for the name");
        if (u64((uint64_t)(f - file) + 56) != size_of(qtype, rows * cols))
            STRICT("vqf.directory.bytes", "bytes != size(qtype, rows*cols)");
        uint64_t r, c;
        uint64_t elements = implied_elements(k, g, &r, &c), want = directory_rows(k, g);
        if (rows * cols != elements)
            STRICT("vqf.directory.geometry", "rows*cols differs from the arch");
        if (want && rows != want)
            STRICT("vqf.directory.shape", "rows x cols is not the directory shape writers record");
        if (k <= last) STRICT("vqf.directory.order", "entries out of order");
        last = k;
    }
    return 0;
}

/* Flags against the directory, and the tilings (spec/vqf.md §flags, §strict-checks). */
static int strict_flags(uint32_t n, uint32_t version, uint32_t flags, const geometry *g) {
    int seen[N_ORDER] = {0}, vision = 0, x8 = 0, q4 = 0;
    uint32_t embed_qtype = 0;
    for (uint32_t i = 0; i < n; i++) {
        int k = order_index(file + DIR_OFFSET + (uint64_t)ENTRY_BYTES * i);
        seen[k] = 1;
        if (k == 0) embed_qtype = u32(DIR_OFFSET + (uint64_t)ENTRY_BYTES * i + 32);
    }
    for (int k = 0; k < N_ORDER; k++) {
        vision += k >= FIRST_VISION && seen[k];
        x8 += k >= 23 && k < 30 && seen[k];
        q4 += k >= 15 && k < 23 && seen[k];
    }
    if (!!(flags & FLAG_EMB_F16) != (embed_qtype == 5))
        STRICT("vqf.flags.emb_f16", "EMB_F16 != (token_embed is F16)");
    if (!!(flags & FLAG_VISION) != (vision == 27))
        STRICT("vqf.flags.vision", "VISION != all 27 v_* tensors");
    if (!!(flags & FLAG_X8) != (x8 == 7)) STRICT("vqf.flags.x8", "X8 != all 7 x8_* tensors");
    int m = !!(flags & FLAG_MOE);
    if (m != (version == 3) || m != (g->ne > 0) || m != seen[6])
        STRICT("vqf.flags.moe", "MOE, version 3, n_experts and moe_router disagree");
    if ((flags & FLAG_Q8BUF_Q4) && ((flags & FLAG_Q8_8X8) || q4))
        STRICT("vqf.flags.q8buf_q4", "Q8BUF_Q4 with Q8_8X8 or q4_* tensors");
    for (int k = 7; k < 30; k++) {
        uint64_t r, c, rows = k < 15 ? 8 : k < 23 ? 4 : 8;
        int tiled = k < 15   ? (flags & FLAG_Q8_8X8) && !(flags & FLAG_Q8BUF_Q4)
                    : k < 23 ? (flags & FLAG_Q4_4X4) != 0
                             : 1;
        implied_elements(k, g, &r, &c);
        if (seen[k] && tiled && (r % rows || c % 32))
            STRICT("vqf.flags.tiling", "a tiled matrix does not divide into whole tiles");
    }
    return 0;
}

static int strict_vqf(int legacy, uint32_t version, uint32_t flags, uint32_t n,
                      uint64_t data_offset, uint64_t file_len) {
    geometry g = arch_geometry(legacy);
    int status = strict_header(legacy, version, flags);
    if (!status) status = strict_placement(n, data_offset, file_len);
    if (!status) status = strict_entries(n, &g);
    if (!status) status = strict_flags(n, version, flags, &g);
    return status;
}

static int check_vqf(void) {
    /* spec/vqf.md §loader-chain step 1: a header plus one directory entry. */
    if (file_size < HEADER_BYTES + ENTRY_BYTES)
        return reject("MalformedError", "vqf.file.too_small", "file shorter than 512 bytes");
    if (u32(0) != MAGIC) return reject("MalformedError", "vqf.header.magic", "bad magic");
    uint32_t version = u32(4), flags = u32(8), n = u32(12);
    if (version != 2 && version != 3)
        return reject("UnsupportedError", "vqf.header.version", "version not 2 or 3");
    static const int gated[] = {0, 1, 2, 4, 5, 6}; /* dim n_layers n_heads head_dim ffn vocab */
    for (int i = 0; i < 6; i++)
        if (u32(16 + 4 * gated[i]) == 0)
            return reject("InvalidError", "vqf.header.arch_geometry", "a gated arch field is 0");
    uint64_t dir_end = DIR_OFFSET + (uint64_t)ENTRY_BYTES * n;
    if (dir_end > file_size)
        return reject("MalformedError", "vqf.directory.bounds", "directory past the end");
    uint64_t tag_len = (flags & FLAG_ENC) ? 32 : 8;
    int cur_ok = candidate_ok(u64(200), u64(208), dir_end, tag_len);
    int old_ok = version == 2 && candidate_ok(u64(184), u64(192), dir_end, tag_len);
    if (cur_ok == old_ok)
        return reject("MalformedError", "vqf.header.layout", "layout undetermined");
    if (old_ok && (flags & (FLAG_ENC | FLAG_SIGNED)))
        return reject("UnsupportedError", "vqf.header.legacy_protected", "legacy ENC/SIGNED");
    int legacy = old_ok;
    uint64_t data_offset = legacy ? u64(184) : u64(200), file_len = legacy ? u64(192) : u64(208);
    /* spec/vqf.md §loader-chain step 12: every tensor inside [0, file_len), computed without
     * wrap-around. */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = DIR_OFFSET + (uint64_t)ENTRY_BYTES * i, off = u64(e + 48), len = u64(e + 56);
        if (off > file_len || len > file_len - off)
            return reject("InvalidError", "vqf.directory.tensor_range", "tensor out of range");
    }
    /* spec/vqf.md §loader-chain step 13: the core tensors. */
    int moe = (flags & FLAG_MOE) || version == 3;
    uint32_t n_experts = legacy ? 0 : u32(16 + 4 * MOE_TAIL_WORD);
    if (!has_tensor(n, "token_embed") || !(has_tensor(n, "q8_q") || has_tensor(n, "q4_q")) ||
        (moe && (!has_tensor(n, "moe_router") ||
                 !(has_tensor(n, "q4_gate") || has_tensor(n, "q8_gate")) || n_experts == 0)))
        return reject("InvalidError", "vqf.directory.missing_core", "core tensor missing");
    /* spec/vqf.md §loader-chain step 8 / §fnv-trailer: the trailer, unless it is 0 (the engine then
     * skips the check).
 */
    uint64_t stored = 0;
    if (!(flags & FLAG_ENC)) {
        stored = u64(file_len);
        uint64_t h = fnv1a64(0xCBF29CE484222325ull, file + DIR_OFFSET, dir_end - DIR_OFFSET);
        h = fnv1a64(h, file + data_offset, file_len - data_offset);
        if (stored != 0 && stored != h)
            return reject("ChecksumError", "vqf.trailer.fnv", "FNV-1a-64 mismatch");
        if (stored == 0 && h != 0)
            return reject("ChecksumError", "vqf.trailer.fnv_missing", "stored FNV is 0");
    }
    /* README "Protected cases": no key is ever given to a vqf-container case (and this adapter
     * has no SM4, SM3 or SM2), so a protected file is unverifiable, never valid. */
    if (flags & FLAG_ENC) return reject("UnsupportedError", "vqf.enc.no_key", "ENC, no key");
    if (flags & FLAG_SIGNED)
        return reject("UnsupportedError", "vqf.sig.no_key", "SIGNED, no trusted key");
    if (strict_vqf(legacy, version, flags, n, data_offset, file_len)) return 1;
    describe_vqf(legacy, version, flags, n, data_offset, file_len, stored);
    return 0;
}

/* ==== .ninfer v3 (spec/ninfer3.md) ======================================================== */

static _Noreturn void fail(const char *cls, const char *rule, const char *text) {
    fprintf(stderr, "%s: %s: %s\n", cls, rule, text);
    exit(1);
}
#define BAD(rule, text) fail("InvalidError", rule, text)
#define U64_MAX_ UINT64_MAX

/* Read a whole file; NULL when it cannot be opened. */
static unsigned char *slurp(const char *path, uint64_t *size) {
    FILE *fh = fopen(path, "rb");
    if (!fh) return NULL;
    fseek(fh, 0, SEEK_END);
    long n = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, fh) != (size_t)n)) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(fh);
    *size = (uint64_t)n;
    return buf;
}

/* ---- a strict JSON parser (spec/ninfer3.md §general): UTF-8, no duplicates, no NaN/Infinity
 * ---------------- */

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
typedef struct jnode {
    enum jtype t;
    int u64_ok;           /* J_NUM: an integer literal in [0, 2^64 - 1] */
    uint64_t u;
    char *s;              /* J_STR: the decoded UTF-8 bytes */
    size_t slen;
    int id_ok;            /* J_STR: no lone surrogate and no U+0000 (an ID if non-empty) */
    size_t n;             /* J_ARR / J_OBJ */
    struct jnode **items;
    struct jnode **keys;  /* J_OBJ: member names as J_STR nodes */
} jnode;

static const unsigned char *jt;
static size_t jlen, jpos;

static _Noreturn void jfail(const char *rule) { fail("MalformedError", rule, "JSON text"); }

static void ws(void) {
    while (jpos < jlen && (jt[jpos] == ' ' || jt[jpos] == '\t' || jt[jpos] == '\n' ||
                           jt[jpos] == '\r'))
        jpos++;
}

static int utf8_valid(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i], len, cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return 0;
        if (i + len > n) return 0;
        for (unsigned k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

static jnode *node(enum jtype t) {
    jnode *n = calloc(1, sizeof *n);
    if (!n) exit(2);
    n->t = t;
    return n;
}

static void push(jnode *parent, jnode *item, jnode *key) {
    parent->items = realloc(parent->items, (parent->n + 1) * sizeof *parent->items);
    parent->keys = realloc(parent->keys, (parent->n + 1) * sizeof *parent->keys);
    if (!parent->items || !parent->keys) exit(2);
    parent->items[parent->n] = item;
    parent->keys[parent->n++] = key;
}

static void put_utf8(jnode *s, unsigned cp) {
    char b[4];
    size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (n == 1) b[0] = (char)cp;
    else if (n == 2) b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F));
    else if (n == 3)
        b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
        b[2] = (char)(0x80 | (cp & 0x3F));
    else
        b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3F)),
        b[2] = (char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F));
    s->s = realloc(s->s, s->slen + n + 1);
    if (!s->s) exit(2);
    memcpy(s->s + s->slen, b, n);
    s->slen += n;
    s->s[s->slen] = 0;
}

static int hex4(unsigned *out) {
    unsigned v = 0;
    if (jpos + 4 > jlen) return 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = jt[jpos++];
        v = v << 4 | (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99);
        if (v > 0xFFFF) return 0;
    }
    *out = v;
    return 1;
}

static jnode *jstring(void) {
    jnode *s = node(J_STR);
    s->s = calloc(1, 1);
    s->id_ok = 1;
    jpos++; /* the opening quote */
    for (;;) {
        if (jpos >= jlen) jfail("ninfer3.json.syntax");
        unsigned char c = jt[jpos++];
        if (c == '"') break;
        if (c < 0x20) jfail("ninfer3.json.syntax");
        if (c != '\\') { /* raw UTF-8 was validated up front: copy the byte */
            s->s = realloc(s->s, s->slen + 2);
            s->s[s->slen++] = (char)c;
            s->s[s->slen] = 0;
            continue;
        }
        if (jpos >= jlen) jfail("ninfer3.json.syntax");
        c = jt[jpos++];
        const char *simple = strchr("\"\\/bfnrt", c);
        if (simple && c) {
            put_utf8(s, (unsigned)("\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"]));
            continue;
        }
        unsigned cp;
        if (c != 'u' || !hex4(&cp)) jfail("ninfer3.json.syntax");
        if (cp >= 0xD800 && cp <= 0xDBFF && jpos + 6 <= jlen && jt[jpos] == '\\' &&
            jt[jpos + 1] == 'u') {
            size_t back = jpos;
            unsigned lo;
            jpos += 2;
            if (hex4(&lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
                put_utf8(s, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
                continue;
            }
            jpos = back;
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) s->id_ok = 0; /* a lone surrogate */
        if (cp == 0) s->id_ok = 0;
        put_utf8(s, cp);
    }
    if (memchr(s->s, 0, s->slen)) s->id_ok = 0;
    return s;
}

static jnode *jvalue(int depth);

static jnode *jnumber(void) {
    jnode *n = node(J_NUM);
    int neg = jt[jpos] == '-', integer = 1, overflow = 0;
    if (neg) jpos++;
    if (jpos < jlen && jt[jpos] == 'I') jfail("ninfer3.json.non_finite");
    if (jpos >= jlen || jt[jpos] < '0' || jt[jpos] > '9') jfail("ninfer3.json.syntax");
    if (jt[jpos] == '0') jpos++;
    else
        while (jpos < jlen && jt[jpos] >= '0' && jt[jpos] <= '9') {
            unsigned d = jt[jpos++] - '0';
            if (n->u > (UINT64_MAX - d) / 10) overflow = 1;
            n->u = n->u * 10 + d;
        }
    if (jpos < jlen && jt[jpos] == '.') {
        integer = 0, jpos++;
        if (jpos >= jlen || jt[jpos] < '0' || jt[jpos] > '9') jfail("ninfer3.json.syntax");
        while (jpos < jlen && jt[jpos] >= '0' && jt[jpos] <= '9') jpos++;
    }
    if (jpos < jlen && (jt[jpos] == 'e' || jt[jpos] == 'E')) {
        integer = 0, jpos++;
        if (jpos < jlen && (jt[jpos] == '+' || jt[jpos] == '-')) jpos++;
        if (jpos >= jlen || jt[jpos] < '0' || jt[jpos] > '9') jfail("ninfer3.json.syntax");
        while (jpos < jlen && jt[jpos] >= '0' && jt[jpos] <= '9') jpos++;
    }
    n->u64_ok = integer && !overflow && !neg; /* a negative integer (even -0) is no U64 */
    return n;
}

static int literal(const char *word) {
    size_t k = strlen(word);
    if (jpos + k <= jlen && memcmp(jt + jpos, word, k) == 0) return jpos += k, 1;
    return 0;
}

static jnode *jvalue(int depth) {
    if (depth > 512) jfail("ninfer3.json.syntax");
    ws();
    if (jpos >= jlen) jfail("ninfer3.json.syntax");
    unsigned char c = jt[jpos];
    if (c == '"') return jstring();
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber();
    if (literal("null")) return node(J_NULL);
    if (literal("true") || literal("false")) return node(J_BOOL);
    if (literal("NaN") || literal("Infinity")) jfail("ninfer3.json.non_finite");
    if (c == '[' || c == '{') {
        jnode *n = node(c == '[' ? J_ARR : J_OBJ);
        char close = c == '[' ? ']' : '}';
        jpos++;
        ws();
        if (jpos < jlen && jt[jpos] == close) return jpos++, n;
        for (;;) {
            jnode *key = NULL;
            if (n->t == J_OBJ) {
                ws();
                if (jpos >= jlen || jt[jpos] != '"') jfail("ninfer3.json.syntax");
                key = jstring();
                ws();
                if (jpos >= jlen || jt[jpos++] != ':') jfail("ninfer3.json.syntax");
                for (size_t i = 0; i < n->n; i++)
                    if (n->keys[i]->slen == key->slen && !memcmp(n->keys[i]->s, key->s, key->slen))
                        jfail("ninfer3.json.duplicate_member");
            }
            push(n, jvalue(depth + 1), key);
            ws();
            if (jpos < jlen && jt[jpos] == ',') { jpos++; continue; }
            if (jpos < jlen && jt[jpos] == close) return jpos++, n;
            jfail("ninfer3.json.syntax");
        }
    }
    jfail("ninfer3.json.syntax");
}

/* ---- directory values (spec/ninfer3.md §general)
 * ---------------------------------------------------------- */

static jnode *member(const jnode *obj, const char *name) {
    for (size_t i = 0; obj && obj->t == J_OBJ && i < obj->n; i++)
        if (obj->keys[i]->slen == strlen(name) && !memcmp(obj->keys[i]->s, name, strlen(name)))
            return obj->items[i];
    return NULL;
}

static int is_id(const jnode *v) { return v && v->t == J_STR && v->slen > 0 && v->id_ok; }
static int str_is(const jnode *v, const char *s) {
    return v && v->t == J_STR && v->slen == strlen(s) && !memcmp(v->s, s, v->slen);
}
static const char *need_id(const jnode *v) {
    if (!is_id(v)) BAD("ninfer3.value.id", "not an ID");
    return v->s;
}
static uint64_t need_u64(const jnode *v) {
    if (!v || v->t != J_NUM || !v->u64_ok) BAD("ninfer3.value.u64", "not a U64");
    return v->u;
}
static uint64_t need_positive(const jnode *v) {
    if (!v || v->t != J_NUM || !v->u64_ok || v->u == 0)
        BAD("ninfer3.value.positive_u64", "not a PositiveU64");
    return v->u;
}

/* A closed record: an object whose members are all in `all` and include every `required`. */
static void closed(const jnode *v, const char *const *required, const char *const *optional) {
    if (!v || v->t != J_OBJ) BAD("ninfer3.record.type", "not an object");
    for (const char *const *r = required; *r; r++)
        if (!member(v, *r)) BAD("ninfer3.record.members", "a required member is missing");
    for (size_t i = 0; i < v->n; i++) {
        int known = 0;
        for (const char *const *r = required; *r; r++) known |= str_is(v->keys[i], *r);
        for (const char *const *r = optional; *r; r++) known |= str_is(v->keys[i], *r);
        if (!known) BAD("ninfer3.record.members", "an unlisted member");
    }
}
#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE ((const char *const[]){NULL})

/* Shape: 0..16 PositiveU64 dims whose product fits in u64 (spec/ninfer3.md §general). */
static uint64_t shape_elements(const jnode *v) {
    if (!v || v->t != J_ARR || v->n > 16) BAD("ninfer3.value.shape", "not a Shape");
    uint64_t e = 1;
    for (size_t i = 0; i < v->n; i++) {
        const jnode *d = v->items[i];
        if (d->t != J_NUM || !d->u64_ok || d->u == 0 || e > UINT64_MAX / d->u)
            BAD("ninfer3.value.shape", "not a Shape");
        e *= d->u;
    }
    return e;
}

/* ---- the directory
 * (spec/ninfer3.md §root, §component, §objects, §binding, §use, §metadata, §closed-sets, §validation) --------------------------------------------------------- */

typedef struct {
    const jnode *node;
    const char *id;
    int tensor;
    uint64_t offset, bytes, elements;
} object;
static object *objs;
static size_t n_objs;

static const object *find_object(const char *id) {
    for (size_t i = 0; i < n_objs; i++)
        if (!strcmp(objs[i].id, id)) return &objs[i];
    return NULL;
}

/* A Binding (spec/ninfer3.md §binding): exactly {object} or {parts: [Part, ...]}, referring to
 * tensors.
 */
static void check_binding(const jnode *b) {
    if (!b || b->t != J_OBJ) BAD("ninfer3.record.type", "a binding is not an object");
    const jnode *whole = member(b, "object"), *parts = member(b, "parts");
    if (b->n != 1 || (!whole && !parts)) BAD("ninfer3.bindings.form", "not {object} or {parts}");
    if (whole) {
        const object *o = find_object(need_id(whole));
        if (!o) BAD("ninfer3.bindings.object_ref", "no such object");
        if (!o->tensor) BAD("ninfer3.bindings.object_kind", "a resource");
        return;
    }
    if (parts->t != J_ARR) BAD("ninfer3.record.type", "parts is not an array");
    if (parts->n == 0) BAD("ninfer3.bindings.parts_empty", "parts is empty");
    uint64_t total = 0;
    for (size_t i = 0; i < parts->n; i++) {
        const jnode *p = parts->items[i];
        closed(p, LIST("object", "range"), NONE);
        const object *o = find_object(need_id(member(p, "object")));
        if (!o) BAD("ninfer3.bindings.object_ref", "no such object");
        if (!o->tensor) BAD("ninfer3.bindings.object_kind", "a resource");
        const jnode *r = member(p, "range");
        if (r->t != J_ARR || r->n != 2 || r->items[0]->t != J_NUM || !r->items[0]->u64_ok ||
            r->items[1]->t != J_NUM || !r->items[1]->u64_ok)
            BAD("ninfer3.bindings.range_form", "range is not [U64, U64]");
        uint64_t begin = r->items[0]->u, end = r->items[1]->u;
        if (!(begin < end && end <= o->elements)) BAD("ninfer3.bindings.range", "bad range");
        if (end - begin > UINT64_MAX - total) BAD("ninfer3.bindings.total", "total > 2^64-1");
        total += end - begin;
    }
}

static const char *FORMATS[] = {"bf16", "fp32", "int32", "q4_g64_fp16", "q5_g64_fp16",
                                "q6_g64_fp16", "q8_g32_fp16", "t2_g128_fp16", "nvfp4",
                                "fp8_e4m3fn_row_bf16", NULL};
static const char *LAYOUT_OF[] = {"contiguous_le_v1", "contiguous_le_v1", "contiguous_le_v1",
                                  "row_split_k128_v1", "row_split_k128_v1", "row_split_k128_v1",
                                  "row_split_k128_v1", "row_split_k128_v1",
                                  "block_scale_k16_m128x4_v1", "row_scale_v1"};
static const char *LAYOUTS[] = {"contiguous_le_v1", "row_split_k128_v1",
                                "block_scale_k16_m128x4_v1", "row_scale_v1", NULL};

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* The deferred checks of one tensor
 * (spec/ninfer3.md §validation, §layout-registry, §contiguous, §row-split, §block-scale, §row-scale). */
static void check_tensor(const object *o) {
    const jnode *t = o->node;
    int f = -1, l = -1;
    for (int i = 0; FORMATS[i]; i++) if (str_is(member(t, "format"), FORMATS[i])) f = i;
    if (f < 0) BAD("ninfer3.object.format", "format not registered");
    for (int i = 0; LAYOUTS[i]; i++) if (str_is(member(t, "layout"), LAYOUTS[i])) l = i;
    if (l < 0) BAD("ninfer3.object.layout", "layout not registered");
    if (strcmp(LAYOUTS[l], LAYOUT_OF[f])) BAD("ninfer3.object.layout_accepts", "wrong pair");
    const jnode *shape = member(t, "shape");
    uint64_t n = shape->n == 2 ? shape->items[0]->u : 0, k = shape->n == 2 ? shape->items[1]->u : 0;
    if (l > 0 && shape->n != 2) BAD("ninfer3.object.shape", "rank is not 2");
    if (l == 2 && (n % 128 || k % 64)) BAD("ninfer3.object.shape", "N % 128 or K % 64");
    unsigned __int128 size;
    if (l == 0) {
        size = (unsigned __int128)o->elements * (f == 0 ? 2 : 4);
    } else if (l == 1) { /* spec/ninfer3.md §row-split: b, G, B, H per format */
        static const unsigned G[] = {64, 64, 64, 32, 128}, H[] = {0, 8, 16, 0, 0};
        unsigned g = G[f - 3], h = H[f - 3];
        unsigned __int128 gpr = align_up(k, 128) / g, base = n * gpr * 32, high = n * gpr * h;
        size = align_up((uint64_t)base, 256) + align_up((uint64_t)high, 256) + n * gpr * 2;
    } else if (l == 2) {
        size = align_up(n * k / 2, 256) + n * k / 16 + 4;
    } else {
        size = align_up((uint64_t)((unsigned __int128)n * k), 256) + 2 * (unsigned __int128)n;
    }
    if (size != o->bytes) BAD("ninfer3.object.bytes", "bytes != encoded_size");
    if (o->offset % 256) BAD("ninfer3.object.offset_alignment", "offset not a multiple of 256");
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void print_binding(const jnode *b) {
    const jnode *whole = member(b, "object"), *parts = member(b, "parts");
    if (whole) { printf("\"object\": "); json_str(whole->s); return; }
    printf("\"parts\": [");
    for (size_t i = 0; i < parts->n; i++) {
        const jnode *p = parts->items[i], *r = member(p, "range");
        printf("%s{\"object\": ", i ? ", " : "");
        json_str(member(p, "object")->s);
        printf(", \"range\": [\"%llu\", \"%llu\"]}", (unsigned long long)r->items[0]->u,
               (unsigned long long)r->items[1]->u);
    }
    printf("]");
}

/* spec/ninfer3.md §header-checks steps 1-3: the entry's fixed header; returns json_bytes. */
static uint64_t check_entry_header(const unsigned char *entry, uint64_t size) {
    if (size < 32) fail("MalformedError", "ninfer3.header.truncated", "entry < 32 bytes");
    if (memcmp(entry, "NINFER\0\3", 8)) fail("MalformedError", "ninfer3.header.magic", "magic");
    uint64_t json_bytes = u64(8);
    if (json_bytes < 1 || json_bytes > size - 32)
        fail("MalformedError", "ninfer3.header.json_bytes", "json_bytes out of range");
    return json_bytes;
}

/* spec/ninfer3.md §general: the JSON text, parsed strictly into the directory's root value. */
static const jnode *parse_directory(const unsigned char *entry, uint64_t json_bytes) {
    jt = entry + 32, jlen = (size_t)json_bytes, jpos = 0;
    if (jlen >= 3 && !memcmp(jt, "\xEF\xBB\xBF", 3)) jfail("ninfer3.json.bom");
    if (!utf8_valid(jt, jlen)) jfail("ninfer3.json.utf8");
    const jnode *root = jvalue(0);
    ws();
    if (jpos != jlen) jfail("ninfer3.json.syntax");
    return root;
}

/* spec/ninfer3.md §files-table: the files list; returns the logical payload's size. */
static uint64_t check_files(const jnode *files, const char *entry_name) {
    if (files->t != J_ARR) BAD("ninfer3.record.type", "files is not an array");
    if (files->n == 0) BAD("ninfer3.files.empty", "files is empty");
    uint64_t payload = 0;
    for (size_t i = 0; i < files->n; i++) {
        const jnode *f = files->items[i];
        closed(f, LIST("path", "payload_bytes"), NONE);
        const jnode *path = member(f, "path");
        if (i == 0 && path->t != J_NULL) BAD("ninfer3.files.entry_path", "files[0].path");
        if (i > 0) {
            const char *p = need_id(path);
            if (strchr(p, '/') || strchr(p, '\\') || !strcmp(p, ".") || !strcmp(p, ".."))
                BAD("ninfer3.files.path", "not a plain file name");
            for (size_t j = 1; j < i; j++)
                if (!strcmp(member(files->items[j], "path")->s, p))
                    BAD("ninfer3.files.path_unique", "path repeats");
            if (!strcmp(p, entry_name)) BAD("ninfer3.files.path_entry", "the entry's name");
        }
        uint64_t pb = need_positive(member(f, "payload_bytes"));
        if (pb > UINT64_MAX - payload) BAD("ninfer3.files.total", "total > 2^64-1");
        payload += pb;
    }
    return payload;
}

/* spec/ninfer3.md §objects: the objects, each within the payload and above the previous one's end,
 * recorded in objs[]. */
static void check_objects(const jnode *objects, uint64_t payload) {
    if (objects->t != J_ARR) BAD("ninfer3.record.type", "objects is not an array");
    if (objects->n == 0) BAD("ninfer3.objects.empty", "objects is empty");
    objs = calloc(objects->n, sizeof *objs);
    uint64_t prev_end = 0;
    for (size_t i = 0; i < objects->n; i++) {
        const jnode *o = objects->items[i];
        if (o->t != J_OBJ) BAD("ninfer3.record.type", "an object is not an object");
        const jnode *kind = member(o, "kind");
        int tensor = str_is(kind, "tensor");
        if (!tensor && !str_is(kind, "resource")) BAD("ninfer3.objects.kind", "bad kind");
        if (tensor)
            closed(o, LIST("id", "kind", "shape", "format", "layout", "offset", "bytes"), NONE);
        else closed(o, LIST("id", "kind", "encoding", "offset", "bytes"), NONE);
        object *d = &objs[n_objs];
        /* spec/ninfer3.md §validation step 4: id, offset and bytes, then the kind's own members */
        d->node = o, d->tensor = tensor, d->id = need_id(member(o, "id"));
        d->offset = need_u64(member(o, "offset"));
        d->bytes = need_positive(member(o, "bytes"));
        if (tensor) {
            d->elements = shape_elements(member(o, "shape"));
            need_id(member(o, "format"));
            need_id(member(o, "layout"));
        } else need_id(member(o, "encoding"));
        if (d->bytes > UINT64_MAX - d->offset) BAD("ninfer3.objects.end_overflow", "end > 2^64-1");
        if (d->offset < prev_end) BAD("ninfer3.objects.order", "below the previous end");
        if (d->offset + d->bytes > payload) BAD("ninfer3.objects.bounds", "past the payload");
        if (find_object(d->id)) BAD("ninfer3.objects.id_unique", "id repeats");
        prev_end = d->offset + d->bytes;
        n_objs++;
    }
}

/* spec/ninfer3.md §component: one component's proposal, allowed on the text component only. */
static void check_proposal(const jnode *comp_id, const jnode *prop) {
    if (!str_is(comp_id, "text"))
        BAD("ninfer3.components.proposal_component", "proposal off text");
    closed(prop, LIST("domain"), LIST("rows"));
    const jnode *dom = member(prop, "domain"), *rows = member(prop, "rows");
    if (str_is(dom, "full") && !rows) return;
    if (!str_is(dom, "indexed") || !rows)
        BAD("ninfer3.components.proposal_domain", "domain / rows");
    need_positive(rows);
}

/* spec/ninfer3.md §component: the components, a text one among them; targets and resources
 * resolve. */
static void check_components(const jnode *comps) {
    if (comps->t != J_OBJ) BAD("ninfer3.record.type", "components is not an object");
    for (size_t i = 0; i < comps->n; i++) need_id(comps->keys[i]);
    if (!member(comps, "text")) BAD("ninfer3.components.text", "no text component");
    for (size_t i = 0; i < comps->n; i++) {
        const jnode *c = comps->items[i];
        closed(c, LIST("config"), LIST("target", "resources", "proposal"));
        if (member(c, "config")->t != J_OBJ) BAD("ninfer3.record.type", "config");
        const jnode *target = member(c, "target"), *res = member(c, "resources");
        if (target && !member(comps, need_id(target)))
            BAD("ninfer3.components.target", "no such component");
        if (res) {
            if (res->t != J_OBJ) BAD("ninfer3.record.type", "resources is not an object");
            for (size_t j = 0; j < res->n; j++) {
                need_id(res->keys[j]);
                const object *o = find_object(need_id(res->items[j]));
                if (!o || o->tensor) BAD("ninfer3.components.resource_ref", "not a resource");
            }
        }
        const jnode *prop = member(c, "proposal");
        if (prop) check_proposal(comps->keys[i], prop);
    }
}

/* spec/ninfer3.md §binding: the bindings, each named by an ID. */
static void check_bindings(const jnode *bindings) {
    if (bindings->t != J_OBJ) BAD("ninfer3.record.type", "bindings is not an object");
    for (size_t i = 0; i < bindings->n; i++) {
        need_id(bindings->keys[i]);
        check_binding(bindings->items[i]);
    }
}

/* spec/ninfer3.md §use: the uses, each of a bound parameter, (parameter, input) unique. */
static void check_uses(const jnode *uses, const jnode *bindings) {
    if (uses->t != J_ARR) BAD("ninfer3.record.type", "uses is not an array");
    for (size_t i = 0; i < uses->n; i++) {
        const jnode *u = uses->items[i];
        closed(u, LIST("parameter", "input"), LIST("activation_policy", "auxiliaries"));
        const char *param = need_id(member(u, "parameter")), *input = need_id(member(u, "input"));
        if (!member(bindings, param)) BAD("ninfer3.uses.parameter", "parameter not bound");
        for (size_t j = 0; j < i; j++)
            if (!strcmp(member(uses->items[j], "parameter")->s, param) &&
                !strcmp(member(uses->items[j], "input")->s, input))
                BAD("ninfer3.uses.unique", "(parameter, input) repeats");
        const jnode *pol = member(u, "activation_policy"), *aux = member(u, "auxiliaries");
        if (pol && !str_is(pol, "A16Only") && !str_is(pol, "AllowA8") && !str_is(pol, "AllowA4"))
            BAD("ninfer3.uses.policy", "not a registered policy");
        if (aux) {
            if (aux->t != J_OBJ) BAD("ninfer3.record.type", "auxiliaries is not an object");
            for (size_t j = 0; j < aux->n; j++) need_id(aux->keys[j]), check_binding(aux->items[j]);
        }
    }
}

/* spec/ninfer3.md §metadata: metadata and provenance. */
static void check_metadata(const jnode *root) {
    const jnode *meta = member(root, "metadata"), *prov = member(root, "provenance");
    if ((meta && meta->t != J_OBJ) || (prov && prov->t != J_OBJ))
        BAD("ninfer3.record.type", "metadata / provenance is not an object");
    if (member(meta, "name")) need_id(member(meta, "name"));
}

/* spec/ninfer3.md §validation: the deferred object checks, in directory order. */
static void check_deferred_objects(void) {
    for (size_t i = 0; i < n_objs; i++) {
        if (objs[i].tensor) check_tensor(&objs[i]);
        else if (!str_is(member(objs[i].node, "encoding"), "raw_bytes_v1"))
            BAD("ninfer3.object.encoding", "encoding is not raw_bytes_v1");
    }
}

/* spec/ninfer3.md §header-checks step 6: every continuation volume; returns the logical payload
 * assembled on the way (the entry's own part first, from `start`). */
static unsigned char *assemble_payload(const char *entry_path, const char *entry_name,
                                       const unsigned char *entry, const jnode *files,
                                       uint64_t start, uint64_t payload) {
    uint64_t first = member(files->items[0], "payload_bytes")->u;
    unsigned char *logical = malloc(payload ? (size_t)payload : 1);
    if (!logical) exit(2);
    memcpy(logical, entry + start, (size_t)first);
    uint64_t at = first;
    size_t dir_len = (size_t)(entry_name - entry_path);
    for (size_t i = 1; i < files->n; i++) {
        const jnode *f = files->items[i];
        const char *name = member(f, "path")->s;
        char *path = malloc(dir_len + strlen(name) + 1);
        memcpy(path, entry_path, dir_len);
        strcpy(path + dir_len, name);
        uint64_t vsize, pb = member(f, "payload_bytes")->u;
        unsigned char *vol = slurp(path, &vsize);
        if (!vol) fail("MalformedError", "ninfer3.part.missing", "continuation volume absent");
        if (vsize < 32) fail("MalformedError", "ninfer3.part.truncated", "volume < 32 bytes");
        if (memcmp(vol, "NINPRT\0\3", 8)) fail("MalformedError", "ninfer3.part.magic", "magic");
        file = vol;
        if (u64(8) != i) BAD("ninfer3.part.index", "part_index differs");
        if (memcmp(vol + 16, entry + 16, 16)) BAD("ninfer3.part.artifact_id", "artifact_id");
        if (vsize != 4096 + pb) fail("MalformedError", "ninfer3.part.length", "volume size");
        memcpy(logical + at, vol + 4096, (size_t)pb);
        at += pb;
        free(vol);
        free(path);
    }
    return logical;
}

/* ---- the .ninfer description (README, "The .ninfer description") ---- */

static void print_files(const jnode *files) {
    for (size_t i = 0; i < files->n; i++) {
        const jnode *p = member(files->items[i], "path");
        printf("%s{\"index\": \"%zu\", \"path\": ", i ? ", " : "", i);
        json_str(p->t == J_STR ? p->s : "");
        printf(", \"payload_bytes\": \"%llu\"}",
               (unsigned long long)member(files->items[i], "payload_bytes")->u);
    }
}

static void print_components(const jnode *comps) {
    for (size_t i = 0; i < comps->n; i++) {
        const jnode *c = comps->items[i], *target = member(c, "target"), *res = member(c,
        "resources"); printf("%s{\"id\": ", i ? ", " : "");
        json_str(comps->keys[i]->s);
        printf(", \"target\": ");
        json_str(target ? target->s : "");
        printf(", \"resources\": {");
        for (size_t j = 0; res && j < res->n; j++) {
            printf("%s", j ? ", " : "");
            json_str(res->keys[j]->s);
            printf(": ");
            json_str(res->items[j]->s);
        }
        printf("}}");
    }
}

static void print_objects(const unsigned char *logical) {
    for (size_t i = 0; i < n_objs; i++) {
        const object *o = &objs[i];
        char digest[65];
        sha256_hex(logical + o->offset, o->bytes, digest);
        printf("%s{\"id\": ", i ? ", " : "");
        json_str(o->id);
        if (o->tensor) {
            const jnode *shape = member(o->node, "shape");
            printf(", \"kind\": \"tensor\", \"format\": ");
            json_str(member(o->node, "format")->s);
            printf(", \"layout\": ");
            json_str(member(o->node, "layout")->s);
            printf(", \"shape\": [");
            for (size_t j = 0; j < shape->n; j++)
                printf("%s\"%llu\"", j ? ", " : "", (unsigned long long)shape->items[j]->u);
            printf("]");
        } else {
            printf(", \"kind\": \"resource\", \"encoding\": ");
            json_str(member(o->node, "encoding")->s);
        }
        printf(", \"offset\": \"%llu\", \"bytes\": \"%llu\", \"sha256\": \"%s\"}",
               (unsigned long long)o->offset, (unsigned long long)o->bytes, digest);
    }
}

static void print_bindings(const jnode *bindings) {
    for (size_t i = 0; i < bindings->n; i++) {
        printf("%s{\"name\": ", i ? ", " : "");
        json_str(bindings->keys[i]->s);
        printf(", ");
        print_binding(bindings->items[i]);
        printf("}");
    }
}

static void print_uses(const jnode *uses) {
    for (size_t i = 0; i < uses->n; i++) {
        const jnode *u = uses->items[i], *pol = member(u, "activation_policy");
        const jnode *aux = member(u, "auxiliaries");
        printf("%s{\"parameter\": ", i ? ", " : "");
        json_str(member(u, "parameter")->s);
        printf(", \"input\": ");
        json_str(member(u, "input")->s);
        printf(", \"activation_policy\": ");
        json_str(pol ? pol->s : "");
        printf(", \"auxiliaries\": {");
        for (size_t j = 0; aux && j < aux->n; j++) {
            printf("%s", j ? ", " : "");
            json_str(aux->keys[j]->s);
            printf(": {");
            print_binding(aux->items[j]);
            printf("}");
        }
        printf("}}");
    }
}

static void describe_ninfer3(const unsigned char *entry, uint64_t json_bytes, uint64_t start,
                             uint64_t payload, const jnode *root, const unsigned char *logical) {
    printf("{\"format\": \"ninfer3\", \"header\": {\"json_bytes\": \"%llu\", \"artifact_id\": \"",
           (unsigned long long)json_bytes);
    for (int i = 16; i < 32; i++) printf("%02x", entry[i]);
    printf("\", \"entry_payload_start\": \"%llu\"}, \"payload_bytes\": \"%llu\", \"files\": [",
           (unsigned long long)start, (unsigned long long)payload);
    print_files(member(root, "files"));
    printf("], \"components\": [");
    print_components(member(root, "components"));
    printf("], \"objects\": [");
    print_objects(logical);
    printf("], \"bindings\": [");
    print_bindings(member(root, "bindings"));
    printf("], \"uses\": [");
    print_uses(member(root, "uses"));
    printf("]}\n");
}

/* The whole .ninfer check, step by step in the order of
 * spec/ninfer3.md §header-checks and §validation, then the description. Every failure exits through
 * fail(). */
static int check_ninfer3(const char *entry_path) {
    uint64_t size;
    unsigned char *entry = slurp(entry_path, &size);
    if (!entry) fail("MalformedError", "ninfer3.header.truncated", "cannot open the entry");
    file = entry; /* u32/u64 read from `file` */
    uint64_t json_bytes = check_entry_header(entry, size);
    const jnode *root = parse_directory(entry, json_bytes);
    /* spec/ninfer3.md §root root */
    closed(root, LIST("components", "objects", "bindings", "uses", "files"),
           LIST("metadata", "provenance"));
    const jnode *files = member(root, "files"), *bindings = member(root, "bindings");
    const char *slash = strrchr(entry_path, '/');
    const char *entry_name = slash ? slash + 1 : entry_path;
    uint64_t payload = check_files(files, entry_name);
    check_objects(member(root, "objects"), payload);
    check_components(member(root, "components"));
    check_bindings(bindings);
    check_uses(member(root, "uses"), bindings);
    check_metadata(root);
    /* spec/ninfer3.md §header-checks step 5 */
    uint64_t start = align_up(32 + json_bytes, 4096), first = member(files->items[0],
    "payload_bytes")->u; if (size != start + first) fail("MalformedError", "ninfer3.entry.length",
    "entry length"); check_deferred_objects();
    unsigned char *logical = assemble_payload(entry_path, entry_name, entry, files, start, payload);
    describe_ninfer3(entry, json_bytes, start, payload, root, logical);
    return 0;
}

/* ---- codec cases (README "Codec cases"; spec/vqf.md §encodings, §quantisation;
 *      spec/ninfer3.md §formats, §layouts) ------------------------------------------------- */

static _Noreturn void unsupported(const char *why) {
    fprintf(stderr, "unsupported: %s\n", why);
    exit(3);
}

static _Noreturn void broken(const char *why) { /* a case this adapter cannot read: a crash */
    fprintf(stderr, "error: %s\n", why);
    exit(2);
}

static float f32_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static float absf(float f) { return f32_of(bits_of(f) & 0x7FFFFFFFu); }
static int finite32(float f) { return (bits_of(f) & 0x7F800000u) != 0x7F800000u; }

/* binary16 -> binary32, exactly, by bits (subnormals, Inf and NaN payloads included). */
static float f16_to_f32(uint16_t h) {
    uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 31, m = h & 0x3FF;
    if (e == 31) return f32_of(s | 0x7F800000u | m << 13);
    if (e) return f32_of(s | (e + 112) << 23 | m << 13);
    if (!m) return f32_of(s);
    e = 113;                          /* normalise the subnormal m·2^-24 */
    while (!(m & 0x400)) m <<= 1, e--;
    return f32_of(s | e << 23 | (m & 0x3FF) << 13);
}

/* spec/vqf.md §f16-rne: binary32 -> binary16, round to nearest even, NaN -> sign | 0x7E00. */
static uint16_t f32_to_f16_rne(float f) {
    uint32_t b = bits_of(f), s = (b >> 16) & 0x8000, e = (b >> 23) & 0xFF, m = b & 0x7FFFFF;
    if (e == 0xFF) return (uint16_t)(s | (m ? 0x7E00 : 0x7C00));
    int he = (int)e - 112;            /* the binary16 exponent field if normal */
    if (he >= 31) return (uint16_t)(s | 0x7C00);
    uint32_t mant, shift;
    if (he <= 0) {                    /* binary16 subnormal (or zero): value / 2^-24 */
        if (he < -10) return (uint16_t)s;
        mant = m | 0x800000;
        shift = (uint32_t)(14 - he);  /* 13 + (1 - he) */
    } else {
        mant = m;
        shift = 13;
    }
    uint32_t q = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1))) q++;
    uint32_t out = he <= 0 ? q : ((uint32_t)he << 10) + q; /* a carry moves into the exponent */
    return (uint16_t)(s | out);
}

/* spec/vqf.md §f16: the engine's truncating, flush-to-zero converter (mode trunc_ftz, and the
 * scales of kestrel_legacy, spec/vqf.md §f16-rne). */
static uint16_t f32_to_f16_trunc(float f) {
    uint32_t b = bits_of(f), s = (b >> 16) & 0x8000, m = b & 0x7FFFFF;
    int e = (int)((b >> 23) & 0xFF) - 112;
    if (e <= 0) return (uint16_t)s;
    if (e >= 31) return (uint16_t)(s | 0x7C00); /* NaN too */
    return (uint16_t)(s | (uint32_t)e << 10 | m >> 13);
}

/* spec/ninfer3.md §direct-formats / §fp8-row-maxabs step 4: binary32 -> bf16 by the bit rule. */
static uint16_t f32_to_bf16_rne(float f) {
    uint32_t b = bits_of(f);
    if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFF))
        return (uint16_t)((b >> 16 & 0x8000) | 0x7FC0);
    return (uint16_t)((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
}
static float bf16_to_f32(uint16_t h) { return f32_of((uint32_t)h << 16); }

/* spec/ninfer3.md §nvfp4: E4M3FN -> binary32 exactly. */
static float e4m3_to_f32(uint8_t c) {
    uint32_t s = (uint32_t)(c & 0x80) << 24, e = (c >> 3) & 15, m = c & 7;
    if (e == 15 && m == 7) return f32_of(s | 0x7FC00000u);
    if (e == 0) return f32_of(s | bits_of((float)m * 0x1p-9f));
    return f32_of(s | (e + 120) << 23 | m << 20);
}
static float e2m1_to_f32(uint8_t c) {
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    return f32_of(bits_of(mag[c & 7]) | (uint32_t)(c & 8) << 28);
}

/* Round to the nearest integer, ties to even (|n| < 2^23 here). */
static long rne_int(float n) {
    int neg = n < 0;
    float a = absf(n);
    long i = (long)a;
    float d = a - (float)i;
    if (d > 0.5f || (d == 0.5f && (i & 1))) i++;
    return neg ? -i : i;
}

/* ---- the answer: named little-endian arrays as hex ---- */

typedef struct {
    const char *name, *dtype;
    int rank;
    uint64_t dims[17];
    unsigned char *bytes;
    uint64_t n;
} array;

static array arr(const char *name, const char *dtype, int rank, const uint64_t *dims, int width) {
    array a = {name, dtype, rank, {0}, NULL, 0};
    uint64_t count = 1;
    for (int i = 0; i < rank; i++) a.dims[i] = dims[i], count *= dims[i];
    a.n = count * (uint64_t)width;
    a.bytes = calloc(a.n ? a.n : 1, 1);
    if (!a.bytes) exit(2);
    return a;
}
static void put16(unsigned char *p, uint64_t i, uint16_t v) {
    p[2 * i] = (unsigned char)v;
    p[2 * i + 1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint64_t i, uint32_t v) {
    for (int k = 0; k < 4; k++) p[4 * i + k] = (unsigned char)(v >> (8 * k));
}
static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void print_array(const array *a) {
    printf("\"%s\": {\"dtype\": \"%s\", \"shape\": [", a->name, a->dtype);
    for (int i = 0; i < a->rank; i++)
        printf("%s\"%llu\"", i ? ", " : "", (unsigned long long)a->dims[i]);
    printf("], \"hex\": \"");
    for (uint64_t i = 0; i < a->n; i++) printf("%02x", a->bytes[i]);
    printf("\"}");
}

/* The whole codec answer; `encoded` is NULL when the case has no encoder. */
static void answer_codec(const unsigned char *encoded, uint64_t encoded_len, const array *words,
                         int n_words, const array *values) {
    printf("{");
    if (encoded) {
        char digest[65];
        sha256_hex(encoded, encoded_len, digest);
        printf("\"encoded_sha256\": \"%s\", ", digest);
    }
    printf("\"words\": {");
    for (int i = 0; i < n_words; i++) {
        if (i) printf(", ");
        print_array(&words[i]);
    }
    printf("}, ");
    print_array(values);
    printf("}\n");
}

/* ---- the case ---- */

static struct {
    const jnode *doc;
    int rank;
    uint64_t dims[17], n;
    unsigned char *payload, *values;
    uint64_t payload_len, values_len;
    const char *encoder, *name; /* name: the VQF quantiser, for its rule ids */
} cc;

static const char *case_str(const jnode *v, const char *what) {
    if (!v || v->t != J_STR) broken(what);
    return v->s;
}

static void load_case(const char *dir) {
    char path[4096];
    uint64_t len;
    snprintf(path, sizeof path, "%s/case.json", dir);
    unsigned char *text = slurp(path, &len);
    if (!text) broken("no case.json");
    jt = text, jlen = len, jpos = 0;
    cc.doc = jvalue(0);
    const jnode *shape = member(cc.doc, "shape");
    if (!shape || shape->t != J_ARR || shape->n > 16) broken("shape");
    cc.rank = (int)shape->n;
    cc.n = 1;
    for (int i = 0; i < cc.rank; i++) {
        cc.dims[i] = strtoull(case_str(shape->items[i], "shape"), NULL, 10);
        cc.n *= cc.dims[i];
    }
    /* An "encoding that must fail" case has values and no payload (README, "Codec cases"): the
       layout then decodes zeros of its own size (need_payload) before the encoder refuses. */
    cc.payload = NULL, cc.payload_len = 0;
    if (member(cc.doc, "payload")) {
        snprintf(path, sizeof path, "%s/%s", dir, case_str(member(cc.doc, "payload"), "payload"));
        cc.payload = slurp(path, &cc.payload_len);
        if (!cc.payload) broken("no payload");
    }
    cc.encoder = case_str(member(cc.doc, "encoder"), "encoder");
    cc.values = NULL;
    if (member(cc.doc, "values")) {
        snprintf(path, sizeof path, "%s/%s", dir, case_str(member(cc.doc, "values"), "values"));
        cc.values = slurp(path, &cc.values_len);
        if (!cc.values) broken("no values");
    }
}

/* The payload must be `expected` bytes; a case without one decodes `expected` zero bytes. */
static void need_payload(uint64_t expected) {
    if (!cc.payload) {
        cc.payload = calloc(expected + 1, 1);
        if (!cc.payload) exit(2);
        cc.payload_len = expected;
    }
    if (cc.payload_len != expected) broken("payload length");
}

static float value_at(uint64_t i) { return f32_of(get32(cc.values + 4 * i)); }

/* ---- VQF layouts (spec/vqf.md §encodings) ---- */

/* A tiling (spec/vqf.md §q8-tiled "one formula"): G rows, k-byte chunks, XOR on the codes. */
typedef struct { unsigned g, k, x; } tiling;

static int legacy_mode; /* kestrel_legacy (spec/vqf.md §f16-rne): truncating f16, Q8 by division */

/* spec/vqf.md §quant-q8-0 over `len` values (a 32-block, or a 256-run for G256): scale word and
 * codes. */
static uint16_t quant_q8(const float *x, int len, signed char *codes) {
    float amax = 1e-10f;
    for (int i = 0; i < len; i++)
        if (absf(x[i]) > amax) amax = absf(x[i]);
    float scale = amax / 127.0f;
    if (scale < 1e-10f) scale = 1e-10f;
    float r = 1.0f / scale;
    for (int i = 0; i < len; i++) {
        float v = x[i] * r;
        float w = v >= 0 ? v + 0.5f : v - 0.5f;
        if (legacy_mode) w = x[i] / scale + 0.5f; /* biased upward for negatives, as written */
        long q = w >= 128.0f ? 127 : w <= -128.0f ? -127 : (long)w; /* trunc toward zero */
        codes[i] = (signed char)(q > 127 ? 127 : q < -127 ? -127 : q);
    }
    return legacy_mode ? f32_to_f16_trunc(scale) : f32_to_f16_rne(scale);
}

/* spec/vqf.md §quant-q4-0 over one 32-block: scale word and the 32 nibbles (element order). */
static uint16_t quant_q4(const float *x, unsigned char *nib) {
    float amax = 0.0f, maxv = 0.0f;
    for (int i = 0; i < 32; i++)
        if (absf(x[i]) > amax) amax = absf(x[i]), maxv = x[i];
    float d = maxv / -8.0f;
    if (d == 0.0f) d = 1.0f;
    float id = 1.0f / d;
    for (int i = 0; i < 32; i++) {
        float t = x[i] * id + 8.5f; /* a multiply and an add, each rounded (-ffp-contract=off) */
        nib[i] = (unsigned char)(t != t ? 0 : t <= 0.0f ? 0 : t >= 15.0f ? 15 : (long)t);
    }
    return legacy_mode ? f32_to_f16_trunc(d) : f32_to_f16_rne(d);
}

/* Encode cc.values into the untiled payload of `base` ("q8_0", "q4_0", "q4i8", "g256"). */
static unsigned char *vqf_encode_untiled(const char *base, uint64_t nb) {
    int q4 = !strcmp(base, "q4_0"), bs = q4 ? 18 : 34;
    unsigned char *out = calloc(nb * (uint64_t)bs + 1, 1);
    float *x = calloc(nb * 32 + 1, sizeof *x); /* padded with +0.0 (spec/vqf.md §size-function) */
    if (!out || !x) exit(2);
    for (uint64_t i = 0; i < cc.n; i++) {
        x[i] = value_at(i);
        if (!finite32(x[i])) { /* spec/vqf.md §quantisation: refused, not defined */
            char rule[96];
            snprintf(rule, sizeof rule, "vqf.codec.%s.finite_input", cc.name);
            fail("InvalidError", rule, "a quantiser input is NaN or Inf");
        }
    }
    if (!strcmp(base, "g256")) {
        signed char codes[256];
        for (uint64_t run = 0; (run + 1) * 256 <= cc.n; run++) { /* later blocks stay zero */
            uint16_t d = quant_q8(x + run * 256, 256, codes);
            for (int b = 0; b < 8; b++) {
                unsigned char *blk = out + (run * 8 + (uint64_t)b) * 34;
                put16(blk, 0, d);
                memcpy(blk + 2, codes + 32 * b, 32);
            }
        }
    } else {
        for (uint64_t b = 0; b < nb; b++) {
            unsigned char *blk = out + b * (uint64_t)bs, nib[32];
            signed char codes[32];
            if (!strcmp(base, "q8_0")) {
                put16(blk, 0, quant_q8(x + 32 * b, 32, codes));
                memcpy(blk + 2, codes, 32);
            } else {
                put16(blk, 0, quant_q4(x + 32 * b, nib));
                for (int j = 0; j < 32; j++) {
                    if (q4 && j < 16) blk[2 + j] = (unsigned char)(nib[j] | nib[j + 16] << 4);
                    if (!q4) blk[2 + j] = (unsigned char)(nib[j] - 8);
                }
            }
        }
    }
    free(x);
    return out;
}

/* Move between the untiled payload and a tiling of it (spec/vqf.md §q8-tiled, §q4-0,
 * spec/vqf.md §q4-8x8l): row m's legacy byte j of a block sits at
 * 2G + floor(j/k)·k·G + k·m + (j mod k). */
static void vqf_retile(unsigned char *untiled, unsigned char *tiled, tiling t, int p,
                       uint64_t rows, uint64_t cols, int to_tiled) {
    uint64_t nb = cols / 32, gb = (uint64_t)t.g * (2 + (uint64_t)p);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t b = 0; b < nb; b++) {
            unsigned char *blk = untiled + (r * nb + b) * (2 + (uint64_t)p);
            unsigned m = (unsigned)(r % t.g);
            unsigned char *grp = tiled + ((r / t.g) * nb + b) * gb;
            unsigned char *sc = grp + 2 * m;
            if (to_tiled) memcpy(sc, blk, 2);
            else memcpy(blk, sc, 2);
            for (unsigned j = 0; j < (unsigned)p; j++) {
                unsigned char *at = grp + 2 * t.g + j / t.k * t.k * t.g + t.k * m + j % t.k;
                if (to_tiled) *at = (unsigned char)(blk[2 + j] ^ t.x);
                else blk[2 + j] = (unsigned char)(*at ^ t.x);
            }
        }
}

/* spec/vqf.md §f32, spec/vqf.md §f16: the words are the values' bits (f16 widened exactly). */
static int vqf_float(int w) {
    uint64_t n = cc.n;
    array values = arr("values", "float32", cc.rank, cc.dims, 4);
    need_payload(n * (uint64_t)w);
    array bits = arr("bits", w == 4 ? "uint32" : "uint16", 2, cc.dims, w);
    memcpy(bits.bytes, cc.payload, bits.n);
    for (uint64_t i = 0; i < n; i++)
        put32(values.bytes, i, w == 4 ? get32(cc.payload + 4 * i)
                                       : bits_of(f16_to_f32(get16(cc.payload + 2 * i))));
    unsigned char *enc = NULL;
    if (*cc.encoder) {
        enc = calloc(n * (uint64_t)w + 1, 1);
        for (uint64_t i = 0; i < n; i++) {
            if (w == 4) put32(enc, i, get32(cc.values + 4 * i));
            else put16(enc, i, legacy_mode ? f32_to_f16_trunc(value_at(i))
                                           : f32_to_f16_rne(value_at(i)));
        }
    }
    answer_codec(enc, n * (uint64_t)w, &bits, 1, &values);
    return 0;
}

/* The block layouts: untile, decode code·d per element, encode and re-tile. */
static int vqf_blocks(const char *base, tiling t, uint64_t rows, uint64_t cols) {
    uint64_t n = cc.n;
    array values = arr("values", "float32", cc.rank, cc.dims, 4);
    int q4 = !strcmp(base, "q4_0"), p = q4 ? 16 : 32;
    uint64_t nb = (n + 31) / 32, size = nb * (2 + (uint64_t)p);
    need_payload(size);
    if (t.g && (rows % t.g || cols % 32)) broken("a tiled case must divide into groups");
    unsigned char *untiled = cc.payload;
    if (t.g) {
        untiled = calloc(size, 1);
        vqf_retile(untiled, cc.payload, t, p, rows, cols, 0);
    }
    uint64_t sdims[2] = {rows, cols / 32};
    array codes = arr("codes", q4 ? "uint8" : "int8", 2, cc.dims, 1);
    array scales = cols % 32 ? arr("scales", "uint16", 1, &nb, 2)
                             : arr("scales", "uint16", 2, sdims, 2);
    for (uint64_t b = 0; b < nb; b++) {
        const unsigned char *blk = untiled + b * (2 + (uint64_t)p);
        uint16_t dw = get16(blk);
        float d = f16_to_f32(dw);
        put16(scales.bytes, b, dw);
        for (uint64_t j = 0; j < 32 && b * 32 + j < n; j++) {
            uint64_t i = b * 32 + j;
            int code;
            if (q4) {
                unsigned nib = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
                codes.bytes[i] = (unsigned char)nib;
                code = (int)nib - 8;
            } else {
                codes.bytes[i] = blk[2 + j];
                code = (signed char)blk[2 + j];
            }
            put32(values.bytes, i, bits_of((float)code * d)); /* one binary32 multiply */
        }
    }
    unsigned char *enc = NULL;
    if (*cc.encoder) {
        enc = vqf_encode_untiled(base, nb);
        if (t.g) {
            unsigned char *tiled = calloc(size, 1);
            vqf_retile(enc, tiled, t, p, rows, cols, 1);
            enc = tiled;
        }
    }
    array words[2] = {codes, scales};
    answer_codec(enc, size, words, 2, &values);
    return 0;
}

static int vqf_codec(const char *name) {
    static const struct { const char *name, *base; tiling t; } LAYOUTS[] = {
        {"f32", "f32", {0, 0, 0}},         {"f16", "f16", {0, 0, 0}},
        {"q8_0", "q8_0", {0, 0, 0}},       {"q4_0", "q4_0", {0, 0, 0}},
        {"q4i8", "q4i8", {0, 0, 0}},       {"g256", "g256", {0, 0, 0}},
        {"q8_0_8x8", "q8_0", {8, 4, 0}},   {"q8_0_4x4", "q8_0", {4, 4, 0}},
        {"g256_8x8", "g256", {8, 4, 0}},   {"g256_4x4", "g256", {4, 4, 0}},
        {"q4_0_4x4", "q4_0", {4, 4, 0x88}}, {"q4_0_8x8l", "q4_0", {8, 8, 0x88}},
    };
    int li = -1;
    for (int i = 0; i < (int)(sizeof LAYOUTS / sizeof LAYOUTS[0]); i++)
        if (!strcmp(name, LAYOUTS[i].name)) li = i;
    if (li < 0) unsupported("an unknown VQF layout");
    if (cc.rank != 2) broken("a VQF codec case is rows x cols");
    const char *base = LAYOUTS[li].base;
    cc.name = base; /* an encoder's refusal names the quantiser, the tiling's base */
    tiling t = LAYOUTS[li].t;
    uint64_t rows = cc.dims[0], cols = cc.dims[1];
    int f16 = !strcmp(base, "f16"), f32 = !strcmp(base, "f32");
    legacy_mode = !strcmp(cc.encoder, f16 ? "trunc_ftz" : "kestrel_legacy") && !f32;
    if (*cc.encoder && strcmp(cc.encoder, f16 ? "rne" : "kestrel") && !legacy_mode)
        unsupported("encoder mode not implemented (ggml is not)");
    if (f32 || f16) return vqf_float(f32 ? 4 : 2);
    return vqf_blocks(base, t, rows, cols);
}
/* ---- .ninfer formats and layouts (spec/ninfer3.md §formats, §layouts) ---- */


/* spec/ninfer3.md §contiguous (bf16, fp32, int32), spec/ninfer3.md §raw-bytes (resources). */
static int ninfer3_direct(const char *format) {
    int w = !strcmp(format, "bf16") ? 2 : !strcmp(format, "") ? 1 : 4;
    const char *dt = w == 2   ? "uint16"
                     : w == 1 ? "uint8"
                     : !strcmp(format, "int32") ? "int32" : "uint32";
    uint64_t n = cc.n;
    need_payload(n * (uint64_t)w);
    array words = arr(w == 1 ? "bytes" : "codes", dt, cc.rank, cc.dims, w);
    memcpy(words.bytes, cc.payload, words.n);
    array values = arr("values", w == 1 ? "uint8" : !strcmp(format, "int32") ? "int32" : "float32",
                       cc.rank, cc.dims, w == 2 ? 4 : w);
    if (w == 2)
        for (uint64_t i = 0; i < n; i++)
            put32(values.bytes, i, (uint32_t)get16(cc.payload + 2 * i) << 16);
    else memcpy(values.bytes, cc.payload, values.n);
    unsigned char *enc = NULL;
    if (*cc.encoder) {
        const char *want = w == 2 ? "bf16_rne" : w == 1 ? "verbatim" : "exact";
        if (strcmp(cc.encoder, want)) unsupported("an encoder this adapter does not know");
        enc = calloc(n * (uint64_t)w + 1, 1);
        if (w == 2)
            for (uint64_t i = 0; i < n; i++) put16(enc, i, f32_to_bf16_rne(value_at(i)));
        else memcpy(enc, cc.values, n * (uint64_t)w); /* exact / verbatim: the words unchanged */
    }
    answer_codec(enc, n * (uint64_t)w, &words, 1, &values);
    return 0;
}

/* spec/ninfer3.md §row-split geometry of one format. */
typedef struct { int b, g, base, high, qmax; } rsplit;

typedef struct { uint64_t kpad, gpr, high_off, scale_off, bytes; } rgeom;

static rgeom row_split_geometry(rsplit f, uint64_t n, uint64_t k) {
    rgeom r;
    r.kpad = align_up(k, 128);
    r.gpr = r.kpad / (uint64_t)f.g;
    r.high_off = align_up(n * r.gpr * (uint64_t)f.base, 256);
    r.scale_off = r.high_off + align_up(n * r.gpr * (uint64_t)f.high, 256);
    r.bytes = r.scale_off + n * r.gpr * 2;
    return r;
}

/* The two's-complement code of lane i of group (p, g) (spec/ninfer3.md §row-split "Planes"). */
static int rs_get(const unsigned char *pl, rsplit f, rgeom r, uint64_t grp, unsigned i) {
    const unsigned char *base = pl + grp * (uint64_t)f.base;
    unsigned u;
    if (f.b == 8) u = base[i];
    else if (f.b == 2) u = base[i / 4] >> (2 * (i % 4)) & 3;
    else u = base[i / 2] >> (4 * (i % 2)) & 15;
    if (f.high) {
        const unsigned char *hi = pl + r.high_off + grp * (uint64_t)f.high;
        unsigned hb = (unsigned)f.b - 4;
        for (unsigned j = 0; j < hb; j++) {
            unsigned t = i * hb + j;
            u |= (unsigned)(hi[t / 8] >> (t % 8) & 1) << (4 + j);
        }
    }
    return u < (1u << (f.b - 1)) ? (int)u : (int)u - (1 << f.b);
}

static void rs_put(unsigned char *pl, rsplit f, rgeom r, uint64_t grp, unsigned i, int q) {
    unsigned char *base = pl + grp * (uint64_t)f.base;
    unsigned u = (unsigned)q & ((1u << f.b) - 1);
    if (f.b == 8) base[i] = (unsigned char)u;
    else if (f.b == 2) base[i / 4] |= (unsigned char)(u << (2 * (i % 4)));
    else base[i / 2] |= (unsigned char)((u & 15) << (4 * (i % 2)));
    if (f.high) {
        unsigned char *hi = pl + r.high_off + grp * (uint64_t)f.high;
        unsigned hb = (unsigned)f.b - 4;
        for (unsigned j = 0; j < hb; j++) {
            unsigned t = i * hb + j;
            hi[t / 8] |= (unsigned char)((u >> (4 + j) & 1) << (t % 8));
        }
    }
}

/* spec/ninfer3.md §grouped-absmax: the canonical encoder (q4/q5/q6/q8). */
static unsigned char *grouped_absmax(rsplit f, rgeom r, uint64_t n, uint64_t k) {
    unsigned char *out = calloc(r.bytes + 1, 1);
    if (!out) exit(2);
    for (uint64_t p = 0; p < n; p++)
        for (uint64_t g = 0; g < r.gpr; g++) {
            float amax = 0.0f;
            for (uint64_t c = g * (uint64_t)f.g; c < (g + 1) * (uint64_t)f.g && c < k; c++) {
                float a = absf(value_at(p * k + c));
                if (!finite32(a))
                    BAD("ninfer3.codec.grouped_absmax.nonfinite", "a NaN or Inf in a group");
                if (a > amax) amax = a;
            }
            if (amax == 0.0f) continue; /* scale +0 and zero codes */
            float raw = (float)((double)amax / (double)f.qmax);
            uint16_t s = f32_to_f16_rne(raw);
            if (s == 0) s = 1; /* the rescue, 2^-24 */
            if (s == 0x7C00)
                BAD("ninfer3.codec.grouped_absmax.scale_overflow", "the binary16 scale is Inf");
            float inv = (float)(1.0 / (double)f16_to_f32(s));
            put16(out + r.scale_off, p * r.gpr + g, s);
            for (uint64_t c = g * (uint64_t)f.g; c < (g + 1) * (uint64_t)f.g && c < k; c++) {
                long q = rne_int(value_at(p * k + c) * inv);
                q = q > f.qmax ? f.qmax : q < -f.qmax - 1 ? -f.qmax - 1 : q;
                if (f.b == 8 && q < -127) q = -127; /* unreachable: |n| <= 127 rounds to >= -127 */
                rs_put(out, f, r, p * r.gpr + g, (unsigned)(c - g * (uint64_t)f.g), (int)q);
            }
        }
    return out;
}

static int ninfer3_row_split(const char *format) {
    static const struct { const char *name; rsplit f; } FORMATS[] = {
        {"q4_g64_fp16", {4, 64, 32, 0, 7}},    {"q5_g64_fp16", {5, 64, 32, 8, 15}},
        {"q6_g64_fp16", {6, 64, 32, 16, 31}},  {"q8_g32_fp16", {8, 32, 32, 0, 127}},
        {"t2_g128_fp16", {2, 128, 32, 0, 1}},
    };
    int fi = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(format, FORMATS[i].name)) fi = i;
    if (fi < 0) unsupported("a format row_split_k128_v1 does not accept");
    rsplit f = FORMATS[fi].f;
    if (cc.rank != 2) broken("row_split_k128_v1 is rank 2");
    uint64_t n = cc.dims[0], k = cc.dims[1], lg = (k + (uint64_t)f.g - 1) / (uint64_t)f.g;
    rgeom r = row_split_geometry(f, n, k);
    need_payload(r.bytes);
    uint64_t sdims[2] = {n, lg};
    array codes = arr("codes", "int8", 2, cc.dims, 1);
    array scales = arr("scales", "uint16", 2, sdims, 2);
    array values = arr("values", "float32", 2, cc.dims, 4);
    for (uint64_t p = 0; p < n; p++) {
        for (uint64_t g = 0; g < lg; g++)
            put16(scales.bytes, p * lg + g, get16(cc.payload + r.scale_off + 2 * (p * r.gpr + g)));
        for (uint64_t c = 0; c < k; c++) {
            uint64_t g = c / (uint64_t)f.g;
            int q = rs_get(cc.payload, f, r, p * r.gpr + g, (unsigned)(c % (uint64_t)f.g));
            float s = f16_to_f32(get16(cc.payload + r.scale_off + 2 * (p * r.gpr + g)));
            codes.bytes[p * k + c] = (unsigned char)(signed char)q;
            put32(values.bytes, p * k + c, bits_of(s * (float)q));
        }
    }
    unsigned char *enc = NULL;
    if (*cc.encoder) {
        if (strcmp(cc.encoder, "grouped_absmax") || f.b == 2)
            unsupported("an encoder this adapter does not know");
        enc = grouped_absmax(f, r, n, k);
    }
    array words[2] = {codes, scales};
    answer_codec(enc, r.bytes, words, 2, &values);
    return 0;
}

/* The nearest E4M3FN word (0x00..0x7E) to a |value| <= 448, ties to the even word. */
static uint8_t e4m3_nearest(float a) {
    unsigned w = 0;
    while (w < 0x7E && e4m3_to_f32((uint8_t)(w + 1)) <= a) w++;
    if (w == 0x7E) return 0x7E;
    float lo = e4m3_to_f32((uint8_t)w), hi = e4m3_to_f32((uint8_t)(w + 1));
    float mid = (lo + hi) / 2.0f; /* exact: both are dyadic with few bits */
    if (a > mid || (a == mid && (w & 1))) w++;
    return (uint8_t)w;
}

/* spec/ninfer3.md §fp8-row-maxabs. */
static unsigned char *fp8_row_maxabs(uint64_t n, uint64_t k, uint64_t scale_off, uint64_t bytes) {
    unsigned char *out = calloc(bytes + 1, 1);
    if (!out) exit(2);
    for (uint64_t p = 0; p < n; p++) {
        float amax = 0.0f;
        for (uint64_t c = 0; c < k; c++) {
            float x = bf16_to_f32(f32_to_bf16_rne(value_at(p * k + c)));
            if (!finite32(x)) BAD("ninfer3.codec.fp8_row_maxabs.nonfinite", "a NaN or Inf");
            if (absf(x) > amax) amax = absf(x);
        }
        if (amax == 0.0f) continue;
        float raw = (float)((double)amax / 448.0);
        uint16_t s = f32_to_bf16_rne(raw);
        if (s == 0) s = 1;
        float inv = (float)(1.0 / (double)bf16_to_f32(s));
        if (!finite32(inv))
            BAD("ninfer3.codec.fp8_row_maxabs.inverse_overflow", "1/scale is not finite");
        put16(out + scale_off, p, s);
        for (uint64_t c = 0; c < k; c++) {
            float x = bf16_to_f32(f32_to_bf16_rne(value_at(p * k + c)));
            float v = (float)((double)x * (double)inv);
            if (!finite32(v))
                BAD("ninfer3.codec.fp8_row_maxabs.inverse_overflow", "x/scale is not finite");
            v = v > 448.0f ? 448.0f : v < -448.0f ? -448.0f : v;
            uint8_t w = e4m3_nearest(absf(v));
            out[p * k + c] = (unsigned char)(w | (bits_of(v) >> 31 ? 0x80 : 0));
        }
    }
    return out;
}

static int ninfer3_row_scale(void) {
    if (cc.rank != 2) broken("row_scale_v1 is rank 2");
    uint64_t n = cc.dims[0], k = cc.dims[1], so = align_up(n * k, 256), bytes = so + 2 * n;
    need_payload(bytes);
    array codes = arr("codes", "uint8", 2, cc.dims, 1), scales = arr("scales", "uint16", 1, &n, 2);
    array values = arr("values", "float32", 2, cc.dims, 4);
    memcpy(codes.bytes, cc.payload, n * k);
    memcpy(scales.bytes, cc.payload + so, 2 * n);
    for (uint64_t p = 0; p < n; p++) {
        float s = bf16_to_f32(get16(cc.payload + so + 2 * p));
        for (uint64_t c = 0; c < k; c++)
            put32(values.bytes, p * k + c, bits_of(e4m3_to_f32(cc.payload[p * k + c]) * s));
    }
    unsigned char *enc = NULL;
    if (*cc.encoder) {
        if (strcmp(cc.encoder, "fp8_row_maxabs"))
            unsupported("an encoder this adapter does not know");
        enc = fp8_row_maxabs(n, k, so, bytes);
    }
    array words[2] = {codes, scales};
    answer_codec(enc, bytes, words, 2, &values);
    return 0;
}

/* spec/ninfer3.md §block-scale: codes, the unswizzled scales and the divisor; no encoder. */
static int ninfer3_nvfp4(void) {
    if (cc.rank != 2) broken("block_scale_k16_m128x4_v1 is rank 2");
    uint64_t n = cc.dims[0], k = cc.dims[1];
    if (n % 128 || k % 64) broken("nvfp4 needs N % 128 == 0 and K % 64 == 0");
    uint64_t so = align_up(n * k / 2, 256), dv = so + n * k / 16, tiles = k / 64;
    need_payload(dv + 4);
    if (*cc.encoder) unsupported("nvfp4 has no encoder");
    uint64_t sdims[2] = {n, k / 16};
    array codes = arr("codes", "uint8", 2, cc.dims, 1);
    array scales = arr("scales", "uint8", 2, sdims, 1);
    array divisor = arr("divisor", "uint32", 0, NULL, 4);
    array values = arr("values", "float32", 2, cc.dims, 4);
    memcpy(divisor.bytes, cc.payload + dv, 4);
    float d = f32_of(get32(cc.payload + dv));
    for (uint64_t p = 0; p < n; p++)
        for (uint64_t g = 0; g < k / 16; g++) {
            uint64_t m = p % 128;
            uint64_t at = ((p / 128) * tiles + g / 4) * 512 + (m % 32) * 16 + (m / 32) * 4 + g % 4;
            scales.bytes[p * (k / 16) + g] = cc.payload[so + at]; /* the swizzle undone */
        }
    for (uint64_t i = 0; i < n * k; i++) {
        uint8_t c = cc.payload[i / 2] >> (4 * (i % 2)) & 15;
        codes.bytes[i] = c;
        float s = e4m3_to_f32(scales.bytes[i / k * (k / 16) + i % k / 16]);
        put32(values.bytes, i, bits_of(e2m1_to_f32(c) * s / d));
    }
    array words[3] = {codes, scales, divisor};
    answer_codec(NULL, 0, words, 3, &values);
    return 0;
}

static int codec_case(const char *kind, const char *dir) {
    load_case(dir);
    const jnode *codec = member(cc.doc, "codec");
    if (!strcmp(kind, "vqf-codec")) return vqf_codec(case_str(member(codec, "name"), "codec.name"));
    const char *format = case_str(member(codec, "format"), "codec.format");
    const char *layout = case_str(member(codec, "layout"), "codec.layout");
    if (!strcmp(layout, "contiguous_le_v1") &&
        (!strcmp(format, "bf16") || !strcmp(format, "fp32") || !strcmp(format, "int32")))
        return ninfer3_direct(format);
    if (!strcmp(layout, "raw_bytes_v1") && !*format) return ninfer3_direct("");
    if (cc.values && !*cc.encoder &&
        (!strcmp(format, "nvfp4") || !strcmp(format, "t2_g128_fp16"))) {
        char rule[96]; /* spec/ninfer3.md §formats: no value encoder, words are imported */
        snprintf(rule, sizeof rule, "ninfer3.codec.%s.no_encoder", layout);
        fail("UnsupportedError", rule, "the pair has no value encoder: import words instead");
    }
    if (!strcmp(layout, "row_split_k128_v1")) return ninfer3_row_split(format);
    if (!strcmp(layout, "row_scale_v1") && !strcmp(format, "fp8_e4m3fn_row_bf16"))
        return ninfer3_row_scale();
    if (!strcmp(layout, "block_scale_k16_m128x4_v1") && !strcmp(format, "nvfp4"))
        return ninfer3_nvfp4();
    unsupported("a (format, layout) pair this adapter does not know");
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "kinds") == 0) {
        /* protected VQF files need SM4, SM3 and SM2, which this one-file adapter leaves out */
        printf("{\"kinds\": [\"vqf-container\", \"ninfer3-container\", \"vqf-codec\", "
               "\"ninfer3-codec\"], "
               "\"unsupported\": {\"vqf-protected\": \"no SM4, SM3 or SM2 in this adapter\"}}\n");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "ninfer3-container") == 0) return check_ninfer3(argv[2]);
    if (argc == 3 && (!strcmp(argv[1], "vqf-codec") || !strcmp(argv[1], "ninfer3-codec")))
        return codec_case(argv[1], argv[2]);
    if (argc != 3 || strcmp(argv[1], "vqf-container") != 0) {
        fprintf(stderr, "usage: %s kinds | vqf-container PATH | ninfer3-container PATH\n",
                argv[0]);
        return 2;
    }
    FILE *fh = fopen(argv[2], "rb");
    if (!fh) return reject("MalformedError", "vqf.file.too_small", "cannot open the file");
    fseek(fh, 0, SEEK_END);
    long size = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    unsigned char *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf || (size > 0 && fread(buf, 1, (size_t)size, fh) != (size_t)size)) {
        fclose(fh);
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 2;
    }
    fclose(fh);
    file = buf;
    file_size = (uint64_t)size;
    int status = check_vqf();
    free(buf);
    return status;
}
