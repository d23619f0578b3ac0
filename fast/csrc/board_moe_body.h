/* The board MoE expert products with a row in each vector lane
 * (spec/numerics.md §board-moe-products), written once over a vector type and included once per
 * path by board_moe.c. The includer defines ATTR, SFX(name), W (lanes), V, VZERO, VSET1, VLOAD,
 * VSTORE, VFMA(a, b, c) = a·b + c rounded once, and VCODES(p) = the W int8 codes at p as floats.
 *
 * Lane l of a vector is row l of its group (board_moe.c's packed layout) and performs exactly
 * the portable loop's chain for that row: o = fma(x[c], code, o) over the block's 32 columns
 * from 0, then acc = fma(scale, o, acc), blocks ascending. Only the number of rows in flight
 * changes with the path.
 */

/* NV vectors of rows at once (NV·W rows: whole groups): NV independent FMA chains. */
ATTR static inline __attribute__((always_inline)) void
SFX(moe_rows)(const int8_t *pc, const float *ps, int64_t nb, const float *x, float *y,
              const int nv) {
    const int64_t gbytes = nb * 32 * 16, gscales = nb * 16; /* one group's codes and scales */
    V acc[4] = {VZERO(), VZERO(), VZERO(), VZERO()};
    for (int64_t b = 0; b < nb; b++) {
        V o[4] = {VZERO(), VZERO(), VZERO(), VZERO()};
        for (int c = 0; c < 32; c++) {
            const V xc = VSET1(x[b * 32 + c]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                const int64_t g = v * W / 16, lane = v * W % 16;
                o[v] = VFMA(xc, VCODES(pc + g * gbytes + (b * 32 + c) * 16 + lane), o[v]);
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            const int64_t g = v * W / 16, lane = v * W % 16;
            acc[v] = VFMA(VLOAD(ps + g * gscales + b * 16 + lane), o[v], acc[v]);
        }
    }
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) VSTORE(y + v * W, acc[v]);
}

/* Groups g0..g1: four vectors at a time (4·W/16 groups), the rest a group at a time. */
ATTR static void SFX(moe_groups)(const int8_t *pc, const float *ps, int64_t nb, const float *x,
                                 float *y, int64_t g0, int64_t g1) {
    const int64_t unit = 4 * W / 16, gbytes = nb * 32 * 16, gscales = nb * 16;
    int64_t g = g0;
    for (; g + unit <= g1; g += unit)
        SFX(moe_rows)(pc + g * gbytes, ps + g * gscales, nb, x, y + 16 * g, 4);
    for (; g < g1; g++)
        SFX(moe_rows)(pc + g * gbytes, ps + g * gscales, nb, x, y + 16 * g, 16 / W);
}
