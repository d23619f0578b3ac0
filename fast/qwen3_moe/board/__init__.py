"""The kestrel-board profile's Qwen3-MoE model on the C kernels (spec/numerics.md §board-moe)."""
