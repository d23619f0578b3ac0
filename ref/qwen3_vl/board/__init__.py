"""The Qwen3-VL family's board model: the vision tower under the `kestrel-board` numerics
profile, what the RK3588 Kestrel engine computes (spec/numerics.md §board-vision). The profile
registry (weightfile/profiles.py) names it as the profile's qwen3_vl model.

One idea per module: `tanhf` (aarch64 glibc 2.36's tanhf, emulated), `preprocess` (the engine's
target size, nearest resize and p/127.5 − 1), `ops` (patch convolution, position resampling,
rotary table, LayerNorm, GELU, the F32 merger linears), `linear` (the Q8_0 SDOT linears),
`attention` (the score tree with its dropped products, softmax, output chain), `tower` (the
whole tower in the engine dumps' names) and `model` (the board VL model of the registry).
"""
