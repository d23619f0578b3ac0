"""The Qwen3-VL board model on the C kernels (fast/csrc/board_vision.c), bit for bit
ref/qwen3_vl/board (spec/numerics.md §board-vision)."""
