"""VQF test files: Hypothesis strategies for whole files, and byte patchers that go through the
schemas (so a test breaks exactly the field it names)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from weightfile.conformance.vqf_patch import (  # noqa: F401  (re-exported for the tests)
    insert_zeros,
    patch_bytes,
    patch_entry,
    patch_header,
    read_header,
    refresh_fnv,
)
from weightfile.ref.vqf.write import TensorSource
from weightfile.spec.vqf.arch import ARCH_FIELD_NAMES, MOE_FIELD_NAMES
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.inventory import DIRECTORY_ORDER
from weightfile.spec.vqf.qtypes import QType, tensor_bytes

U32 = st.integers(0, 2**32 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
POSITIVE = st.integers(1, 2**32 - 1)
#: float32 values that survive the binary64 round trip construct makes (no NaN payloads).
F32 = st.floats(width=32, allow_nan=False)
GATED = {"dim", "n_layers", "n_heads", "head_dim", "ffn_dim", "vocab_size"}


@st.composite
def arches(draw: st.DrawFn, *, moe: bool) -> dict[str, Any]:
    """Any arch values the loader's gate accepts; MoE fields only for MoE files (spec/vqf.md
    §legacy-header step 5)."""
    arch: dict[str, Any] = {}
    for name in ARCH_FIELD_NAMES:
        if name in ("rope_theta", "norm_eps"):
            arch[name] = draw(F32)
        elif name in ("vis_ds_idx", "mrope_sections"):
            arch[name] = draw(st.lists(I32, min_size=4, max_size=4))
        elif name in MOE_FIELD_NAMES:
            arch[name] = draw(U32) if moe else 0
        else:
            arch[name] = draw(POSITIVE if name in GATED else U32)
    return arch


NAMES = [k.name for k in DIRECTORY_ORDER] + ["future_tensor", "v_unknown"]


@st.composite
def tensor_sets(draw: st.DrawFn) -> list[TensorSource]:
    """A few tensors with any registered qtype, small shapes and arbitrary payload bytes."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    tensors = []
    for name in names:
        qtype = draw(st.sampled_from(list(QType)))
        low = 0 if tensors else 1  # the first is non-empty: the loader needs file_len > data_offset
        rows, cols = draw(st.integers(low, 9)), draw(st.integers(low, 70))
        data = draw(st.binary(min_size=(n := tensor_bytes(qtype, rows * cols)), max_size=n))
        tensors.append(TensorSource(name, qtype, rows, cols, data))
    return tensors


@st.composite
def vqf_files(draw: st.DrawFn) -> dict[str, Any]:
    """Keyword arguments for write_vqf: both layouts, versions 2 and 3, any non-crypto flags."""
    layout = draw(st.sampled_from(["current", "legacy"]))
    version = 2 if layout == "legacy" else draw(st.sampled_from([2, 3]))
    flags = draw(U32) & ~(VQFFlag.ENC | VQFFlag.SIGNED)
    return {
        "arch": draw(arches(moe=version == 3)),
        "tensors": draw(tensor_sets()),
        "flags": flags,
        "version": version,
        "layout": layout,
        "order": "given",
    }


# -- byte patchers live in weightfile.conformance.vqf_patch (re-exported here) ----------------
def file_fnv(path: Path) -> int:
    return int.from_bytes(Path(path).read_bytes()[-8:], "little")


def sizes_on_disk(path: Path) -> int:
    """Bytes actually allocated (a sparse file allocates far fewer than its size)."""
    return os.stat(path).st_blocks * 512
