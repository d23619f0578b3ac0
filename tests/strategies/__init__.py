"""Hypothesis strategies, one module per thing they draw (vqf files, ninfer directories, blocks)."""
