"""Numerics profiles: which rule each operation follows (spec/numerics.md §profiles, §arithmetic).

A profile is declarative: it names, for every operation of the forward pass, the rule that
fixes its float32 operation sequence. `ref.numerics.kernels` turns the canonical profile (with
either quantized-matmul mode) into the functions the family forward passes call; a profile
whose rules are a different sequence of operations (the board's, spec/numerics.md §board) is run
by its own models, which the profile registry `weightfile/profiles.py` names per family.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum


class QuantizedMatmul(Enum):
    """How a Q8_0 / Q4_0 weight matrix meets a float32 activation vector (spec/numerics.md
    §quantized-matmul)."""

    #: spec/numerics.md §q8-activation Engine style: activation quantized per 32-block to Q8_0
    #: codes, exact integer block dots, scaled float32 accumulation over blocks in ascending order.
    Q8_ACTIVATION = "q8_activation"
    #: spec/numerics.md §f32-weights Weights reconstructed to float32 (code * scale, exact), then
    #: the dense dot of spec/numerics.md §lanes8-tree.
    F32_WEIGHTS = "f32_weights"


@dataclass(frozen=True, slots=True)
class NumericsProfile:
    """The rule chosen for every operation; each field value is a rule name in numerics.md."""

    name: str
    dot: str  # spec/numerics.md §lanes8-tree summation order of every dot product / matvec / matmul
    # row
    quantized_matmul: QuantizedMatmul  # spec/numerics.md §quantized-matmul
    activation_rounding: str  # spec/numerics.md §q8-activation rounding of x/d to an integer code
    rmsnorm: str  # spec/numerics.md §rmsnorm
    softmax: str  # spec/numerics.md §softmax
    exp: str  # spec/numerics.md §exp
    silu: str  # spec/numerics.md §silu
    rope_tables: str  # spec/numerics.md §rope
    fma: bool  # spec/numerics.md §arithmetic: False means every multiply and add is rounded
    # separately

    def with_quantized_matmul(self, mode: QuantizedMatmul) -> NumericsProfile:
        """The same profile with the other quantized-weight mode selected (spec/numerics.md
        §quantized-matmul)."""
        return replace(self, quantized_matmul=mode)


#: The canonical profile: every implementation of weightfile reproduces it bit for bit.
CANONICAL = NumericsProfile(
    name="canonical",
    dot="lanes8_tree",
    quantized_matmul=QuantizedMatmul.Q8_ACTIVATION,
    activation_rounding="nearest_even",
    rmsnorm="lanes8_sumsq_div_sqrt",
    softmax="max_exp_lanes8_div",
    exp="cody_waite_taylor7",
    silu="x_div_1_plus_exp",
    rope_tables="correctly_rounded_once",
    fma=False,
)

#: The Kestrel RK3588 board engine's numerics (spec/numerics.md §board): not batch invariant, its
#: rules depend on the phase (prefill or decode), the token's place in its mini-batch and the
#: weight's qtype. Its operations live in the Qwen3 family's board model (`ref/qwen3/board`),
#: which weightfile/profiles.py names; `kernels_for` refuses it (fma=True): the board forward
#: pass is a different sequence of operations.
KESTREL_BOARD = NumericsProfile(
    name="kestrel-board",
    dot="board_kernel_forms",  # spec/numerics.md §board-products, §board-prefill-attention
    quantized_matmul=QuantizedMatmul.Q8_ACTIVATION,
    activation_rounding="trunc_plus_half",  # spec/numerics.md §board-activations
    rmsnorm="tree8_or_sequential_div_sqrt",  # spec/numerics.md §board-rmsnorm
    softmax="online_int8_or_exp_neon4_groups",  # spec/numerics.md §board-attention
    exp="exp_neon4_or_libm_expf",  # spec/numerics.md §board-exp-neon4, §board-c-library
    silu="exp_neon4_frecpe_newton2",  # spec/numerics.md §board-silu
    rope_tables="libm_powf_cosf_sinf_per_call",  # spec/numerics.md §board-rope
    fma=True,
)
