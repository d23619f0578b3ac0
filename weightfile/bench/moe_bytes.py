"""Weight bytes an MoE (version-3) decode step actually reads, averaged over decoded tokens
(issue 17 item 6; spec/vqf.md §text-tensors, spec/models.md §qwen3-moe-vqf-v3).

A dense decode step reads every matrix once (roofline.weight_bytes_per_token). An MoE step reads
the attention matrices, the norms, the whole router (every expert's logit is needed) and the
lm_head once, one embedding row, and of the stacked expert matrices only the bands of the
experts chosen in each layer: expert e's gate and up rows [e·Ie, (e+1)·Ie) and down columns, each
band 1/E of its layer's slice. Which experts a token chooses is read off the decoder's trace
(`layers.L.moe_experts`), so the figure is the traffic of the tokens decoded, not an estimate.

The report wires this in as `moe_roofline` beside `roofline` (weightfile/bench/report.py); the
development target (decode at ≥ 50 % of this roofline on 1 thread) is
benchmarks/targets.py's moe_roofline_target.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weightfile.ref.layers.sampling import greedy
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.vqf.read import VQFFile
from weightfile.spec.vqf.qtypes import tensor_bytes

from .engines import projection_set_of
from .roofline import EMBED, NORMS

ROLES = ("gate", "up", "down")
ROUTER = "moe_router"


def shared_bytes(vqf: VQFFile) -> int:
    """What every decode step reads whatever it routes to: norms, the router, the bound
    family's attention matrices and lm_head, one embedding row."""
    prefix = projection_set_of(vqf) + "_"
    experts = {prefix + r for r in ROLES}
    total = sum(
        e.bytes
        for e in vqf.entries
        if e.name in NORMS or e.name == ROUTER
        or (e.name.startswith(prefix) and e.name not in experts)
    )  # fmt: skip
    embed = next((e for e in vqf.entries if e.name == EMBED), None)
    if embed is not None:
        total += tensor_bytes(embed.qtype, int(vqf.header.arch["dim"]))
    return total


def expert_bytes(vqf: VQFFile) -> int:
    """One expert of one layer: its gate, up and down bands (each stacked tensor / (nl·E))."""
    prefix = projection_set_of(vqf) + "_"
    arch = vqf.header.arch
    bands = int(arch["n_layers"]) * int(arch["n_experts"])
    return sum(e.bytes for e in vqf.entries if e.name in {prefix + r for r in ROLES}) // bands


def bytes_per_token(vqf: VQFFile, chosen: Sequence[Sequence[Sequence[int]]]) -> float:
    """Weight bytes per decoded token averaged over `chosen` (per token, per layer, the experts
    chosen); an expert chosen twice in one layer is read once."""
    if not chosen:
        raise ValueError("no decoded tokens")
    per_expert = expert_bytes(vqf)
    read = sum(len(set(layer)) for token in chosen for layer in token)
    return shared_bytes(vqf) + per_expert * read / len(chosen)


def decoded_experts(model: Any, prompt: list[int], steps: int) -> list[list[list[int]]]:
    """Greedy-decode `steps` tokens after `prompt` and return, for each decode step, each
    layer's chosen experts (from the trace)."""
    cache = model.new_cache()
    layers = model.config.num_hidden_layers
    logits = model.forward(prompt, cache)
    out: list[list[list[int]]] = []
    for _ in range(steps):
        trace = TraceRecorder()
        logits = model.forward([greedy(list(logits[-1]))], cache, trace=trace)
        arrays = trace.arrays()
        out.append([[int(e) for e in arrays[f"layers.{i}.moe_experts"][0]] for i in range(layers)])
    return out


def moe_roofline(
    vqf: VQFFile, chosen: Sequence[Sequence[Sequence[int]]], bytes_per_second: float
) -> dict[str, float]:
    """The report's `moe_roofline` block: bytes read per decoded token (averaged), what reading
    every expert would cost, and the tokens/s bound at `bytes_per_second`."""
    per_token = bytes_per_token(vqf, chosen)
    every = shared_bytes(vqf) + expert_bytes(vqf) * int(vqf.header.arch["n_layers"]) * int(
        vqf.header.arch["n_experts"]
    )
    return {
        "weight_bytes_per_token": per_token,
        "all_experts_bytes_per_token": float(every),
        "decoded_tokens": float(len(chosen)),
        "tokens_per_s": bytes_per_second / per_token,
    }
