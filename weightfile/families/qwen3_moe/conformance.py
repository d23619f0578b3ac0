"""`vqf-moe-model` cases: tiny version-3 (Qwen3-MoE) VQF files + a prompt -> greedy tokens,
logits, per-op digests and the experts chosen at every token of every layer, under the canonical
numerics (spec/models.md §qwen3-moe-vqf-v3, spec/models.md §qwen3-moe-forward; README "MoE model
cases").

A kind of its own, not `vqf-model`: an engine that runs dense Qwen3 files but not MoE ones
declares `vqf-model` and skips these. The expected answer is the reference decoder
(ref/qwen3_moe) reached through the family registry, exactly as for the dense model cases; the
`fast` adapter answers with fast/qwen3_moe. The files are written by the importer's own
`build_tensors` from seeded transformers-named weights, so the stacking (spec/vqf.md §text-tensors)
is the importer's. One case gives two experts of layer 0 the same router row, so every token's
router logits tie there and the tie rule (the smaller expert index wins) decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.seeded import uniform
from weightfile.families import vqf_family
from weightfile.families.qwen3.conformance import digest, fast_opener, ref_model
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, layer_tensor
from weightfile.families.qwen3.to_vqf import arch_from_config
from weightfile.families.qwen3_moe.hf_names import ATTENTION_FIELDS, expert_tensor, router_tensor
from weightfile.families.qwen3_moe.to_vqf import build_tensors
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.layers.sampling import greedy
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.flags import VQFFlag
from weightfile.spec.vqf.qtypes import QType

#: The tiny Qwen3-MoE of every case (transformers-style; E = 4 experts of 32, top 2, tied output).
MOE_HF: dict[str, Any] = dict(
    vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
    num_key_value_heads=1, head_dim=16, rope_theta=10000.0, rms_norm_eps=1e-6, bos_token_id=0,
    eos_token_id=1, tie_word_embeddings=True, num_experts=4, num_experts_per_tok=2,
    moe_intermediate_size=32, norm_topk_prob=True,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class MoeCase:
    name: str
    meaning: str
    qtype: QType
    layout: str  # "legacy" | "tiled"
    seed: int
    prompt: tuple[int, ...]
    new_tokens: int
    tie: bool = False  # layer 0's experts 1 and 2 share one router row


CASES = (
    MoeCase("q8-untiled", "wmode q8, F16 embedding, untiled, 4 experts top 2", QType.Q8_0,
            "legacy", 31, (2, 17, 33, 5), 4),
    MoeCase("q4-tiled", "wmode q4, Q8_8X8|Q4_4X4 tiling, 4 experts top 2", QType.Q4_0, "tiled",
            32, (7, 7, 40, 63, 0, 12), 3),
    MoeCase("f32-router-tie", "F32 weights; layer 0's experts 1 and 2 have one router row, so "
            "their logits tie at every token (the smaller index wins)", QType.F32, "legacy", 33,
            (9, 50, 3), 3, tie=True),
)  # fmt: skip


def sizes() -> tuple[int, int, int]:
    """(E, k, Ie) of MOE_HF."""
    return MOE_HF["num_experts"], MOE_HF["num_experts_per_tok"], MOE_HF["moe_intermediate_size"]


def state_dict(case: MoeCase) -> dict[str, np.ndarray]:
    """Seeded weights in transformers names (seeded.py, one seed per tensor): norms 1 ± 0.15,
    projections and experts ±0.5, routers ±1, the embedding ±1.75."""
    ne, _, ie = sizes()
    c = config_from_hf({**MOE_HF, "intermediate_size": ne * ie})
    d, q, kv, hd = c.hidden_size, c.q_dim, c.kv_dim, c.head_dim
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "q_norm": (hd,), "k_norm": (hd,),
              "q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d), "o_proj": (d, q)}  # fmt: skip
    base = case.seed * 1000
    sd = {EMBED: uniform(base, (c.vocab_size, d), 1.75)}
    sd[FINAL_NORM] = uniform(base + 1, d, 0.15) + np.float32(1.0)
    at = base + 2
    for i in range(c.num_hidden_layers):
        for f in ATTENTION_FIELDS:
            if f.endswith("norm"):
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.15) + np.float32(1.0)
            else:
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.5)
            at += 1
        router = uniform(at, (ne, d), 1.0)
        at += 1
        if case.tie and i == 0:
            router[2] = router[1]
        sd[router_tensor(i)] = router
        for e in range(ne):
            for role, shape in (("gate", (ie, d)), ("up", (ie, d)), ("down", (d, ie))):
                sd[expert_tensor(i, e, role)] = uniform(at, shape, 0.5)
                at += 1
    return sd


def write_model(path: Path, case: MoeCase) -> Path:
    """The version-3 file of `case`, stacked by the importer's build_tensors."""
    ne, k, ie = sizes()
    c = config_from_hf({**MOE_HF, "intermediate_size": ne * ie})
    flags = file_flags(case.qtype, case.layout) | int(VQFFlag.MOE)
    tensors = build_tensors(state_dict(case), c, ne, ie, case.qtype, flags, REFERENCE)
    arch = {**arch_from_config(MOE_HF, c), "n_experts": ne, "moe_ffn": ie, "top_k": k}
    return write_vqf(path, arch=arch, tensors=tensors, flags=flags)


