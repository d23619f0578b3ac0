"""The Qwen3 dense text decoder as a textbook, on the canonical numerics (qwen-math §1.1)."""
