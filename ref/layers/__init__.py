"""The family-neutral layer library: the pieces every decoder family builds its blocks from.

Each module holds one idea, written as plain functions over a numerics profile's `Kernels`
(spec/numerics.md §profiles), so a family package (`ref/qwen3/`, `ref/qwen35/`, ...) only says how
its layers are wired:

    tokens.py     per-token application of one operation
    heads.py      splitting a vector into heads and joining them back
    batch.py      a batch of requests flattened to tokens and split back; text position ids
    norm.py       RMSNorm variants: plain, per head, zero-centred (1 + w), gated
    attention.py  causal grouped-query attention over per-sequence K/V caches
    swiglu.py     the SwiGLU feed-forward network
    moe.py        mixture-of-experts routing (softmax, top-k, renormalisation) and combine
    trace.py      the trace hook, its recorder and the table-driven emission of trace names
    sampling.py   choosing the next token (greedy, seeded sampling) and generation
"""