def run_moe(model: Any, prompt: list[int], new_tokens: int, names: list[str]) -> dict[str, Any]:
    """Prefill (digested by `names`), then greedy decoding one token at a time; every call is
    traced for its chosen experts. `experts[L]` lists, per token in feeding order (the prompt,
    then each fed-back token), the k chosen expert indices ascending, as decimal strings."""
    cache = model.new_cache()
    layers = model.config.num_hidden_layers
    chosen: list[list[list[str]]] = [[] for _ in range(layers)]

    def call(tokens: list[int]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        trace = TraceRecorder()
        logits = np.asarray(model.forward(tokens, cache, trace=trace), dtype=np.float32)
        arrays = trace.arrays()
        for i in range(layers):
            rows = np.atleast_2d(arrays[f"layers.{i}.moe_experts"])
            chosen[i] += [[str(int(e)) for e in row] for row in rows]
        return logits, arrays

    logits, first = call(prompt)
    rows = [logits]
    tokens: list[int] = []
    for step in range(new_tokens):
        nxt = greedy(list(rows[-1][-1]))
        tokens.append(nxt)
        if step + 1 < new_tokens:
            rows.append(call([nxt])[0])
    every = np.concatenate(rows)
    return {
        "tokens": [str(t) for t in tokens],
        "logits": {
            "dtype": "float32",
            "shape": [str(n) for n in every.shape],
            "hex": np.ascontiguousarray(every, dtype="<f4").tobytes().hex(),
        },
        "activations": {name: digest(first[name]) for name in names},
        "experts": [{"layer": str(i), "chosen": chosen[i]} for i in range(layers)],
    }


def answer_model(vqf: VQFFile, model: Any, prompt: list[int], new_tokens: int) -> dict[str, Any]:
    """`run_moe` with the trace names of the file's family."""
    return run_moe(model, prompt, new_tokens, vqf_family(vqf).trace_names(model.config))


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """Run an MoE case with the `ref` or `fast` forward pass (the file stays open meanwhile)."""
    opener: Callable[[VQFFile], Any] | None = ref_model if backend is REFERENCE else fast_opener()
    if opener is None:
        raise RuntimeError("no C kernels")
    with open_vqf(folder / case["model"]) as vqf:
        model = opener(vqf)
        return answer_model(vqf, model, [int(t) for t in case["prompt"]], int(case["new_tokens"]))


def case_answer(backend: Backend, folder: Path) -> dict[str, Any]:
    """The built-in adapter's answer to a `vqf-moe-model` case folder: `answer` on its case.json
    (spec/models.md §qwen3-moe-vqf-v3; the row's builder names it)."""
    return answer(backend, folder, read_case(folder))


def corpus_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every MoE model case."""
    for case in CASES:
        path = write_model(scratch / f"{case.name}.vqf", case)
        fields = {"expect": "accept", "model": "model.vqf",
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "canonical", "description": case.meaning}  # fmt: skip
        with open_vqf(path) as vqf:
            want = answer_model(vqf, ref_model(vqf), list(case.prompt), case.new_tokens)
        yield (
            f"{prefix}/moe-model/qwen3_moe/{case.name}",
            fields,
            {"model.vqf": path.read_bytes()},
            want,
        )
