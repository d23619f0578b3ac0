"""Array dumps and their comparison, for `weightfile diff` (spec/numerics.md §dump-diff).

`read` opens what `dump`, `trace`, `run --save-logits` and a board engine write (`.npy`, `.npz`,
safetensors) without trusting a header before the bytes behind it are known to exist; `names`
holds the trace and board naming schemes and the map between them; `compare` compares two arrays
element by element on the ordered float line.
"""
