"""`convert … --hadamard PARAM_GLOB`: which matrices the importer rotates, their seeded signs and
the rotated weights (spec/ninfer3.md §use, §qwen35-hadamard-import; spec/numerics.md §hadamard).

A Use with hadamard_signs `s` computes `W' · H(x)`, `H(x)` the normalised Sylvester transform of
`s ∘ x` per 1024-block. To keep the model's function the importer stores `W' = W · (H D)ᵀ`
(D = diag(s)); H is symmetric, so each row becomes `w'_r = H(s ∘ w_r)`: the same transform applied
to the row, computed here in binary64 (then rounded once, by the parent's codec). Since H·D is
orthogonal, `W' · H(D x) = W · x` exactly in real arithmetic.

Signs belong to a Use *input*: every rotated matrix read at one input shares one signs object,
so an engine rotates each input once. Seed rule, for `--hadamard-seed S` (default 0) and the
input's name `I`: the bytes SHA-256("weightfile-hadamard/{S}/{I}/{j}") for j = 0, 1, 2, …
concatenated; sign i is −1 when bit (i mod 8) of byte ⌊i / 8⌋ is set (least significant bit
first), else +1.
"""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from weightfile.fast.numerics.hadamard import butterflies
from weightfile.spec.errors import InvalidError
from weightfile.spec.ninfer3.text_names import TEXT_PREFIX, TextParameter, text_parameters
from weightfile.spec.numerics.constants import HADAMARD_BLOCK

RULE = "qwen35.import.hadamard"
OUTPUT_HEAD = TEXT_PREFIX + "output_head"


def seeded_signs(seed: int, input_name: str, k: int) -> np.ndarray:
    """The K signs (int8 ±1) of one Use input under the seed rule of this module."""
    stream = bytearray()
    j = 0
    while len(stream) * 8 < k:
        stream += hashlib.sha256(f"weightfile-hadamard/{seed}/{input_name}/{j}".encode()).digest()
        j += 1
    bits = np.unpackbits(np.frombuffer(bytes(stream), dtype=np.uint8), bitorder="little")[:k]
    return np.where(bits == 1, -1, 1).astype(np.int8)


def rotated_inputs(
    config: Mapping[str, Any], globs: Sequence[str], others: Sequence[TextParameter] = ()
) -> dict[str, str]:
    """Parameter name -> the input its Use reads, for every matrix a glob matches (fnmatch on
    the canonical spec/ninfer3.md §qwen35-names names, and on `others`: the vision component's
    spec/ninfer3.md §qwen35-vision-names ones). Each glob must match a matrix, each matched
    matrix have K % 1024 == 0, and a tied output head cannot be rotated (it is the embedding's
    object, read row by row): rule qwen35.import.hadamard otherwise."""
    matrices = [p for p in (*text_parameters(config), *others) if not p.is_direct]
    out: dict[str, str] = {}
    for glob in globs:
        hit = [p for p in matrices if fnmatch.fnmatchcase(p.name, glob)]
        if not hit:
            raise InvalidError(RULE, f"--hadamard {glob!r} matches no matrix parameter", path=glob)
        for p in hit:
            if p.shape[1] % HADAMARD_BLOCK:
                raise InvalidError(
                    RULE,
                    f"{p.name} has K = {p.shape[1]} columns, not a multiple of {HADAMARD_BLOCK}",
                    path=p.name,
                )
            if p.name == OUTPUT_HEAD and config["tie_word_embeddings"]:
                raise InvalidError(
                    RULE, "the output head is tied to the embedding: it cannot be rotated",
                    path=p.name,
                )  # fmt: skip
            (out[p.name],) = p.inputs
    return out


def signs_object_id(input_name: str) -> str:
    """`text/layers/0/mixer_input` -> `h.layers/0/mixer_input`; a vision input keeps its
    component (`h.vision/layers/0/mlp_input`)."""
    return "h." + input_name.removeprefix(TEXT_PREFIX)


def rotate_rows(w: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """`H(s ∘ w_r)` for every row of W [rows, K], in binary64 (the Sylvester transform by
    butterflies, the 2^-5 scale): the stored weights W · (H D)ᵀ."""
    rows, k = w.shape
    y = (np.asarray(w, dtype=np.float64) * signs.astype(np.float64)).reshape(-1, HADAMARD_BLOCK)
    return (butterflies(y) / 32.0).reshape(rows, k)
