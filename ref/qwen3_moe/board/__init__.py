"""The kestrel-board profile's Qwen3-MoE model (spec/numerics.md §board-moe).

ffn.py    the engine's Q8 MoE FFN op by op: router, top-k, softmax over the chosen logits,
          expert products, exact-form SiLU, rank-order combine, the silent refusal
model.py  the dense board model (ref.qwen3.board) with that FFN in every layer
"""
