/* A read-bandwidth probe for benchmarks: stream n bytes (n % 32 == 0) once, as a matrix product
 * streams its weights, and return a checksum so the reads cannot be optimised away. */
#include <stdint.h>
#include <string.h>

uint64_t wf_stream_read(const uint8_t *p, int64_t n) {
    uint64_t acc[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i + 32 <= n; i += 32) {
        uint64_t w[4];
        memcpy(w, p + i, 32);
        for (int j = 0; j < 4; j++) acc[j] += w[j];
    }
    return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}
