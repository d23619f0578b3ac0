"""A Qwen3.5 pass's decoder layers as one C call (`wf_q35_forward_layers`,
fast/csrc/qwen35_forward.c; spec/models.md §qwen35-forward) when nothing needs the steps between
them: one sequence, no trace, no verification journal, every FFN dense and every product a
payload matrix read in place (no Hadamard input, no decoded fallback).

The C call runs, per layer, the kernels gdn.py / attention.py / ffn.py call, in their order, on
the same bindings (GdnBinding, AttentionBinding, ProductSet): the same bits
(tests/differential/test_qwen35_fast_eq_ref.py compares the traced and the untraced pass with
the reference). At one token the per-layer Python it replaces cost a few milliseconds a step.
"""

from __future__ import annotations

import ctypes

import numpy as np

from weightfile.fast._native import WfQ35Layer, address
from weightfile.fast.numerics import matrix as numerics_matrix
from weightfile.fast.numerics.matrix import kernels
from weightfile.ref.qwen35.weights import AttentionWeights, MoeWeights

from .attention import AttentionBinding
from .gdn import GdnBinding
from .matrix import NfMatrix, ProductSet


class LayersBinding:
    """Every layer bound for `wf_q35_forward_layers`: `wf_q35_layer` structs (with the ProductSets
    and mixer bindings they point into, kept alive here)."""

    def __init__(self, model) -> None:
        self.keep: list = []
        structs = []
        for i, lw in enumerate(model.weights.layers):
            mixer = model.mixers[i]
            attention = isinstance(mixer, AttentionWeights)
            kind = "attention" if attention else "gdn"
            b = model.bound((i, kind), lambda m=mixer, a=attention: binding(model, m, a))
            ffn = model.bound((i, "ffn"), lambda w=lw.ffn: ProductSet((w.gate, w.up), blocks=True))
            mix_out, down = ProductSet((mixer.output,)), ProductSet((lw.ffn.down,))
            sets = (b.products, mix_out, ffn, down)
            self.keep += [b, *sets]
            structs.append(
                WfQ35Layer(
                    int(attention), b.at, address(model.input_norms[i]),
                    address(model.post_norms[i]), *(ctypes.addressof(s.struct) for s in sets),
                    sum(b.parts), sum(b.parts[:-1]),
                )
            )  # fmt: skip
        self.layers = (WfQ35Layer * len(structs))(*structs)
        self.at, self.count = ctypes.addressof(self.layers), len(structs)


def binding(model, mixer, attention: bool):
    """The mixer's binding, the one gdn.py / attention.py make for the per-layer path."""
    return AttentionBinding(model, mixer) if attention else GdnBinding(model, mixer)


def eligible(model) -> bool:
    """True when every layer can run in `wf_q35_forward_layers`: dense FFNs, every product a
    payload matrix read in place (NfMatrix: no Hadamard input, no decoded fallback)."""
    for i, lw in enumerate(model.weights.layers):
        m = model.mixers[i]
        if isinstance(lw.ffn, MoeWeights):
            return False
        mats = [lw.ffn.gate, lw.ffn.up, lw.ffn.down, m.output]
        if isinstance(m, AttentionWeights):
            mats += [m.query, m.gate, m.key, m.value]
        else:
            mats += [m.query, m.key, m.value, m.z, m.a_projection, m.b_projection]
        if not all(isinstance(w, NfMatrix) for w in mats):
            return False
    return bool(model.weights.layers)


def forward_layers(model, x: np.ndarray, cos, sin, slots, cache) -> np.ndarray:
    """x [T, hidden] (one sequence's embeddings, after cache.length) through every layer: the
    last layer's output; the cache's rows and states written, its length not advanced."""
    bound: LayersBinding = model.bound(("layers",), lambda: LayersBinding(model))
    lib, t, hidden = kernels(), x.shape[0], model.config.hidden_size
    x = np.array(x, dtype=np.float32, order="C")  # written in place
    for store in (cache.conv, cache.recurrent):  # the C call writes them in place
        for i, a in enumerate(store):
            if not a.flags.c_contiguous:
                store[i] = np.ascontiguousarray(a)
    pointers = np.array(
        [[address(a) if a.size else 0 for a in store]
         for store in (cache.conv, cache.recurrent, cache.keys, cache.values)],
        dtype=np.int64,
    )  # fmt: skip
    at = np.ascontiguousarray(slots, dtype=np.int64)
    cos, sin = np.ascontiguousarray(cos, np.float32), np.ascontiguousarray(sin, np.float32)
    scratch = np.empty(
        lib.wf_q35_forward_scratch_floats(bound.at, bound.count, hidden, t), np.float32
    )
    status = lib.wf_q35_forward_layers(
        bound.at, bound.count, hidden, model.eps, address(x), t,
        cos.ctypes.data, sin.ctypes.data, address(at), *(address(p) for p in pointers),
        address(scratch), model.threads, numerics_matrix.MIN_ELEMENTS_PER_THREAD,
    )  # fmt: skip
    if status:
        raise MemoryError("wf_q35_forward_layers: out of memory")
    return x
