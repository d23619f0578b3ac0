"""VQF: what the bytes mean — reader, writer, validator, FNV-1a-64 (vqf.md)."""
