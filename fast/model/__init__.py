"""The Qwen3 dense decoder on weights in their file encoding, bit for bit equal to ref.model."""
