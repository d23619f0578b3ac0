"""The fast mirror of `weightfile.ref.numerics` for model weights: matrices kept in their file
encoding with C products (`matrix.py`), and correctly rounded RoPE rows (`rope.py`)."""
