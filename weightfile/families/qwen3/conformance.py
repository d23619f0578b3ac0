"""Model cases: tiny VQF Qwen3 files + prompt token ids -> greedy tokens, logits and per-layer
activation digests under the canonical numerics contract (spec/numerics.md, README "Model
cases"). The file's family, its models and trace names come from the family registry
(weightfile.families); the expected answer is its reference forward pass, and `answer` is also
what the built-in adapters print, with the ref or the fast model.

The `.ninfer` Qwen3.5 cases (`ninfer3-model`, weightfile/families/qwen35/conformance.py) reuse
`run` with their own trace names; the Qwen3-VL, Qwen3-MoE and board cases reuse `digest`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from weightfile.conformance.case_types import Case, read_case
from weightfile.conformance.seeded import uniform
from weightfile.families import vqf_family
from weightfile.families.qwen3.hf import config_from_hf
from weightfile.families.qwen3.hf_names import EMBED, FINAL_NORM, LAYER_TENSORS, layer_tensor
from weightfile.families.qwen3.to_vqf import arch_from_config, build_tensors
from weightfile.fast._native import library
from weightfile.ref.backend import REFERENCE, Backend
from weightfile.ref.layers.sampling import SplitMix64, greedy, sample
from weightfile.ref.layers.trace import TraceRecorder
from weightfile.ref.vqf.encode import file_flags
from weightfile.ref.vqf.read import VQFFile, open_vqf
from weightfile.ref.vqf.write import write_vqf
from weightfile.spec.vqf.qtypes import QType

#: The tiny Qwen3 every model case uses (a transformers-style config).
TINY_HF: dict[str, Any] = dict(
    vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=1, head_dim=16, rope_theta=10000.0,
    rms_norm_eps=1e-6, bos_token_id=0, eos_token_id=1, tie_word_embeddings=True,
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ModelCase:
    name: str
    meaning: str
    qtype: QType
    layout: str  # "legacy" (untiled) or "tiled" (spec/vqf.md §flags tiling flags)
    seed: int
    prompt: tuple[int, ...]
    new_tokens: int
    temperature: float = 0.0  # 0: greedy; else seeded sampling (spec/numerics.md §next-token)
    sample_seed: int = 0  # the SplitMix64 seed of the draws


CASES = (
    ModelCase("q8-untiled", "wmode q8, F16 embedding, untiled", QType.Q8_0, "legacy", 1,
              (2, 17, 33, 5), 4),
    ModelCase("q4-tiled", "wmode q4, Q8_8X8|Q4_4X4 tiling", QType.Q4_0, "tiled", 2,
              (7, 7, 40, 63, 0, 12), 3),
    ModelCase("f32-one-token", "F32 weights, a one-token prompt", QType.F32, "legacy", 3,
              (9,), 5),
)  # fmt: skip


#: Model cases decoded by seeded sampling (corpus vqf/v5): a temperature above 1 and one below,
#: on both weight kinds, long enough that several draws leave the argmax.
SAMPLED = (
    ModelCase("q8-sampled-t1.5", "wmode q8, sampled at temperature 1.5 with seed 20260101",
              QType.Q8_0, "legacy", 1, (2, 17, 33, 5), 8, 1.5, 20260101),
    ModelCase("q4-sampled-t0.7", "wmode q4 tiled, sampled at temperature 0.7 with seed 2^64-1",
              QType.Q4_0, "tiled", 2, (7, 7, 40, 63, 0, 12), 8, 0.7, 2**64 - 1),
)  # fmt: skip


def state_dict(seed: int) -> dict[str, np.ndarray]:
    """Seeded weights in transformers names (seeded.py, one SplitMix64 seed per tensor):
    norms in 1 ± 0.15, projections in ±0.5, the embedding in ±1.75."""
    c = config_from_hf(TINY_HF)
    d, ffn, q, kv = c.hidden_size, c.intermediate_size, c.q_dim, c.kv_dim
    shapes = {"attn_norm": (d,), "ffn_norm": (d,), "q_norm": (c.head_dim,),
              "k_norm": (c.head_dim,), "q_proj": (q, d), "k_proj": (kv, d), "v_proj": (kv, d),
              "o_proj": (d, q), "gate_proj": (ffn, d), "up_proj": (ffn, d),
              "down_proj": (d, ffn)}  # fmt: skip
    base = seed * 1000
    sd = {EMBED: uniform(base, (c.vocab_size, d), 1.75)}
    sd[FINAL_NORM] = uniform(base + 1, d, 0.15) + np.float32(1.0)
    for i in range(c.num_hidden_layers):
        for j, f in enumerate(LAYER_TENSORS):
            at = base + 2 + i * len(LAYER_TENSORS) + j
            if f.endswith("norm"):
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.15) + np.float32(1.0)
            else:
                sd[layer_tensor(i, f)] = uniform(at, shapes[f], 0.5)
    return sd


def write_model(path: Path, case: ModelCase) -> Path:
    c = config_from_hf(TINY_HF)
    flags = file_flags(case.qtype, case.layout)
    tensors = build_tensors(state_dict(case.seed), c, case.qtype, flags)
    return write_vqf(path, arch=arch_from_config(TINY_HF, c), tensors=tensors, flags=flags)


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f4").tobytes()).hexdigest()


def run(
    model: Any,
    prompt: list[int],
    new_tokens: int,
    names: list[str],
    temperature: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Prefill (traced), then decoding one token at a time — greedy, or with `temperature` > 0
    seeded sampling from SplitMix64(`seed`) by the canonical softmax (spec/numerics.md
    §next-token); the protocol's answer. `names` are the trace names to digest (the family's
    table, e.g. spec/models.md §qwen3-forward)."""
    cache = model.new_cache()
    trace = TraceRecorder()
    logits = np.asarray(model.forward(prompt, cache, trace=trace), dtype=np.float32)
    rows = [logits]
    tokens: list[int] = []
    rng = SplitMix64(seed)
    for step in range(new_tokens):
        row = list(rows[-1][-1])
        nxt = greedy(row) if temperature <= 0 else sample(row, temperature, rng, model.kernels)
        tokens.append(nxt)
        if step + 1 < new_tokens:
            rows.append(np.asarray(model.forward([nxt], cache), dtype=np.float32))
    arrays = trace.arrays()
    every = np.concatenate(rows)
    return {
        "tokens": [str(t) for t in tokens],
        "logits": {
            "dtype": "float32",
            "shape": [str(n) for n in every.shape],
            "hex": np.ascontiguousarray(every, dtype="<f4").tobytes().hex(),
        },
        "activations": {name: digest(arrays[name]) for name in names},
    }


