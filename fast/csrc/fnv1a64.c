/* FNV-1a-64 (spec/vqf.md §fnv-trailer); must equal ref/vqf/fnv1a64.py:fnv1a64 for every input.
 *
 * The hash is a serial chain (each step needs the previous h), so neither SIMD nor threads can
 * help: the loop runs at one multiply latency per byte. Unrolling only trims loop overhead.
 */
#include <stddef.h>
#include <stdint.h>

#define WF_FNV_PRIME 0x100000001b3ULL

uint64_t wf_fnv1a64(const uint8_t *data, size_t n, uint64_t h)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h = (h ^ data[i]) * WF_FNV_PRIME;
        h = (h ^ data[i + 1]) * WF_FNV_PRIME;
        h = (h ^ data[i + 2]) * WF_FNV_PRIME;
        h = (h ^ data[i + 3]) * WF_FNV_PRIME;
    }
    for (; i < n; i++)
        h = (h ^ data[i]) * WF_FNV_PRIME;
    return h;
}
