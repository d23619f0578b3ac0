/* The input and output of the qemu test drivers (tests/fast/neon/driver.c,
 * tests/fast/qwen3_moe/moe_driver.c): the whole little-endian input file read once, then taken
 * front to back (int64 parameters and arrays); the float32 results written in one go. A short
 * input or an unreadable file ends the driver with exit status 2. */
#ifndef WF_DRIVER_IO_H
#define WF_DRIVER_IO_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *input;
static size_t input_len, at;

/* The next n bytes of the input, in place. */
static void *take(size_t n) {
    if (at + n > input_len) {
        fprintf(stderr, "input too short\n");
        exit(2);
    }
    void *p = input + at;
    at += n;
    return p;
}

/* The next int64 parameter. */
static int64_t param(void) {
    int64_t v;
    memcpy(&v, take(8), 8);
    return v;
}

/* The next n bytes, copied into their own (aligned) buffer. */
static void *copy(size_t n) {
    void *p = malloc(n ? n : 1);
    memcpy(p, take(n), n);
    return p;
}

/* Reads the whole file at `path` as the input; 0, or 2 when it cannot be read. */
static int read_input(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 2;
    fseek(f, 0, SEEK_END);
    input_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    input = malloc(input_len ? input_len : 1);
    const size_t got = fread(input, 1, input_len, f);
    fclose(f);
    return got == input_len ? 0 : 2;
}

/* Writes n float32 results to `path`; 0, or 2 when that fails. */
static int write_floats(const char *path, const float *y, size_t n) {
    FILE *o = fopen(path, "wb");
    if (!o) return 2;
    const size_t put = fwrite(y, sizeof(float), n, o);
    return fclose(o) == 0 && put == n ? 0 : 2;
}

#endif
