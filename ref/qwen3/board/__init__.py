"""The Qwen3 family's board model: the dense decoder under the `kestrel-board` numerics profile,
what the RK3588 Kestrel engine computes (spec/numerics.md §board). The profile registry
(weightfile/profiles.py) names it as the profile's qwen3 model.

One idea per module: `fma` (one-rounding f32 fused multiply-add), `libm` (the C library's
float functions), `quant` (the board's activation, query and KV-cache quantizers), `matmul`
(the Q4_0 / Q8_0 kernels of decode, prefill and the lm_head), `norm` (the three RMSNorm
summation orders), `expsilu` (exp_neon4, the reciprocal estimate, SiLU), `rope`, `attention`
(INT8-KV decode, exact prefill) and `model` (the Qwen3 forward on both prompt paths).
"""
