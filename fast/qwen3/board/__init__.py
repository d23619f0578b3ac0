"""The Qwen3 family's board model (the `kestrel-board` numerics profile) in the C kernels
(fast/csrc/board.c).

spec/numerics.md §board. `ops` has the same public functions as the reference modules of
`ref.qwen3.board` (quantizers, products, norms, exp/SiLU, RoPE, attention heads) and `model`
the forward on both prompt paths (`FastBoardModel`, `bind_board_fast`), bit for bit equal to the
reference at any thread count.
"""
