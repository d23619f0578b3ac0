/* A conformance adapter for VQF containers at the loader level, written from
 * conformance/README.md and vqf.md alone (no Python was read to write the checks).
 *
 *   cc -O2 -ffp-contract=off -std=c11 -o vqf_conform vqf_conform.c
 *   vqf_conform kinds                       -> {"kinds": ["vqf-container:loader"]}
 *   vqf_conform vqf-container PATH          -> description on stdout, exit 0
 *                                              or "ErrorClass: rule: text" on stderr, exit 1
 *
 * Level "vqf-container:loader": the engine's load chain of vqf.md §9 (steps 1-5, 8 with the
 * trailer compared whenever it is non-zero, 12 and 13), so the runner gives it every valid case
 * and the invalid cases whose origin is "loader". The strict checks of §9.1 are not made.
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

/* ---- FNV-1a-64 (vqf.md §3.5) --------------------------------------------------------- */

static uint64_t fnv1a64(uint64_t h, const unsigned char *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    return h;
}

/* ---- the header (vqf.md §2.2, §2.4) -------------------------------------------------- */

/* Arch fields in header order (§2.2): 'u' u32, 'f' f32 bits, 'a' int32[4]. */
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

/* §2.4 step 3: is (d, f) a valid (data_offset, file_len) pair for this file? */
static int candidate_ok(uint64_t d, uint64_t f, uint64_t dir_end, uint64_t tag_len) {
    return d != 0 && f != 0 && d % 64 == 0 && d >= dir_end && d < file_size &&
           f <= UINT64_MAX - tag_len && f + tag_len == file_size && f > d;
}

/* A directory name is the bytes of the 32-byte field before its first NUL (§3.1). */
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

static int check_vqf(void) {
    /* §9 step 1: a header plus one directory entry. */
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
    /* §9 step 12: every tensor inside [0, file_len), computed without wrap-around. */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t e = DIR_OFFSET + (uint64_t)ENTRY_BYTES * i, off = u64(e + 48), len = u64(e + 56);
        if (off > file_len || len > file_len - off)
            return reject("InvalidError", "vqf.directory.tensor_range", "tensor out of range");
    }
    /* §9 step 13: the core tensors. */
    int moe = (flags & FLAG_MOE) || version == 3;
    uint32_t n_experts = legacy ? 0 : u32(16 + 4 * MOE_TAIL_WORD);
    if (!has_tensor(n, "token_embed") || !(has_tensor(n, "q8_q") || has_tensor(n, "q4_q")) ||
        (moe && (!has_tensor(n, "moe_router") ||
                 !(has_tensor(n, "q4_gate") || has_tensor(n, "q8_gate")) || n_experts == 0)))
        return reject("InvalidError", "vqf.directory.missing_core", "core tensor missing");
    /* §9 step 8 / §3.5: the trailer, unless it is 0 (the engine then skips the check). */
    uint64_t stored = 0;
    if (!(flags & FLAG_ENC)) {
        stored = u64(file_len);
        uint64_t h = fnv1a64(0xCBF29CE484222325ull, file + DIR_OFFSET, dir_end - DIR_OFFSET);
        h = fnv1a64(h, file + data_offset, file_len - data_offset);
        if (stored != 0 && stored != h)
            return reject("ChecksumError", "vqf.trailer.fnv", "FNV-1a-64 mismatch");
    }
    /* The description (README, "want.json"). */
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
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "kinds") == 0) {
        printf("{\"kinds\": [\"vqf-container:loader\"]}\n");
        return 0;
    }
    if (argc != 3 || strcmp(argv[1], "vqf-container") != 0) {
        fprintf(stderr, "usage: %s kinds | vqf-container PATH\n", argv[0]);
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
