"""Qwen3.5 text (gated attention + Gated DeltaNet) as a textbook, on the canonical numerics
(qwen-math §1.4, ninfer-v3.md §6): `bind_ninfer`, `Qwen35Model`, `weights_from_hf`."""
