"""VQF fast path: the same public functions as weightfile.ref.vqf, on the C kernels."""
