/* Memory read bandwidth probe for `weightfile bench` (the decode roofline's denominator).
 *
 * The one probe: `weightfile bench` and benchmarks/bench_forward.py both call it.
 * Reads n 64-bit words once and returns their sum, so the compiler cannot drop the loads.
 * Eight independent accumulators keep several cache lines in flight and let GCC vectorise
 * the adds: the loop is bound by memory, not by the add chain. Threads are the caller's: each
 * ctypes call releases the GIL, so Python threads reading disjoint buffers measure all cores.
 */
#include <stddef.h>
#include <stdint.h>

uint64_t wf_membw_read(const uint64_t *p, size_t n)
{
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        a0 += p[i];
        a1 += p[i + 1];
        a2 += p[i + 2];
        a3 += p[i + 3];
        a4 += p[i + 4];
        a5 += p[i + 5];
        a6 += p[i + 6];
        a7 += p[i + 7];
    }
    for (; i < n; i++)
        a0 += p[i];
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