def ref_model(vqf: VQFFile) -> Any:
    """The reference model of the file's family."""
    return vqf_family(vqf).reference_model(vqf)


def fast_opener() -> Callable[[VQFFile], Any] | None:
    """The family's fast model at one thread, or None without the C kernels (the fast forward
    pass has no NumPy fallback, and answering with the reference would hide it)."""
    if library() is None:
        return None
    return lambda vqf: vqf_family(vqf).fast_model(vqf, threads=1)


def answer_model(
    vqf: VQFFile,
    model: Any,
    prompt: list[int],
    new_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """`run` with the trace names of the file's family."""
    names = vqf_family(vqf).trace_names(model.config)
    return run(model, prompt, new_tokens, names, temperature, seed)


def answer(backend: Backend, folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """Run a model case with the `ref` or `fast` forward pass (the file stays open meanwhile)."""
    opener = ref_model if backend is REFERENCE else fast_opener()
    if opener is None:
        raise RuntimeError("no C kernels")
    prompt, new_tokens = [int(t) for t in case["prompt"]], int(case["new_tokens"])
    # a sampled case (README "Model cases"): the temperature as a decimal, the seed a u64
    temperature, seed = float(case.get("temperature", "0")), int(case.get("seed", "0"))
    with open_vqf(folder / case["model"]) as vqf:
        return answer_model(vqf, opener(vqf), prompt, new_tokens, temperature, seed)


def case_answer(backend: Backend, folder: Path) -> dict[str, Any]:
    """The built-in adapter's answer to a `vqf-model` case folder: `answer` on its case.json
    (conformance/README.md, "Model cases"; the row's builder names it)."""
    return answer(backend, folder, read_case(folder))


def corpus_cases(
    scratch: Path, prefix: str, cases: tuple[ModelCase, ...] = CASES
) -> Iterator[Case]:
    """(case id, case.json fields, files, want.json) of every VQF model case."""
    for case in cases:
        path = write_model(scratch / f"{case.name}.vqf", case)
        fields = {"expect": "accept", "model": "model.vqf",
                  "prompt": [str(t) for t in case.prompt], "new_tokens": str(case.new_tokens),
                  "numerics": "canonical", "description": case.meaning}  # fmt: skip
        if case.temperature > 0:
            fields |= {"temperature": repr(case.temperature), "seed": str(case.sample_seed)}
        with open_vqf(path) as vqf:
            want = answer_model(vqf, ref_model(vqf), list(case.prompt), case.new_tokens,
                                case.temperature, case.sample_seed)  # fmt: skip
        yield f"{prefix}/model/qwen3/{case.name}", fields, {"model.vqf": path.read_bytes()}, want


def sampled_cases(scratch: Path, prefix: str) -> Iterator[Case]:
    """The seeded-sampling model cases (corpus vqf/v5)."""
    return corpus_cases(scratch, prefix, SAMPLED)
