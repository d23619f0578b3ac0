"""Constants of the canonical numerics profile, as float32 bit patterns (spec/numerics.md
§lanes8-tree, §quantized-matmul, §norms, §exp, §silu, §rope).

Every constant is given by its exact binary32 bit pattern so that no implementation depends on
how its compiler or parser rounds a decimal literal.
"""

from __future__ import annotations

#: spec/numerics.md §lanes Lanes of the canonical summation order: element i goes to lane i mod 8.
SUM_LANES = 8

#: spec/numerics.md §quantized-matmul Elements per quantization block (VQF Q8_0 / Q4_0 and the
#: activation blocks).
QBLOCK = 32

#: spec/numerics.md §q8-activation Largest activation code magnitude; codes are clamped to [-127,
#: 127].
ACT_QMAX = 127

# spec/numerics.md §exp exp: Cody-Waite reduction x = k*ln2 + r with ln2 split into a 15-bit head
# and a tail.
EXP_LOG2E_BITS = 0x3FB8AA3B  # 1.44269502 = fl(1/ln 2)
EXP_LN2_HI_BITS = 0x3F317200  # 0.693145751953125, 15 significant bits: k*hi is exact for |k|<=256
EXP_LN2_LO_BITS = 0x35BFBE8E  # 1.42860677e-06 = fl(ln 2 - hi)
EXP_X_MAX_BITS = 0x42B17217  # 88.7228317: largest x whose exp(x) rounds below FLT_MAX overflow
EXP_X_MIN_BITS = 0xC2CFF1B4  # -103.972076: smallest x whose exp(x) does not round to +0

#: spec/numerics.md §exp Taylor coefficients 1/2!, 1/3!, ..., 1/7! (each the nearest binary32),
#: highest first.
EXP_POLY_BITS = (
    0x39500D01,  # 1/5040
    0x3AB60B61,  # 1/720
    0x3C088889,  # 1/120
    0x3D2AAAAB,  # 1/24
    0x3E2AAAAB,  # 1/6
    0x3F000000,  # 1/2
)

#: spec/numerics.md §cos-sin Guard: the RoPE table evaluation refuses values this close (relative)
#: to a rounding midpoint, instead of silently double-rounding.
ROPE_MIDPOINT_GUARD_EXP2 = -100

#: spec/numerics.md §cos-sin Working precision (bits) of the RoPE table evaluation.
ROPE_WORK_BITS = 192

#: spec/numerics.md §hadamard Elements per Hadamard block (spec/ninfer3.md §use hadamard_signs).
HADAMARD_BLOCK = 1024

#: spec/numerics.md §hadamard The normalisation 1/sqrt(1024) = 2**-5, exact: 0.03125.
HADAMARD_SCALE_BITS = 0x3D000000
